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

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from hooks.spec import AttentionIntervention, as_spec
from interp.analysis.attention_stats import head_map as head_values
from interp.analysis.attention_stats import figure7_profiles, top_heads
from interp.analysis.attention_store import RunAttention, attention_judges, load_attention
from interp.config import PlacementKeys, RunConfig, SweepConfig, load_run_config, run_config_from_dict, validate_config
from interp.errors import InterpError
from interp.experiments.causal import intervene_run, design_from_options
from interp.experiments.sweeps import run_sweep
from interp.report.attention import figure7_grid, head_map_figure
from interp.report.figures import Figure
from interp.run.pipeline import run_dbg
from interp.run.store import Run, RunDir
from interp.run.store import load_run as load_run_inputs


@dataclass(frozen=True)
class RunResult:
    """A finished DBG run read back from its directory.

    Attributes:
        run: what every experiment over the run holds fixed: config, items, responses, aggregated gold.
        summary: `summary.json`: per judge win rates, DBG with intervals, position consistency, label
            checks ({} while the run has none).
    """

    run: Run
    summary: dict = field(repr=False)

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
        return pd.DataFrame.from_dict(self.summary.get("judges", {}), orient="index").rename_axis("judge")

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
    run = load_run_inputs(_root(run_dir))
    return RunResult(run, run.dir.read_summary() if run.dir.summary.is_file() else {})


def dbg(config: RunConfig | Mapping[str, Any] | str | Path, out: str | Path, *, progress: bool = True) -> RunResult:
    """Run (or resume) a DBG run: answers, judgments with span attention, gold verdicts, scores.

    Args:
        config: a `RunConfig`, its keys as a dict (`models`, `judges`, `n`, `data`, `imports`, ...; see
            `interp.config.RunConfig`), or a run TOML file (the format `interp dbg` reads).
        out: the run directory; a finished step is read back, not redone.
        progress: show progress bars.

    Returns:
        The finished run.
    """
    if isinstance(config, Mapping):
        config = run_config_from_dict(dict(config))
    elif not isinstance(config, RunConfig):
        config = load_run_config(Path(config))
    run_dbg(config, Path(out), progress=progress)
    return load_run(out)


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

    loaded = load_run_inputs(_root(run))
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
    """One judge under an intervention and its controls.

    Attributes:
        judge: the judge.
        causal: the test's decision (p_value <= alpha; Holm-adjusted when several judges were tested).
        verdict: the verdict in words, with its numbers.
        effects: variant name ("self"; "other", "random" with span controls) -> change of the judge's P(own).
        before: behaviour without the intervention (DBG, win rate, gold agreement).
        after: variant name -> behaviour under it.
        p_value: the decision's p-value (see `interp.metrics.causal_test`).
        alpha: the test's level.
        effect: the tested contrast (the judge's change minus the control judge's), with its interval.
        control_judge: the control judge, or None for a test within the judge.
        n_test: test items.
    """

    judge: str
    causal: bool
    verdict: str
    effects: dict[str, Effect]
    before: dict
    after: dict[str, dict]
    p_value: float
    alpha: float
    effect: Effect
    control_judge: str | None
    n_test: int


@dataclass(frozen=True)
class InterventionResult:
    """The causal test of one spec over a run (what `interp intervene` writes to result.json).

    Attributes:
        spec: the intervention.
        run_dir: the run.
        n_items: instructions re-judged.
        backend: the backend the judges ran on.
        judges: judge -> its result.
        raw: result.json as a dict.
    """

    spec: AttentionIntervention
    run_dir: Path
    n_items: int
    backend: str
    judges: dict[str, JudgeIntervention]
    raw: dict = field(repr=False)

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
    spec: AttentionIntervention | Mapping[str, Any] | str | Path | None = None,
    /,
    *,
    all_layers: bool = False,
    top_heads: int | None = None,
    selection_share: float | None = None,
    split_seed: int = 0,
    control_judge: str | None = None,
    random_head_sets: int = 19,
    test_alpha: float = 0.05,
    judges: Sequence[Any] | None = None,
    backend: str | None = None,
    with_controls: bool = False,
    items: Sequence[str] | None = None,
    device: str = "auto",
    progress: bool = True,
    **keys: Any,
) -> InterventionResult:
    """The causal test over a run (responses and gold fixed), as `interp intervene` runs it.

    Masks the judge's own answer (`all_layers`, its `top_heads` chosen on a seeded `selection_share` of the
    items, or `spec`), compares the change of P(own) with a control judge's under the same mask
    (difference in differences; an organism's counterpart by default) and, for chosen heads, with random
    head sets of the same size; decides with a two-sided sign-flip test (`interp.metrics.causal_test`).

    Args:
        run: a run directory or a loaded run.
        spec: an `AttentionIntervention`, a table of its keys, a TOML file, or leave it out and pass keys.
        all_layers: mask the own answer at every layer and head.
        top_heads: mask the judge's K heads with the largest own-minus-other attention.
        selection_share: share of the items that choose heads; the rest test them.
        split_seed: seed of the selection / test split.
        control_judge: a judge reading the same pairs ("" for none; default: an organism's counterpart).
        random_head_sets: random head sets of the same size, for `top_heads`.
        test_alpha: the test's level (`alpha` is the spec's mask strength).
        judges: judges to test (default: every judge whose own answers are in the run).
        backend: "hf", "transformer_lens" or "nnsight" (default: the run's).
        with_controls: also the other-span and random-span masks (descriptive).
        items: split or test on these item ids only.
        device: where the judges run ("cpu", "cuda", "auto", ...).
        progress: show progress bars.
        **keys: spec keys (`target`, `alpha`, `layers`, `heads`, `queries`, `seed`, `name`).

    Returns:
        The decision, its numbers and the effects per judge.
    """
    design = design_from_options(
        spec_given=not all_layers and top_heads is None,
        all_layers=all_layers,
        top_heads=top_heads,
        control_judge=control_judge,
        selection_share=selection_share,
        split_seed=split_seed,
        random_head_sets=random_head_sets,
        alpha=test_alpha,
        span_controls=with_controls,
    )
    spec = as_spec(spec, **keys) if design.heads == "spec" else None
    root = _root(run)
    known = load_run_inputs(root).config.judge_specs
    result = intervene_run(
        root,
        spec,
        design=design,
        judges=[_judge_name(judge, known) for judge in judges] if judges is not None else None,
        backend=backend,
        progress=progress,
        where=PlacementKeys(device=device),
        items=items,
    )
    per_judge = {
        judge: JudgeIntervention(
            judge=judge,
            causal=bool(record["causal"]),
            verdict=record["verdict"],
            effects={name: Effect(e["mean"], tuple(e["ci"])) for name, e in record["effects"].items()},
            before=record["before"],
            after=record["variants"],
            p_value=record["p_value"],
            alpha=record["alpha"],
            effect=Effect(record["effect"]["mean"], tuple(record["effect"]["ci"])),
            control_judge=record["test"]["control_judge"],
            n_test=record["n_test"],
        )
        for judge, record in result["judges"].items()
    }
    return InterventionResult(as_spec(result["spec"]), Path(result["run_dir"]), result["n_items"], result["backend"], per_judge, result)


def sweep(config: SweepConfig | Mapping[str, Any] | str | Path, *, progress: bool = True) -> pd.DataFrame:
    """Run an ablation sweep over a finished run; one row per (judge, point).

    Args:
        config: a sweep TOML file (the format `interp sweep` reads), its keys as a dict, or a `SweepConfig`.
            Keys: `run`, `name`, `judges`, `targets`, `alphas`, `queries`, `all_layers`, `[layers]`
            (`each`, `bands`), `[heads]` (`top_k`, `random_seeds`), `backend`, `device`.
        progress: show a progress bar.

    Returns:
        The sweep's table (also written to `RUN/sweeps/<name>-<key>/results.csv`, plots beside it; the
        path is in `frame.attrs["path"]`). A killed sweep resumes where it stopped.
    """
    if isinstance(config, Mapping):
        config = validate_config(SweepConfig, dict(config), "sweep config")
    path = run_sweep(config if isinstance(config, SweepConfig) else Path(config), progress=progress)
    frame = pd.read_csv(path)
    frame.attrs["path"] = path
    return frame
