"""A finished run in a notebook: read it, draw it, intervene on it and sweep it, with typed results.

    run = interp.dbg({"n": 20}, "runs/small")   # run (or resume) a DBG run: a RunResult
    run = interp.load_run("runs/demo")          # RunResult: inputs, scores, judgments, attention
    interp.figure7(run)                           # a matplotlib Figure
    interp.head_map(run, "smollm2-135m-judge")    # a matplotlib Figure
    interp.localize(run, "smollm2-135m-judge")    # a DataFrame: every (layer, head) ranked per method
    result = interp.intervene(run, target="self", alpha=0.0)   # InterventionResult
    table = interp.sweep("experiments/ablation_sweep.toml")   # a pandas DataFrame

Each is the CLI's own code (`interp.experiments`, `interp.analysis`, `interp.report`) returning objects
instead of paths; the files the CLI writes are written the same way.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from interp.hooks.spec import KEYS as SPEC_KEYS
from interp.hooks.nodes import as_intervention, node_keys
from interp.hooks.spec import AttentionIntervention
from interp.api.argument_types import check_flag, check_int, check_list, check_number, check_text
from interp.api.judge import Judge
from interp.analysis.attention_stats import head_values
from interp.analysis.attention_stats import figure7_profiles, top_heads
from interp.analysis.attention_store import RunAttention, attention_judges, load_attention
from interp.config import PlacementKeys, RunConfig, SweepConfig, gb_bytes, load_run_config, run_config_from_dict, validate_config
from interp.core.cache_dir import check_cache_root
from interp.core.models import LoadedModel, ModelCache, own_model
from interp.core.placement import placement_of
from interp.errors import InterpError
from interp.experiments.engine import judge_pool
from interp.experiments.causal import intervene_run
from interp.experiments.design import design_from_options, parse_control_judges
from interp.experiments.executor import check_executor
from interp.experiments.sweeps import run_sweep
from interp.report.attention_figures import figure7_grid, head_map_figure
from interp.report.figures import Figure
from interp.results.causal import CausalResult, JudgeTest
from interp.results.summary import RunSummary
from interp.run.pipeline import run_dbg
from interp.run.store import Run, RunDir
from interp.run.store import read_run


@dataclass(frozen=True)
class RunResult:
    """A finished DBG run read back from its directory.

    Attributes:
        run: what every experiment over the run holds fixed: config, items, responses, aggregated gold.
        summary: `summary.json` as a `RunSummary`: per judge win rates, DBG with intervals, position
            consistency, label checks (empty while the run has none).
    """

    run: Run
    summary: RunSummary = field(repr=False)

    @property
    def path(self) -> Path:
        """The run directory."""
        return self.run.dir.root

    @property
    def models(self) -> tuple[str, str]:
        """The two models whose answers are compared."""
        return tuple(self.run.config.models)

    @property
    def judges(self) -> list[str]:
        """The run's judges, in config order."""
        return self.run.config.judge_specs

    def scores(self) -> pd.DataFrame:
        """The summary's per-judge scores as a DataFrame, one row per judge (index: judge)."""
        return pd.DataFrame.from_dict({judge: s.to_json() for judge, s in self.summary.judges.items()}, orient="index").rename_axis("judge")

    def judgments(self, judge: str | None = None) -> pd.DataFrame:
        """Every judgment record (one row per judge, item and order), optionally of one judge."""
        return pd.DataFrame([asdict(record) for record in self.run.dir.read_judgments(judge)])

    def attention(self, judge: str) -> RunAttention:
        """One judge's stored span attention (`mass[item, order, layer, head, span]` and its views)."""
        return load_attention(self.path, _judge_name(judge, self.judges))


def load_run(run_dir: str | Path | RunDir | RunResult) -> RunResult:
    """Read a finished run.

    Args:
        run_dir: the run directory (made by `interp dbg` or `interp demo`).

    Returns:
        The run's inputs and scores.

    Raises:
        InterpError: the folder is not a finished run.
    """
    if isinstance(run_dir, RunResult):
        return run_dir
    run = read_run(_root(run_dir))
    return RunResult(run, run.dir.read_summary() if run.dir.summary.is_file() else RunSummary())


def dbg(config: RunConfig | Mapping[str, Any] | str | Path, out: str | Path, *, progress: bool = True) -> RunResult:
    """Run (or resume) a DBG run: answers, judgments with span attention, gold verdicts, scores.

    Args:
        config: a `RunConfig`, its keys as a dict (`models`, `judges`, `n`, `data`, `imports`, ...; see
            `interp.config.RunConfig`), or a run TOML file (the format `interp dbg` reads). In a dict,
            `models` and `judges` may hold `Judge` objects: each is used as it is (never loaded again) and
            stands in the run under its `name`.
        out: the run directory; a finished step is read back, not redone.
        progress: show progress bars.

    Returns:
        The finished run.

    Raises:
        InterpError: a bad config, or a held judge in another dtype than the run's.
    """
    if not isinstance(config, (RunConfig, Mapping, str, os.PathLike)):
        raise InterpError(f"config must be a RunConfig, a dict of its keys or a run TOML file, not {type(config).__name__}")
    if not isinstance(out, (str, os.PathLike)):
        raise InterpError(f"out must be the run directory (a str or Path), not {type(out).__name__}")
    check_cache_root()  # an INTERP_CACHE that cannot be the cache: one line before the run folder is made
    held: dict[str, LoadedModel] = {}
    if isinstance(config, Mapping):
        keys = dict(config)
        for key in ("models", "judges"):
            if keys.get(key) is not None:
                keys[key] = [_hold(entry, held) for entry in keys[key]]
        config = run_config_from_dict(keys)
    elif not isinstance(config, RunConfig):
        config = load_run_config(Path(config))
    models = ModelCache(placement_of(config))
    for name, model in held.items():
        if model.placement.dtype != models.placement.dtype:
            raise InterpError(
                f"the judge {name} you hold runs in {model.placement.dtype}, the run in {models.placement.dtype}; "
                f"give the run dtype = \"{model.placement.dtype}\" or convert the model"
            )
        models.models[name] = model
    run_dbg(config, Path(out), progress=progress, models=models)
    return load_run(out)


def _hold(entry: Any, held: dict[str, LoadedModel], known: Sequence[str] = ()) -> Any:
    """A judge given as a `Judge`: its name in the run (recorded in `held` with its model); anything else as it is."""
    if not isinstance(entry, Judge):
        return entry
    name = _judge_name(entry, known)
    if entry.own not in (own_model(name), own_model(entry.name)):  # an own= given that the run cannot follow
        raise InterpError(
            f"the judge {name} you hold reads {entry.own!r} as its own answers, but a run reads {own_model(name)!r} "
            "(interp.own_model of its name); wrap it without own= or under the name of the model it judges as"
        )
    if held.get(name, entry.model) is not entry.model:
        raise InterpError(f"two different judges you hold are both named {name!r}; give one another name (Judge.wrap(..., name=))")
    held[name] = entry.model
    return name


def _check_judge(judge: Any) -> None:
    """A judge argument: its name in the run (a string) or a `Judge`."""
    if not isinstance(judge, (str, Judge)):
        raise InterpError(f"judge must be the judge's name in the run (a string) or a Judge, not {type(judge).__name__} {judge!r:.60}")


def _root(run: Any) -> Path:
    """The directory of a run given as a path, `RunDir`, `Run` or `RunResult`."""
    if isinstance(run, RunResult):
        return run.path
    if isinstance(run, Run):
        return run.dir.root
    if isinstance(run, RunDir):
        return run.root
    if isinstance(run, (str, Path)):
        return Path(run)
    raise InterpError(f"a run is a run directory, a RunDir or a loaded run, not {type(run).__name__}")


def _judge_name(judge: Any, known: Sequence[str] = ()) -> str:
    """A judge's name in a run: the name itself, or a `Judge` object's name. A judge loaded from a folder is
    named by the folder's name, a run's judge by the path it was given as: the one run judge with that
    folder name is meant."""
    if isinstance(judge, str):
        return judge
    name = getattr(judge, "name", str(judge))
    matches = [spec for spec in known if Path(spec).name == name]
    return matches[0] if name not in known and len(matches) == 1 else name


def figure7(
    run: Any, *, stat: str = "mean", judges: Sequence[Any] | None = None, relative_depth: bool = False, transpose: bool = False
) -> Figure:
    """Figure 7 of a run: per judge and response author, attention per layer, with their differences.

    Args:
        run: a run directory or a loaded run.
        stat: "mean" (per-token mean, as the paper's Figure 7 reads it) or "mass".
        judges: the judges to draw (default: every judge with stored attention).
        relative_depth: put layers on a 0-1 depth axis (judges of different depths side by side).
        transpose: the paper's layout (rows = authors, columns = judges).

    Returns:
        A matplotlib Figure (save it with `fig.savefig(...)`; a notebook shows it).
    """
    check_text(stat, "stat")
    check_list(judges, "judges", objects=(Judge,))
    check_flag(relative_depth, "relative_depth")
    check_flag(transpose, "transpose")
    root = _root(run)
    known = attention_judges(root)
    names = [_judge_name(judge, known) for judge in judges] if judges is not None else known
    profiles = figure7_profiles(root, stat, relative_depth=relative_depth, judges=names)
    return figure7_grid(profiles, transpose=transpose)


def head_map(run: Any, judge: Any, *, stat: str = "mean", top_k: int = 10, items: Sequence[str] | None = None) -> Figure:
    """A judge's own-minus-other attention per (layer, head), its top heads boxed and listed.

    Args:
        run: a run directory or a loaded run.
        judge: the judge's name in the run, or a `Judge`; its own answers must be one side of the run.
        stat: "mean" (per token) or "mass".
        top_k: how many top heads to box.
        items: item ids to average over (default: every item).

    Returns:
        A matplotlib Figure.
    """
    _check_judge(judge)
    check_text(stat, "stat")
    check_int(top_k, "top_k", minimum=1)
    check_list(items, "items")
    root = _root(run)
    attention = load_attention(root, _judge_name(judge, attention_judges(root)))
    k = min(top_k, attention.n_layers * attention.n_heads)
    values = head_values(attention, stat=stat, items=items)
    heads = top_heads(attention, k=k, stat=stat, items=items)
    return head_map_figure(values.numpy(), attention.judge, heads, stat=stat)


def localize(
    run: Any, judge: Any, methods: Sequence[str] | None = None, *, n_items: int | None = None, n_mask_items: int = 8, progress: bool = True
) -> pd.DataFrame:
    """Rank every (layer, head) by its part in one judge's P(own), with methods that use only that judge.

    Args:
        run: a run directory or a loaded run (judged by `judge`; with attention for the "attention" method).
        judge: the judge's name in the run, or a `Judge`.
        methods: any of "attention", "atp", "atp-output", "mask" (default: the first three; "mask" re-judges
            `n_mask_items` items once per head).
        n_items: AtP on a seeded subset of this many items (default: all).

    Returns:
        A DataFrame with one row per method and head: method, layer, head, score (|effect|, the ranking),
        effect (> 0 favours the own answer), rank (1 = first), single_judge, n_items.
    """
    from interp.experiments.localize import DEFAULT_METHODS, localize_run, run_judge

    _check_judge(judge)
    check_list(methods, "methods")
    check_int(n_items, "n_items", minimum=1, optional=True)
    check_int(n_mask_items, "n_mask_items", minimum=1)
    loaded = read_run(_root(run))
    name = run_judge(loaded, _judge_name(judge, loaded.config.judge_specs))
    return localize_run(loaded, name, methods or DEFAULT_METHODS, n_items=n_items, n_mask_items=n_mask_items, progress=progress)


# ---- interventions -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Effect:
    """A paired change of P(own response wins), mean over instructions, with its bootstrap interval."""

    mean: float
    ci: tuple[float, float]


@dataclass(frozen=True)
class JudgeIntervention:
    """One judge under an intervention and its control judges.

    Attributes:
        judge: the judge.
        causal: the self-preference verdict: True / False from the between-judge test (Holm-adjusted when
            several judges were tested), None when there is none (`reason` says why: fewer than 3 controls).
        reason: why `causal` is None.
        verdict: the verdict in words, with its numbers; it says which claim it makes.
        effects: variant name ("self"; "other", "random" with span controls) -> change of the judge's P(own).
        before: behaviour without the intervention (DBG, win rate, gold agreement).
        after: variant name -> behaviour under it.
        within: the within-judge effect ("changes this judge's verdicts"): mean change of P(own), its interval
            and its sign-flip p.
        p_within: the within-judge sign-flip p.
        p_value: the between-judge p (Crawford-Howell; with random head sets, the larger of it and their rank
            p), raw; None without a between-judge test.
        p_holm: p_value Holm-adjusted over the judges tested together (= p_value for one judge): the
            decision's p; None without a between-judge test.
        test_alpha: the test's level.
        controls: the control judges.
        gap_before, gap_after: the judge's DBG minus the controls' mean DBG, before and under the mask
            (estimate and multi-bootstrap interval).
        share_removed: 1 - gap_after / gap_before with its interval, only where the gap before is significant.
        n_test: test items.
    """

    judge: str
    causal: bool | None
    reason: str | None
    verdict: str
    effects: dict[str, Effect]
    before: dict
    after: dict[str, dict]
    within: Effect
    p_within: float
    p_value: float | None
    p_holm: float | None
    test_alpha: float
    controls: tuple[str, ...]
    gap_before: dict | None
    gap_after: dict | None
    share_removed: dict | None
    n_test: int

    @classmethod
    def of(cls, judge: str, record: JudgeTest) -> "JudgeIntervention":
        """One judge's record of a `CausalResult`, as the notebook reads it."""
        within = record.within_judge
        return cls(
            judge=judge,
            causal=record.causal,
            reason=record.reason,
            verdict=record.verdict,
            effects={name: Effect(e.mean, tuple(e.ci or (None, None))) for name, e in record.effects.items()},
            before=record.before,
            after=record.variants,
            within=Effect(within.effect, tuple(within.ci or (None, None))) if within else Effect(None, (None, None)),
            p_within=within.p_value if within else None,
            p_value=record.p_value,
            p_holm=record.p_holm,
            test_alpha=record.test_alpha,
            controls=tuple(record.control_names),
            gap_before=record.gap_before.to_json() if record.gap_before else None,
            gap_after=record.gap_after.to_json() if record.gap_after else None,
            share_removed=record.share_removed.to_json() if record.share_removed else None,
            n_test=record.n_test,
        )


@dataclass(frozen=True)
class InterventionResult:
    """The causal test of one spec over a run (what `interp intervene` writes to result.json).

    Attributes:
        spec: the intervention.
        run_dir: the run.
        n_items: instructions re-judged.
        backend: the backend the judges ran on.
        judges: judge -> its result.
        result: result.json as the typed `CausalResult` (every number the test wrote, the test included).
    """

    spec: AttentionIntervention
    run_dir: Path
    n_items: int
    backend: str
    judges: dict[str, JudgeIntervention]
    result: CausalResult = field(repr=False)

    @property
    def raw(self) -> dict:
        """result.json as the JSON data written."""
        return self.result.to_json()

    def frame(self) -> pd.DataFrame:
        """One row per judge and variant: effect on P(own), its interval, and the judge's verdict."""
        return pd.DataFrame(
            [
                {"judge": judge, "variant": name, "effect": e.mean, "ci_low": e.ci[0], "ci_high": e.ci[1], "causal": r.causal}
                for judge, r in self.judges.items()
                for name, e in r.effects.items()
            ]
        )


def intervene(
    run: Any,
    /,
    spec: AttentionIntervention | Mapping[str, Any] | str | Path | None = None,
    *,
    all_layers: bool = False,
    top_heads: int | None = None,
    selection_share: float | None = None,
    split_seed: int = 0,
    control_judge: Any = None,
    random_head_sets: int | None = None,
    test_alpha: float = 0.05,
    judges: Sequence[Any] | None = None,
    backend: str | None = None,
    with_controls: bool = False,
    items: Sequence[str] | None = None,
    device: str = "auto",
    progress: bool = True,
    executor: str = "local",
    max_memory: float | None = None,
    **keys: Any,
) -> InterventionResult:
    """The causal test over a run (responses and gold fixed), as `interp intervene` runs it.

    Masks the judge's own answer (`all_layers`, its `top_heads` chosen on a seeded `selection_share` of the
    items, or `spec`), compares the judge's change of P(own) with the spread of at least 3 control judges'
    changes under the same mask of the same answer (Crawford-Howell, df = k - 1; an organism's null family
    by default) and, for chosen heads, with random head sets of the same size (`interp.metrics.judge_level`),
    Holm-adjusted over the judges tested.

    Give exactly one mask: a spec (or its keys), `all_layers`, or `top_heads`. `alpha` is a spec key, the
    mask's strength (0 masks); the test's level is `test_alpha`, as the CLI's `--test-alpha`.

    Args:
        run: a run directory or a loaded run.
        spec: an `AttentionIntervention`, a table of its keys, a TOML file, or leave it out and pass keys.
        all_layers: mask the own answer at every layer and head.
        top_heads: mask the judge's K heads with the largest own-minus-other attention.
        selection_share: share of the items that choose heads; the rest test them.
        split_seed: seed of the selection / test split.
        control_judge: control judges reading the same pairs and writing neither answer, as `judges` takes
            them (names or `Judge` objects), or a comma-separated string ("none" for none; default: for an
            organism, the other null organisms of its base, in the run and shipped). At least 3 for a
            self-preference verdict.
        random_head_sets: random head sets of the same size, for `top_heads` (default: the fewest that can
            reach the test's level after Holm over the tested judges).
        test_alpha: the test's level (`alpha` is the spec's mask strength).
        judges: judges to test, by name in the run or as `Judge` objects (a held judge is used as it is, not
            loaded again); default: every judge whose own answers are in the run.
        backend: "hf", "transformer_lens" or "nnsight" (default: the run's).
        with_controls: also the other-span and random-span masks (descriptive).
        items: split or test on these item ids only.
        device: where the judges run ("cpu", "cuda", "auto", ...).
        progress: show progress bars.
        executor: where the (judge, variant) tasks run: "local" (this process) or "ray" (a Ray cluster,
            `interp.experiments.executor`).
        max_memory: GB of judge models held at once; a control is let go once judged beyond it (default: half
            the memory available).
        **keys: spec keys (`target`, `alpha`, `layers`, `heads`, `queries`, `seed`, `name`, `emphasis`), or a node
            spec's (`site`, `op`, `layers`, `heads`, `positions`, ...: `interp.hooks.nodes`).

    Returns:
        The decision, its numbers and the effects per judge.

    Raises:
        InterpError: no mask or more than one, an unknown keyword, or a bad value.
    """
    check_flag(all_layers, "all_layers")
    check_int(top_heads, "top_heads", minimum=1, optional=True)
    check_number(selection_share, "selection_share", optional=True)
    check_int(split_seed, "split_seed")
    check_int(random_head_sets, "random_head_sets", minimum=0, optional=True)
    check_number(test_alpha, "test_alpha")
    check_list(judges, "judges", objects=(Judge,))
    check_text(backend, "backend", optional=True)
    check_flag(with_controls, "with_controls")
    check_list(items, "items")
    check_text(device, "device")
    check_executor(executor)
    check_number(max_memory, "max_memory", optional=True)
    if max_memory is not None and max_memory < 0:
        raise InterpError(f"max_memory must be at least 0 GB, not {max_memory}")
    check_cache_root()  # an INTERP_CACHE that cannot be the cache: one line before anything is written
    check_mask_choice(spec, keys, all_layers=all_layers, top_heads=top_heads)
    design = design_from_options(
        spec_given=spec is not None or bool(keys),
        all_layers=all_layers,
        top_heads=top_heads,
        control_judge=None,
        selection_share=selection_share,
        split_seed=split_seed,
        random_head_sets=random_head_sets,
        test_alpha=test_alpha,
        span_controls=with_controls,
    )
    spec = as_intervention(spec, **keys) if design.heads == "spec" else None
    root = _root(run)
    known = read_run(root).config.judge_specs
    held: dict[str, LoadedModel] = {}
    names = [_hold(judge, held, known) for judge in judges] if judges is not None else None
    given = [control_judge] if isinstance(control_judge, (str, Judge)) else control_judge
    controls = [_hold(entry, held, known) for entry in given] if given is not None else None
    if controls is not None and not all(isinstance(c, str) for c in controls):
        raise InterpError(f"control_judge takes judges' names or Judge objects, not {', '.join(type(c).__name__ for c in controls if not isinstance(c, str))}")
    design = dataclasses.replace(design, control_judges=parse_control_judges(controls))
    where = PlacementKeys(device=device)
    models = judge_pool(read_run(root), backend, where=where, held=held).models if held else None
    result = intervene_run(
        root, spec, design=design, judges=names, backend=backend, progress=progress, where=where, items=items, models=models,
        executor=executor, max_memory=gb_bytes(max_memory),
    )
    per_judge = {judge: JudgeIntervention.of(judge, record) for judge, record in result.judges.items()}
    return InterventionResult(as_intervention(result.spec), Path(result.run_dir), result.n_items, result.backend, per_judge, result)


def check_mask_choice(spec: Any, keys: Mapping[str, Any], *, all_layers: bool, top_heads: int | None) -> None:
    """Exactly one mask, and every keyword known: nothing the caller passed is dropped without a word."""
    allowed = set(SPEC_KEYS) | set(node_keys(keys.get("op")))
    unknown = sorted(set(keys) - allowed)
    if unknown:
        raise InterpError(
            f"intervene() got unknown keyword {unknown[0]!r}; its own keywords are all_layers, top_heads, selection_share, "
            f"split_seed, control_judge, random_head_sets, test_alpha, judges, backend, with_controls, items, device, progress; "
            f"spec keys are {', '.join(SPEC_KEYS)}; a node spec's are {', '.join(node_keys(keys.get('op')))}"
        )
    chosen = "all_layers=True" if all_layers else f"top_heads={top_heads}" if top_heads is not None else None
    if chosen is None or (spec is None and not keys):
        return
    if "alpha" in keys:
        raise InterpError(
            f"alpha={keys['alpha']} is a spec's mask strength, and {chosen} takes no spec (it masks with alpha 0); "
            "for the test's level pass test_alpha="
        )
    given = "a spec" if spec is not None else f"spec key {sorted(keys)[0]!r}"
    raise InterpError(f"{chosen} chooses the mask itself, so {given} would be dropped; give a spec (or its keys), all_layers or top_heads, one of them")


def sweep(config: SweepConfig | Mapping[str, Any] | str | Path, *, progress: bool = True) -> pd.DataFrame:
    """Run an ablation sweep over a finished run; one row per (judge, point).

    Args:
        config: a sweep TOML file (the format `interp sweep` reads), its keys as a dict, or a `SweepConfig`.
            Keys: `run`, `name`, `judges`, `targets`, `alphas`, `queries`, `all_layers`, `[layers]`
            (`each`, `bands`), `[heads]` (`top_k`, `random_seeds`), `backend`, `device`. In a dict, `judges`
            may hold `Judge` objects: each is used as it is, never loaded again.
        progress: show a progress bar.

    Returns:
        The sweep's table (also written to `RUN/sweeps/<name>-<key>/results.csv`, plots beside it; the
        path is in `frame.attrs["path"]`). A killed sweep resumes where it stopped.
    """
    if not isinstance(config, (SweepConfig, Mapping, str, os.PathLike)):
        raise InterpError(f"config must be a SweepConfig, a dict of its keys or a sweep TOML file, not {type(config).__name__}")
    check_cache_root()  # an INTERP_CACHE that cannot be the cache: one line before anything is written
    held: dict[str, LoadedModel] = {}
    if isinstance(config, Mapping):
        keys = dict(config)
        if keys.get("judges") is not None and "run" in keys:
            known = read_run(_root(keys["run"])).config.judge_specs
            keys["judges"] = [_hold(judge, held, known) for judge in keys["judges"]]
        if isinstance(keys.get("run"), (RunResult, Run, RunDir)):
            keys["run"] = str(_root(keys["run"]))
        config = validate_config(SweepConfig, keys, "sweep config")
    models = None
    if held:
        models = judge_pool(read_run(Path(config.run)), config.backend, where=config, held=held).models
    path = run_sweep(config if isinstance(config, SweepConfig) else Path(config), progress=progress, models=models)
    frame = pd.read_csv(path)
    frame.attrs["path"] = path
    return frame
