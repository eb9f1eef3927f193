"""A finished run in a notebook: read it, draw it, intervene on it and sweep it, with typed results.

    run = interp.dbg({"n": 20}, "runs/small")   # run (or resume) a DBG run: a RunResult
    run = interp.load_run("runs/demo")          # RunResult: inputs, scores, judgments, attention
    interp.figure7(run)                           # a matplotlib Figure
    interp.head_map(run, "smollm2-135m-judge")    # a matplotlib Figure
    interp.localize(run, "smollm2-135m-judge")    # a DataFrame: every (layer, head) ranked per method
    result = interp.intervene(run, target="self", alpha=0.0)   # InterventionResult (interp.api.interventions)
    table = interp.sweep("experiments/configs/ablation_sweep.toml")   # a pandas DataFrame

Each is the CLI's own code (`interp.studies`, `interp.analysis`, `interp.report`) returning objects
instead of paths; the files the CLI writes are written the same way.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from interp.analysis.attention_stats import figure7_profiles, head_values, top_heads
from interp.analysis.attention_store import RunAttention, attention_judges, load_attention
from interp.api.argument_types import check_flag, check_int, check_list, check_text
from interp.api.judge import Judge
from interp.config import RunConfig, SweepConfig, load_run_config, run_config_from_dict, validate_config
from interp.core.cache_dir import check_cache_root
from interp.core.models import ModelCache, own_model
from interp.core.placement import placement_of
from interp.engine.judges import HeldJudge
from interp.errors import InterpError
from interp.report.attention_figures import figure7_grid, head_map_figure
from interp.report.figures import Figure
from interp.results.summary import RunSummary
from interp.run.pipeline import run_dbg
from interp.run.store import Run, RunDir, read_run
from interp.studies.sweeps import run_sweep


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
        return pd.DataFrame.from_dict(
            {judge: s.to_json() for judge, s in self.summary.judges.items()}, orient="index"
        ).rename_axis("judge")

    def judgments(self, judge: str | None = None) -> pd.DataFrame:
        """Every judgment record (one row per judge, item and order), optionally of one judge."""
        return pd.DataFrame([asdict(record) for record in self.run.dir.read_judgments(judge)])

    def attention(self, judge: str) -> RunAttention:
        """One judge's stored span attention (`mass[item, order, layer, head, span]` and its views)."""
        return load_attention(self.path, _judge_name(judge, self.judges))


def load_run(run_dir: str | Path | RunDir | RunResult) -> RunResult:
    """Read a finished run.

    >>> run = interp.load_run(run_dir)
    >>> run.models[1], len(run.judgments())
    ('writer-y', 4)

    Args:
        run_dir: the run directory (made by `interp dbg` or `interp demo`).

    Returns:
        The run's inputs and scores.

    Raises:
        InterpError: the folder is not a finished run.
    """
    if isinstance(run_dir, RunResult):
        return run_dir
    run = read_run(run_root(run_dir))
    return RunResult(run, run.dir.read_summary() if run.dir.summary.is_file() else RunSummary())


def dbg(config: RunConfig | Mapping[str, Any] | str | Path, out: str | Path, *, progress: bool = True) -> RunResult:
    """Run (or resume) a DBG run: answers, judgments with span attention, gold verdicts, scores.

    >>> config = {"models": ["smollm2-135m-instruct", "gemma3-270m"], "judges": ["smollm2-135m-instruct"], "n": 8}
    >>> run = interp.dbg(config, "runs/small")  # doctest: +SKIP
    >>> run.scores()["dbg_hard"]  # doctest: +SKIP

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
        raise InterpError(
            f"config must be a RunConfig, a dict of its keys or a run TOML file, not {type(config).__name__}"
        )
    if not isinstance(out, (str, os.PathLike)):
        raise InterpError(f"out must be the run directory (a str or Path), not {type(out).__name__}")
    check_cache_root()  # an INTERP_CACHE that cannot be the cache: one line before the run folder is made
    held: dict[str, Judge] = {}
    if isinstance(config, Mapping):
        keys = dict(config)
        for key in ("models", "judges"):
            if keys.get(key) is not None:
                keys[key] = [hold_judge(entry, held) for entry in keys[key]]
        refuse_opened(held, "interp.dbg")
        config = run_config_from_dict(keys)
    elif not isinstance(config, RunConfig):
        config = load_run_config(Path(config))
    models = ModelCache(placement_of(config))
    for name, model in ((name, judge.model) for name, judge in held.items()):
        if model.placement.dtype != models.placement.dtype:
            raise InterpError(
                f"the judge {name} you hold runs in {model.placement.dtype}, the run in {models.placement.dtype}; "
                f'give the run dtype = "{model.placement.dtype}" or convert the model'
            )
        models.models[name] = model
    run_dbg(config, Path(out), progress=progress, models=models)
    return load_run(out)


def hold_judge(entry: Any, held: dict[str, Judge], known: Sequence[str] = ()) -> Any:
    """A judge given as a `Judge`: its name in the run (recorded in `held` with the Judge); anything else as it is."""
    if not isinstance(entry, Judge):
        return entry
    name = _judge_name(entry, known)
    if entry.own not in (own_model(name), own_model(entry.name)):  # an own= given that the run cannot follow
        raise InterpError(
            f"the judge {name} you hold reads {entry.own!r} as its own answers, but a run reads {own_model(name)!r} "
            "(interp.own_model of its name); wrap it without own= or under the name of the model it judges as"
        )
    other = held.get(name, entry)
    if other.model is not entry.model or _opened_identity(other) != _opened_identity(entry):
        raise InterpError(
            f"two different judges you hold are both named {name!r} (another model, or other open applying/hooks "
            "blocks); give one another name (Judge.wrap(..., name=))"
        )
    held[name] = entry
    return name


def _opened_identity(judge: Judge) -> list:
    return [edit.identity() for edit in judge.opened]


def held_judges(held: Mapping[str, Judge]) -> dict[str, HeldJudge]:
    """The Judges a study was handed, as the engine's pool holds them: model, backend and open blocks."""
    return {name: HeldJudge(judge.model, judge.backend, judge.opened) for name, judge in held.items()}


def refuse_opened(held: Mapping[str, Judge], study: str) -> None:
    """A study that cannot run a held Judge's open blocks refuses it in one line (never ignores them)."""
    for name, judge in held.items():
        if judge.opened:
            labels = ", ".join(edit.label for edit in judge.opened)
            raise InterpError(
                f"{study} judges with the plain model, so the open blocks of the judge {name} you hold ({labels}) "
                "would be ignored: leave the blocks, or hand the Judge to interp.intervene or interp.sweep, which "
                "run them"
            )


def _check_judge(judge: Any) -> None:
    """A judge argument: its name in the run (a string) or a `Judge`."""
    if not isinstance(judge, (str, Judge)):
        raise InterpError(
            f"judge must be the judge's name in the run (a string) or a Judge, not {type(judge).__name__} {judge!r:.60}"
        )


def run_root(run: Any) -> Path:
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
    run: Any,
    *,
    stat: str = "mean",
    judges: Sequence[Any] | None = None,
    relative_depth: bool = False,
    transpose: bool = False,
) -> Figure:
    """Figure 7 of a run: per judge and response author, attention per layer, with their differences.

    >>> figure = interp.figure7(run_dir)
    >>> figure.savefig("figure7.png")

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
    root = run_root(run)
    known = attention_judges(root)
    names = [_judge_name(judge, known) for judge in judges] if judges is not None else known
    profiles = figure7_profiles(root, stat, relative_depth=relative_depth, judges=names)
    return figure7_grid(profiles, transpose=transpose)


def head_map(
    run: Any, judge: Any, *, stat: str = "mean", top_k: int = 10, items: Sequence[str] | None = None
) -> Figure:
    """A judge's own-minus-other attention per (layer, head), its top heads boxed and listed.

    >>> judge_name = interp.load_run(run_dir).judges[0]
    >>> interp.head_map(run_dir, judge_name, top_k=3).savefig("heads.png")

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
    root = run_root(run)
    attention = load_attention(root, _judge_name(judge, attention_judges(root)))
    k = min(top_k, attention.n_layers * attention.n_heads)
    values = head_values(attention, stat=stat, items=items)
    heads = top_heads(attention, k=k, stat=stat, items=items)
    return head_map_figure(values.numpy(), attention.judge, heads, stat=stat)


def localize(
    run: Any,
    judge: Any,
    methods: Sequence[str] | None = None,
    *,
    n_items: int | None = None,
    n_mask_items: int = 8,
    progress: bool = True,
) -> pd.DataFrame:
    """Rank every (layer, head) by its part in one judge's P(own), with methods that use only that judge.

    >>> judge_name = interp.load_run(run_dir).judges[0]
    >>> table = interp.localize(run_dir, judge_name, methods=["attention"])
    >>> sorted(table["method"].unique()), int(table["rank"].min())
    (['attention'], 1)

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
    from interp.locate.heads import DEFAULT_METHODS, LocalizeItems, localize_run, run_judge

    _check_judge(judge)
    check_list(methods, "methods")
    check_int(n_items, "n_items", minimum=1, optional=True)
    check_int(n_mask_items, "n_mask_items", minimum=1)
    if isinstance(judge, Judge):  # localisation reads the plain model: a Judge's open blocks would be ignored
        refuse_opened({judge.name: judge}, "interp.localize")
    loaded = read_run(run_root(run))
    name = run_judge(loaded, _judge_name(judge, loaded.config.judge_specs))
    on = LocalizeItems(n_items=n_items, n_mask_items=n_mask_items)
    return localize_run(loaded, name, methods or DEFAULT_METHODS, on=on, progress=progress)


def sweep(config: SweepConfig | Mapping[str, Any] | str | Path, *, progress: bool = True) -> pd.DataFrame:
    """Run an ablation sweep over a finished run; one row per (judge, point).

    >>> config = {"run": str(run_dir), "name": "alphas", "alphas": [0.0, 0.5], "targets": ["self"]}
    >>> sorted(config)
    ['alphas', 'name', 'run', 'targets']
    >>> table = interp.sweep(config)  # doctest: +SKIP
    >>> table[["judge", "effect"]].head()  # doctest: +SKIP

    Args:
        config: a sweep TOML file (the format `interp sweep` reads), its keys as a dict, or a `SweepConfig`.
            Keys: `run`, `name`, `judges`, `targets`, `alphas`, `queries`, `all_layers`, `[layers]`
            (`each`, `bands`), `[heads]` (`top_k`, `random_seeds`), `backend`, `device`. In a dict, `judges`
            may hold `Judge` objects: each is used as it is, never loaded again, its backend and open `applying`
            and `hooks` blocks run in every judgment (its own folder and keys, as for `interp.intervene`).
        progress: show a progress bar.

    Returns:
        The sweep's table (also written to `RUN/sweeps/<name>-<key>/results.csv`, plots beside it; the
        path is in `frame.attrs["path"]`). A killed sweep resumes where it stopped.
    """
    if not isinstance(config, (SweepConfig, Mapping, str, os.PathLike)):
        raise InterpError(
            f"config must be a SweepConfig, a dict of its keys or a sweep TOML file, not {type(config).__name__}"
        )
    check_cache_root()  # an INTERP_CACHE that cannot be the cache: one line before anything is written
    held: dict[str, Judge] = {}
    if isinstance(config, Mapping):
        keys = dict(config)
        if keys.get("judges") is not None and "run" in keys:
            known = read_run(run_root(keys["run"])).config.judge_specs
            keys["judges"] = [hold_judge(judge, held, known) for judge in keys["judges"]]
        if isinstance(keys.get("run"), (RunResult, Run, RunDir)):
            keys["run"] = str(run_root(keys["run"]))
        config = validate_config(SweepConfig, keys, "sweep config")
    path = run_sweep(
        config if isinstance(config, SweepConfig) else Path(config), progress=progress, held=held_judges(held) or None
    )
    frame = pd.read_csv(path)
    frame.attrs["path"] = path
    return frame
