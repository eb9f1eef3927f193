"""The Python API over a run's stored span attention (DESIGN.md section 3; DBG paper seed 000, Figure 7).

A DBG run stores, per judge, `attention/<judge>.safetensors` with `mass [item, order, layer, head, span]`
(span order a, b) and `span_tokens [item, order, span]`, plus `attention/<judge>.json`, an index with the
items, the author of each slot per order, token spans and the tokenizer fingerprint (interp.runs). This
module reads them back and turns them into the views the paper and the head exploration need:

- `load_attention(run_dir, judge)` -> `RunAttention`; author-aligned views (`by_author`, `own`, `other`).
- `figure7_profiles(run_dir)`: per judge x response author, the per-layer profile (mean over heads, both
  orders and instructions; per-token mean by default, as Figure 7 reads it; `stat="mass"` for the mass),
  with the author difference per judge and the judge difference per author.
- `head_map` / `top_heads`: own-minus-other per (layer, head); the entry point for head exploration and
  for choosing heads to intervene on.
- `layer_differences`: per-layer own-minus-other with bootstrap intervals over instructions.
- `length_table` / `length_regression`: attention difference vs token-length difference (a longer
  response collects more mass by construction), with an OLS fit per judge.
- `prompt_token_attention`: re-runs one judgment (same prompt building and `judge_batch` as the run) and
  returns one head's attention over every prompt token, plus the span masses of that pass.

Everything returns tensors or pandas DataFrames; nothing is cached between calls.
"""

from __future__ import annotations

import html
import json
import math
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float
from torch import Tensor

from interp.attention import per_token_mean
from interp.errors import InterpError
from interp.runs import ORDERS, RunPaths, safe_name, tokenizer_fingerprint
from interp.storage import read_jsonl

Stat = Literal["mean", "mass"]
STATS: tuple[str, ...] = ("mean", "mass")


# ---- loading ---------------------------------------------------------------------------------------


@dataclass
class RunAttention:
    """One judge's span attention over a run.

    `mass[i, o, l, h, s]`: attention mass from the query set onto span s (0 = slot A, 1 = slot B) for item
    i in order o (`ORDERS`: "ab" = models[0]'s response in slot A, "ba" = swapped); `mean` is `mass / |S|`
    (NaN for an empty span); `span_tokens[i, o, s]` = |S|. `models` are the run's two response authors.
    """

    judge: str
    models: tuple[str, str]
    mass: Float[Tensor, "item order layer head span"]
    span_tokens: Float[Tensor, "item order span"]
    index: dict
    mean: Float[Tensor, "item order layer head span"] = field(default=None)  # type: ignore[assignment]
    run_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.mean is None:
            self.mean = per_token_mean_items(self.mass, self.span_tokens)

    # -- shape ---------------------------------------------------------------------------------------

    @property
    def n_items(self) -> int:
        return self.mass.shape[0]

    @property
    def n_layers(self) -> int:
        return self.mass.shape[2]

    @property
    def n_heads(self) -> int:
        return self.mass.shape[3]

    @property
    def item_ids(self) -> list[str]:
        return [entry["item_id"] for entry in self.index["items"]]

    @property
    def tasks(self) -> list[str]:
        return [entry.get("task", "") for entry in self.index["items"]]

    @property
    def queries(self) -> str:
        return self.index.get("queries", "final")

    @property
    def fingerprint(self) -> str | None:
        return self.index.get("tokenizer")

    def depth(self, relative: bool = False) -> np.ndarray:
        """The layer axis: 0..L-1, or relative depth layer / (L - 1) in [0, 1]."""
        return layer_axis(self.n_layers, relative)

    def values(self, stat: Stat = "mean") -> Float[Tensor, "item order layer head span"]:
        if stat == "mean":
            return self.mean
        if stat == "mass":
            return self.mass
        raise InterpError(f"unknown attention statistic {stat!r}; use 'mean' (per token) or 'mass'")

    # -- author alignment ----------------------------------------------------------------------------

    @property
    def author_slots(self) -> torch.Tensor:
        """`[item, order, author]`: which span (0 = a, 1 = b) holds models[k]'s response."""
        return author_slots(self.index, self.models)

    def by_author(self, stat: Stat = "mean") -> Float[Tensor, "item order layer head author"]:
        """Attention to each author's response, author axis in `models` order."""
        values = self.values(stat)
        slots = self.author_slots[:, :, None, None, :].expand(*values.shape[:4], 2)
        return torch.gather(values, -1, slots)

    def author_tokens(self) -> Float[Tensor, "item order author"]:
        return torch.gather(self.span_tokens, -1, self.author_slots)

    @property
    def own_author(self) -> int:
        """Index in `models` of the judge's own responses."""
        if self.judge not in self.models:
            raise InterpError(
                f"judge {self.judge!r} is not one of the run's response authors ({', '.join(self.models)}); "
                "own/other attention is only defined for a judge that also answered"
            )
        return self.models.index(self.judge)

    def own(self, stat: Stat = "mean") -> Float[Tensor, "item order layer head"]:
        return self.by_author(stat)[..., self.own_author]

    def other(self, stat: Stat = "mean") -> Float[Tensor, "item order layer head"]:
        return self.by_author(stat)[..., 1 - self.own_author]

    def own_minus_other(self, stat: Stat = "mean") -> Float[Tensor, "item order layer head"]:
        return self.own(stat) - self.other(stat)

    def own_tokens(self) -> Float[Tensor, "item order"]:
        return self.author_tokens()[..., self.own_author]

    def other_tokens(self) -> Float[Tensor, "item order"]:
        return self.author_tokens()[..., 1 - self.own_author]


def per_token_mean_items(mass: Tensor, span_tokens: Tensor) -> Tensor:
    """`per_token_mean` over `[item, order, ...]` arrays (NaN for an empty span)."""
    items, orders = mass.shape[:2]
    flat = per_token_mean(mass.reshape(items * orders, *mass.shape[2:]), span_tokens.reshape(items * orders, -1))
    return flat.reshape(mass.shape)


def layer_axis(n_layers: int, relative: bool = False) -> np.ndarray:
    layers = np.arange(n_layers, dtype=float)
    if not relative:
        return layers
    return layers / (n_layers - 1) if n_layers > 1 else np.zeros(1)


def author_slots(index: dict, models: Sequence[str]) -> torch.Tensor:
    """`[item, order, author]` span index of each author's response, read from the index's slot authors."""
    models = tuple(models)
    out = torch.zeros(len(index["items"]), len(ORDERS), len(models), dtype=torch.long)
    for i, entry in enumerate(index["items"]):
        for o, order in enumerate(ORDERS):
            slots = entry["orders"][order]
            authors = (slots["model_a"], slots["model_b"])
            if authors[0] == authors[1] or set(authors) != set(models):
                raise InterpError(
                    f"attention index, item {entry['item_id']!r} order {order}: slot authors {authors} do not match "
                    f"the run's models {models}"
                )
            for k, model in enumerate(models):
                out[i, o, k] = authors.index(model)
    return out


def _check_run_dir(run_dir: Path) -> RunPaths:
    paths = RunPaths(Path(run_dir))
    if not paths.root.is_dir():
        raise InterpError(f"run directory {paths.root} not found")
    if not paths.judgments.is_file() or not paths.judgments.stat().st_size:
        raise InterpError(f"run directory {paths.root} has no judgments; run `interp dbg` first")
    return paths


def _config(paths: RunPaths) -> dict:
    if not paths.config.is_file():
        return {}
    try:
        return tomllib.loads(paths.config.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InterpError(f"{paths.config}: not valid TOML ({exc})") from None


def run_models(run_dir: Path) -> tuple[str, str] | None:
    """The run's two response authors (config order), or None when the config does not say."""
    models = _config(RunPaths(Path(run_dir))).get("models")
    return (models[0], models[1]) if models and len(models) == 2 else None


def attention_judges(run_dir: Path) -> list[str]:
    """Judges of the run that have consolidated attention, in config order."""
    paths = _check_run_dir(run_dir)
    config = _config(paths)
    specs = list(config.get("judges") or config.get("models") or [])
    found = [spec for spec in specs if paths.attention_index(spec).is_file() and paths.attention(spec).is_file()]
    known = {safe_name(spec) for spec in found}
    for index_path in sorted((paths.root / "attention").glob("*.json")):
        if index_path.stem in known or not index_path.with_suffix(".safetensors").is_file():
            continue
        try:
            found.append(json.loads(index_path.read_text())["judge"])
        except (ValueError, KeyError):
            continue
    if not found:
        raise InterpError(
            f"run directory {paths.root} has judgments but no attention; run `interp dbg` with attention = \"final\" "
            "(or \"after\") to record it"
        )
    return found


def load_attention(run_dir: Path, judge: str, *, tokenizer=None) -> RunAttention:
    """Read one judge's consolidated attention; with `tokenizer`, also check it is the judge's tokenizer."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    paths = _check_run_dir(run_dir)
    array_path, index_path = paths.attention(judge), paths.attention_index(judge)
    if not array_path.is_file() or not index_path.is_file():
        try:
            available = ", ".join(attention_judges(paths.root))
        except InterpError:
            available = "none"
        raise InterpError(
            f"run directory {paths.root} has no attention for judge {judge!r} (judges with attention: {available}); "
            "run `interp dbg` with attention enabled"
        )
    try:
        index = json.loads(index_path.read_text())
        arrays = load_file(str(array_path))
        mass, counts = arrays["mass"].float(), arrays["span_tokens"].float()
    except (ValueError, KeyError, OSError, SafetensorError) as exc:
        raise InterpError(f"{array_path}: cannot read the attention arrays ({type(exc).__name__}); re-run the judging step") from None
    expected = (len(index["items"]), len(ORDERS), index["n_layers"], index["n_heads"], 2)
    if tuple(mass.shape) != expected or tuple(counts.shape) != expected[:2] + (2,):
        raise InterpError(
            f"{array_path}: arrays of shape {tuple(mass.shape)} do not match the index {index_path.name} {expected}; "
            "re-run the judging step"
        )
    _check_against_judgments(paths, judge, index)
    models = run_models(paths.root) or _models_from_index(index)
    run = RunAttention(judge=judge, models=models, mass=mass, span_tokens=counts, index=index, run_dir=paths.root)
    if tokenizer is not None:
        check_tokenizer(run, tokenizer)
    return run


def _models_from_index(index: dict) -> tuple[str, str]:
    first = index["items"][0]["orders"][ORDERS[0]]
    return first["model_a"], first["model_b"]


def _check_against_judgments(paths: RunPaths, judge: str, index: dict) -> None:
    """The index's spans and token counts must be those of judgments.jsonl: same prompts, same tokenizer."""
    records = {(r["item_id"], r["order"]): r for r in read_jsonl(paths.judgments) if r.get("judge") == judge}
    if not records:
        raise InterpError(f"run directory {paths.root} has no judgments by {judge!r}; run `interp dbg` first")
    for entry in index["items"]:
        for order in ORDERS:
            record = records.get((entry["item_id"], order))
            slots = entry["orders"][order]
            if record is None:
                raise InterpError(f"judgments.jsonl has no judgment by {judge!r} of {entry['item_id']} {order}; resume the run")
            if record["n_tokens"] != slots["n_tokens"] or {k: list(v) for k, v in record["spans"].items()} != slots["spans"]:
                raise InterpError(
                    f"attention of {judge!r} for {entry['item_id']} {order} was computed on another prompt than "
                    f"judgments.jsonl ({slots['n_tokens']} vs {record['n_tokens']} tokens, spans {slots['spans']} vs "
                    f"{record['spans']}): judgments from another tokenizer or run; delete {paths.root / 'attention'} and "
                    "re-run `interp dbg`"
                )


def check_tokenizer(run: RunAttention, tokenizer) -> None:
    """Refuse attention recorded with another tokenizer: its token spans would index the wrong tokens."""
    stored = run.fingerprint
    actual = tokenizer_fingerprint(getattr(tokenizer, "tokenizer", tokenizer))
    if stored != actual:
        where = run.run_dir or "this run"
        raise InterpError(
            f"attention of judge {run.judge!r} in {where} was recorded with another tokenizer (fingerprint {stored}) "
            f"than this model's ({actual}); use the run's judge model or re-run the judging step with this one"
        )


def _resolve(run_dir, judge: str | None) -> RunAttention:
    if isinstance(run_dir, RunAttention):
        if judge is not None and judge != run_dir.judge:
            raise InterpError(f"got attention of judge {run_dir.judge!r}, asked for {judge!r}")
        return run_dir
    if judge is None:
        raise InterpError("name the judge")
    return load_attention(run_dir, judge)


def _nanmean(values: Tensor, dims) -> Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.nanmean(values, dim=dims)


# ---- Figure 7 --------------------------------------------------------------------------------------


def author_profiles(run: RunAttention, stat: Stat = "mean") -> Float[Tensor, "author layer"]:
    """Per author (models order), the per-layer attention: mean over heads, both orders and instructions."""
    return _nanmean(run.by_author(stat), (0, 1, 3)).T.contiguous()


def _interp(x_from: np.ndarray, values: Tensor, x_to: np.ndarray) -> Tensor:
    return torch.from_numpy(np.interp(x_to, x_from, values.double().numpy())).float()


def figure7_profiles(run_dir, stat: Stat = "mean", *, relative_depth: bool = False, judges: Sequence[str] | None = None) -> dict:
    """The Figure 7 grid as data; `run_dir` is a run directory, one RunAttention or a list of them.

    Returns a dict with
      - "judges", "authors" (the run's models), "stat", "axis" ("layer" or "relative depth")
      - "x": {judge: layer axis (np.ndarray)}
      - "cells": {judge: {author: Tensor[layer]}}  attention of that judge to that author's responses
      - "author_diff": {judge: Tensor[layer]}  cells[judge][authors[0]] - cells[judge][authors[1]]
      - "judge_diff": {author: Tensor}  cells[judges[0]][author] - cells[judges[1]][author] (two judges or
        more; the first two), on "judge_diff_x" ("judge_diff_axis"): the shared layer axis, or relative depth
        (linear interpolation onto the deeper model's grid) when the judges' depths differ
      - "own_minus_other": {judge: Tensor[layer]} for judges that are also authors
      - "grid": DataFrame, index judges (+ judge-difference row), columns authors (+ author-difference
        column), each cell a per-layer Tensor
      - "long": the same numbers as a long DataFrame (kind, judge, author, layer, depth, x, value)
    """
    if isinstance(run_dir, RunAttention):
        runs = [run_dir]
    elif isinstance(run_dir, (list, tuple)):
        runs = [run for run in run_dir if judges is None or run.judge in judges]
    else:
        runs = [load_attention(run_dir, j) for j in (judges or attention_judges(run_dir))]
    if not runs:
        raise InterpError("no judge attention to draw")
    authors = runs[0].models
    cells, author_diff, own_other, xs = {}, {}, {}, {}
    for run in runs:
        profile = author_profiles(run, stat)
        cells[run.judge] = {author: profile[k] for k, author in enumerate(authors)}
        author_diff[run.judge] = profile[0] - profile[1]
        xs[run.judge] = run.depth(relative_depth)
        if run.judge in authors:
            own = authors.index(run.judge)
            own_other[run.judge] = profile[own] - profile[1 - own]
    judge_names = [run.judge for run in runs]
    judge_diff: dict[str, Tensor] = {}
    diff_x, diff_axis = None, None
    if len(runs) >= 2:
        first, second = runs[0], runs[1]
        if first.n_layers == second.n_layers:
            diff_x, diff_axis = first.depth(relative_depth), ("relative depth" if relative_depth else "layer")
            for author in authors:
                judge_diff[author] = cells[first.judge][author] - cells[second.judge][author]
        else:
            diff_x, diff_axis = layer_axis(max(first.n_layers, second.n_layers), True), "relative depth"
            for author in authors:
                judge_diff[author] = _interp(first.depth(True), cells[first.judge][author], diff_x) - _interp(
                    second.depth(True), cells[second.judge][author], diff_x
                )
    axis = "relative depth" if relative_depth else "layer"
    author_col = f"author difference ({authors[0]} - {authors[1]})"
    judge_row = f"judge difference ({judge_names[0]} - {judge_names[1]})" if judge_diff else None
    grid = pd.DataFrame(index=judge_names + ([judge_row] if judge_row else []), columns=list(authors) + [author_col], dtype=object)
    for judge in judge_names:
        for author in authors:
            grid.at[judge, author] = cells[judge][author]
        grid.at[judge, author_col] = author_diff[judge]
    if judge_row:
        for author in authors:
            grid.at[judge_row, author] = judge_diff[author]
    rows = []

    def add(kind, judge, author, x, values, interpolated=False):
        n = len(values)
        for position, value in enumerate(values.tolist()):
            depth = float(x[position]) if interpolated else position / max(n - 1, 1)
            layer = math.nan if interpolated else position
            rows.append({"kind": kind, "judge": judge, "author": author, "layer": layer, "depth": depth, "x": float(x[position]), "value": value})

    for run in runs:
        for author in authors:
            add("cell", run.judge, author, xs[run.judge], cells[run.judge][author])
        add("author_diff", run.judge, f"{authors[0]} - {authors[1]}", xs[run.judge], author_diff[run.judge])
        if run.judge in own_other:
            add("own_minus_other", run.judge, "own - other", xs[run.judge], own_other[run.judge])
    interpolated = len(runs) >= 2 and runs[0].n_layers != runs[1].n_layers
    for author, values in judge_diff.items():
        add("judge_diff", f"{judge_names[0]} - {judge_names[1]}", author, diff_x, values, interpolated)
    return {
        "stat": stat,
        "axis": axis,
        "judges": judge_names,
        "authors": list(authors),
        "x": xs,
        "cells": cells,
        "author_diff": author_diff,
        "judge_diff": judge_diff,
        "judge_diff_x": diff_x,
        "judge_diff_axis": diff_axis,
        "own_minus_other": own_other,
        "grid": grid,
        "long": pd.DataFrame(rows, columns=["kind", "judge", "author", "layer", "depth", "x", "value"]),
    }


# ---- heads -----------------------------------------------------------------------------------------


def head_map(run_dir, judge: str | None = None, stat: Stat = "mean") -> Float[Tensor, "layer head"]:
    """Own-minus-other attention per (layer, head): mean over both orders and instructions (empty spans skipped)."""
    run = _resolve(run_dir, judge)
    return _nanmean(run.own_minus_other(stat), (0, 1))


def top_heads(run_dir, judge: str | None = None, k: int = 10, stat: Stat = "mean") -> list[tuple[int, int, float]]:
    """The k heads with the largest own-minus-other attention: [(layer, head, value)], largest first."""
    values = head_map(run_dir, judge, stat)
    flat = values.flatten()
    finite = torch.nonzero(torch.isfinite(flat)).flatten()
    order = finite[torch.argsort(flat[finite], descending=True, stable=True)][: max(int(k), 0)]
    heads = values.shape[1]
    return [(int(i) // heads, int(i) % heads, float(flat[i])) for i in order]


def head_table(run_dir, judge: str | None = None) -> pd.DataFrame:
    """Every (layer, head): own, other and own-minus-other, per-token mean and mass."""
    run = _resolve(run_dir, judge)
    rows = {"layer": [], "head": []}
    layers, heads = torch.meshgrid(torch.arange(run.n_layers), torch.arange(run.n_heads), indexing="ij")
    rows["layer"], rows["head"] = layers.flatten().tolist(), heads.flatten().tolist()
    frame = pd.DataFrame(rows)
    frame.insert(0, "judge", run.judge)
    for stat in STATS:
        frame[f"own_{stat}"] = _nanmean(run.own(stat), (0, 1)).flatten().numpy()
        frame[f"other_{stat}"] = _nanmean(run.other(stat), (0, 1)).flatten().numpy()
        frame[f"diff_{stat}"] = frame[f"own_{stat}"] - frame[f"other_{stat}"]
    return frame


# ---- per-layer differences with intervals ------------------------------------------------------------


def item_layer_differences(run: RunAttention, stat: Stat = "mean") -> Float[Tensor, "item layer"]:
    """Per instruction and layer, own minus other (mean over heads and both orders)."""
    return _nanmean(run.own_minus_other(stat), (1, 3))


def layer_differences(
    run_dir, judge: str | None = None, n_boot: int = 1000, seed: int = 0, *, stat: Stat = "mean", level: float = 0.95
) -> pd.DataFrame:
    """Per layer: own, other, own-minus-other and its percentile bootstrap interval over instructions.

    Columns: judge, stat, layer, depth (layer / (L - 1)), own, other, diff, ci_low, ci_high, n_items.
    """
    from interp.metrics import bootstrap_ci

    run = _resolve(run_dir, judge)
    per_item = item_layer_differences(run, stat).double().numpy()
    own = _nanmean(run.own(stat), (0, 1, 3)).numpy()
    other = _nanmean(run.other(stat), (0, 1, 3)).numpy()
    depth = run.depth(True)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for layer in range(run.n_layers):
            column = per_item[:, layer]
            low, high = bootstrap_ci(lambda idx, c=column: float(np.nanmean(c[idx])), run.n_items, n_boot=n_boot, seed=seed, level=level)
            rows.append(
                {
                    "judge": run.judge,
                    "stat": stat,
                    "layer": layer,
                    "depth": float(depth[layer]),
                    "own": float(own[layer]),
                    "other": float(other[layer]),
                    "diff": float(np.nanmean(column)) if np.isfinite(column).any() else math.nan,
                    "ci_low": low,
                    "ci_high": high,
                    "n_items": int(np.isfinite(column).sum()),
                }
            )
    return pd.DataFrame(rows)


# ---- length control --------------------------------------------------------------------------------


def length_table(run_dir, judge: str | None = None) -> pd.DataFrame:
    """Per instruction: own/other token lengths and attention (mass and per-token mean), averaged over both
    orders, layers and heads, and the own-minus-other differences."""
    run = _resolve(run_dir, judge)
    own_tokens = run.own_tokens().mean(1).numpy()
    other_tokens = run.other_tokens().mean(1).numpy()
    frame = pd.DataFrame({"judge": run.judge, "item_id": run.item_ids, "task": run.tasks, "own_tokens": own_tokens, "other_tokens": other_tokens})
    frame["length_diff"] = frame["own_tokens"] - frame["other_tokens"]
    for stat in ("mass", "mean"):
        frame[f"{stat}_own"] = _nanmean(run.own(stat), (1, 2, 3)).numpy()
        frame[f"{stat}_other"] = _nanmean(run.other(stat), (1, 2, 3)).numpy()
        frame[f"{stat}_diff"] = frame[f"{stat}_own"] - frame[f"{stat}_other"]
    return frame


def ols(x, y) -> dict:
    """Least squares y = intercept + slope * x over the finite pairs: slope, intercept, r, n.

    Fewer than two points, or no spread in x, gives NaN slope and r (intercept = mean of y); never raises.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = int(x.size)
    if n == 0:
        return {"slope": math.nan, "intercept": math.nan, "r": math.nan, "n": 0}
    dx, dy = x - x.mean(), y - y.mean()
    sxx, syy = float(dx @ dx), float(dy @ dy)
    if n < 2 or sxx == 0.0:
        return {"slope": math.nan, "intercept": float(y.mean()), "r": math.nan, "n": n}
    slope = float(dx @ dy) / sxx
    r = float(dx @ dy) / math.sqrt(sxx * syy) if syy > 0 else math.nan
    return {"slope": slope, "intercept": float(y.mean() - slope * x.mean()), "r": r, "n": n}


def length_regression(run_dir, judges: Sequence[str] | None = None) -> pd.DataFrame:
    """Per judge and statistic, the OLS fit of (own - other attention) on (own - other token length).

    The intercept is the attention difference expected at equal lengths: self-attention beyond length.
    """
    if isinstance(run_dir, RunAttention):
        tables = [length_table(run_dir)]
    else:
        tables = [length_table(run_dir, judge) for judge in (judges or attention_judges(run_dir))]
    rows = []
    for table in tables:
        for stat in ("mass", "mean"):
            fit = ols(table["length_diff"], table[f"{stat}_diff"])
            rows.append(
                {
                    "judge": table["judge"].iloc[0] if len(table) else "",
                    "stat": stat,
                    **fit,
                    "mean_diff": float(np.nanmean(table[f"{stat}_diff"])) if np.isfinite(table[f"{stat}_diff"]).any() else math.nan,
                    "mean_length_diff": float(table["length_diff"].mean()),
                }
            )
    return pd.DataFrame(rows, columns=["judge", "stat", "slope", "intercept", "r", "n", "mean_diff", "mean_length_diff"])


# ---- one judgment, token by token -------------------------------------------------------------------


@dataclass
class TokenAttention:
    """One head's attention from the run's query set over every token of one judge prompt.

    `masses`: `[layer, head, span]` span masses recomputed in this very pass (the run's code path);
    `stored`: the same numbers as the run stored them.
    """

    judge: str
    item_id: str
    order: str
    layer: int
    head: int
    tokens: list[str]
    weights: Float[Tensor, "pos"]
    spans: dict[str, tuple[int, int]]
    authors: dict[str, str]  # slot ("a", "b") -> author
    masses: Float[Tensor, "layer head span"]
    stored: Float[Tensor, "layer head span"]
    probs: dict[str, float]

    @property
    def max_abs_diff(self) -> float:
        """Largest difference between the recomputed and the stored span masses."""
        return float((self.masses - self.stored).abs().max())

    def html(self, **kwargs) -> str:
        return tokens_html(self.tokens, self.weights, spans=self.spans, **kwargs)


class _CaptureHead:
    """Wraps a backend so one head's full pattern is kept while `judge_batch` runs its own reducer."""

    def __init__(self, backend, layer: int, head: int):
        self.backend, self.layer, self.head = backend, layer, head
        self.model, self.name = backend.model, backend.name
        self.pattern: Tensor | None = None

    def forward(self, batch, *, on_pattern=None, **kwargs):
        def hook(layer: int, pattern: Tensor) -> None:
            if layer == self.layer:
                self.pattern = pattern[0, self.head].detach().float().clone()
            if on_pattern is not None:
                on_pattern(layer, pattern)

        return self.backend.forward(batch, on_pattern=hook, **kwargs)


def _run_items(paths: RunPaths) -> list:
    from interp.data import Item

    if not paths.items.is_file():
        raise InterpError(f"run directory {paths.root} has no items.jsonl")
    return [Item(**{**r, "aliases": tuple(r.get("aliases", ()))}) for r in read_jsonl(paths.items)]


def prompt_token_attention(
    run_dir, judge: str, item_id: str, order: str, layer: int, head: int, backend: str = "hf", *, model=None
) -> TokenAttention:
    """Re-run one judgment of the run with the judge model and return one head's attention per prompt token.

    The prompt is built as the run built it (responses.jsonl, `tokenized_judge_prompt`) and
    judged by `judge_batch` (the run's code path) with the run's query set; `model` (a LoadedModel) avoids
    reloading the judge. The token weights are that head's row at the final position ("final" runs) or the
    mean over every position after both responses ("after" runs).
    """
    from interp.backends import make_backend
    from interp.judge import judge_batch, label_tokens
    from interp.models import load_model
    from interp.inspection import tokenized_judge_prompt
    from interp.runs import judge_tasks, read_responses

    run = load_attention(run_dir, judge)
    if order not in ORDERS:
        raise InterpError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    if item_id not in run.item_ids:
        raise InterpError(f"item {item_id!r} is not in this run (items: {', '.join(run.item_ids[:5])}...)")
    if not (0 <= layer < run.n_layers and 0 <= head < run.n_heads):
        raise InterpError(f"layer {layer}, head {head} out of range: {judge} has {run.n_layers} layers x {run.n_heads} heads")
    paths = RunPaths(Path(run_dir))
    items = [item for item in _run_items(paths) if item.id == item_id]
    responses = read_responses(paths)
    if not items:
        raise InterpError(f"item {item_id!r} is not in {paths.items}")
    tasks = {t.order: t for t in judge_tasks(items, responses, run.models)}
    task = tasks[order]
    loaded = model if model is not None else load_model(judge)
    check_tokenizer(run, loaded.tokenizer)
    prompt = tokenized_judge_prompt(loaded, task.item.task, task.item.query, task.response_a, task.response_b)
    i, o = run.item_ids.index(item_id), ORDERS.index(order)
    entry = run.index["items"][i]["orders"][order]
    if len(prompt) != entry["n_tokens"] or {k: list(v) for k, v in prompt.spans.items()} != entry["spans"]:
        raise InterpError(
            f"the rebuilt prompt of {item_id} {order} ({len(prompt)} tokens) differs from the run's ({entry['n_tokens']}); "
            "was the run made with another model kind or prompt version?"
        )
    capture = _CaptureHead(make_backend(loaded, backend), layer, head)
    (judgment,) = judge_batch(capture, [prompt], label_tokens(loaded.tokenizer, ("A", "T", "B") if _ties(paths) else ("A", "B")), queries=run.queries)
    pattern = capture.pattern
    if run.queries == "final":
        weights = pattern[-1]
    else:
        first = max(prompt.spans["a"][1], prompt.spans["b"][1])
        weights = pattern[first:].mean(0)
    tokens = [loaded.tokenizer.decode([token]) for token in prompt.input_ids]
    return TokenAttention(
        judge=judge,
        item_id=item_id,
        order=order,
        layer=layer,
        head=head,
        tokens=tokens,
        weights=weights,
        spans=dict(prompt.spans),
        authors={"a": task.author_a, "b": task.author_b},
        masses=judgment.mass,
        stored=run.mass[i, o],
        probs=dict(judgment.probs),
    )


def _ties(paths: RunPaths) -> bool:
    return bool(_config(paths).get("ties", False))


_OUTLINES = {"a": "box-shadow:inset 0 -2px 0 #1f77b4;", "b": "box-shadow:inset 0 -2px 0 #2ca02c;"}


def tokens_html(
    tokens: Sequence[str],
    weights,
    *,
    spans: dict[str, tuple[int, int]] | None = None,
    skip_first: bool = True,
    color: tuple[int, int, int] = (214, 39, 40),
) -> str:
    """Prompt tokens as HTML spans, background alpha proportional to the weight.

    The scale is the largest weight, ignoring the first token when `skip_first` (it usually soaks up most of
    the attention, an "attention sink"). Response spans get an outline; hover shows each token's weight.
    """
    w = torch.as_tensor(weights, dtype=torch.float64).numpy()
    body = w[1:] if skip_first and w.size > 1 else w
    finite = body[np.isfinite(body)]
    scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    in_span = {}
    for name, (start, end) in (spans or {}).items():
        if name in ("a", "b"):
            for position in range(start, end):
                in_span[position] = name
    parts = []
    for position, (token, weight) in enumerate(zip(tokens, w)):
        alpha = min(max(weight / scale, 0.0), 1.0) if np.isfinite(weight) else 0.0
        outline = _OUTLINES.get(in_span.get(position), "")
        text = html.escape(token).replace("\n", "\u21b5<br>")
        parts.append(
            f"<span title='{position}: {weight:.4g}' style='background:rgba({color[0]},{color[1]},{color[2]},{alpha:.3f});{outline}'>{text}</span>"
        )
    legend = (
        "<div style='font-size:90%;color:#555;margin-bottom:4px'>underline: "
        f"<span style='{_OUTLINES['a']}'>response A</span>, <span style='{_OUTLINES['b']}'>response B</span>; "
        f"colour scale max = {scale:.4g}</div>"
    )
    return legend + "<div style='font-family:monospace;white-space:pre-wrap;line-height:1.6'>" + "".join(parts) + "</div>"
