"""Steering beyond masking (issue 7): attention emphasis and a self-recognition direction, same causal test.

Masking asks "what if the judge looked less at its own answer?"; steering asks "can we push it to be fair?".
Two families, both evaluated exactly like the interventions of `interp.causal` (responses and gold read from
the run, only judging re-run, paired per-instruction effects with bootstrap intervals):

**Attention emphasis (PASTA-style).** `emphasis_spec(k)` is an `AttentionIntervention` with target "other",
alpha = k > 1 and `emphasis = True`: the post-softmax weights on the other response's keys are multiplied by
k and every query row renormalised. PASTA states the same edit the other way round: multiply the weights on
every key *except* the other response by c < 1 and renormalise. The two are the same intervention when
c = 1/k: scaling the non-target keys by c and renormalising gives p'_j = c p_j / (c S_rest + S_T) for j not
in T and p_j / (c S_rest + S_T) on T; dividing numerator and denominator by c gives p_j / (S_rest + k S_T)
and k p_j / (S_rest + k S_T), i.e. exactly "target times k, renormalised". So `pasta_spec(c)` returns the
emphasis spec with alpha = 1/c and both compile (`hooks.apply.compile_bias`) to the same bias, +log k on the
other span. `complement_bias` writes the PASTA form literally (-log k on every other key of the same query
rows); it differs from the compiled bias by a constant per row, which the softmax ignores (the tests show
equal logits). Heads: `emphasis_heads(run_dir, judge, k)` = the top-k heads by own-minus-other attention
from the run's attention maps (`interp.attention_maps.top_heads`); `None` = every layer and head.

**Activation steering.** `compute_direction` re-builds the run's judging prompts exactly as
`interp.runs.run_judging` does (both orders), runs the judge once per batch and records the residual stream
after decoder block `layer` (the backends' `resid_edit` hook used as an identity that records). The
direction is a difference of class means over *training items only* (a seeded split of the run's items):

- position "spans": mean residual over the tokens of the judge's own response minus the same over the other
  response (one own and one other example per prompt, i.e. per item and order): a self-recognition direction;
- position "final": the final position of the real prompts (the judge's own response is in the prompt) minus
  the final position of the same prompts with the own response replaced by the item's reference answer
  ("my response is in the prompt" vs "it is not"; items without a reference are skipped; note that the
  reference answers are often shorter than model answers, a confound of this contrast).

Probe accuracy: an example is classified as "own" when its projection on the unit direction exceeds the
midpoint of the two training class means' projections; reported on train and held-out items, with n per
split. Also reported, as "paired" accuracy: the share of prompts in which the own example projects higher
than the other example of the same prompt (this ignores what the two share, e.g. Gemma's very large
residual norms, which can dominate span means and push the midpoint probe below chance). The direction is saved as RUN_DIR/steering/directions/<judge>-L<layer>-<position>-s<seed>-f<frac>
.safetensors (tensors "direction" = own mean - other mean, "own_mean", "other_mean") with a JSON sidecar
(layer, position, split item ids, the item ids that entered the means, accuracies, norm, midpoint).

`steer(direction, layer, coefficient, mode, positions)` returns an `edit` builder for
`judge_batch(..., edit=)` / `run_judging(..., edit_for=)` / `causal.rejudge(..., edit_for=)`:

- mode "add": h + coefficient * u at the chosen positions (u the unit direction; a negative coefficient is
  the reversal); coefficient 0 is an identity that returns the residual tensor itself (bit-identical logits);
- mode "project_out": h - coefficient * (h.u) u; coefficient 1 (the default use) removes the component, so
  h'.u = 0 up to float32 rounding (about 1e-7 relative to |h|).

Positions: "all" = every non-padding token, "spans" = the tokens of both response spans (A and B; the edit
is author-blind so it needs no authors), "final" = the last position.

**The table.** `steering_table` re-judges the run under: no intervention (the run's own judgments), self-mask
(alpha 0 on the self span, every layer and head), other-emphasis (alpha `emphasis_alpha` on the other span,
top-k heads or all), direction removal (project_out, coefficient 1, all positions) and direction reversal
(add, `coefficient` times the direction's norm: the default -1 moves a typical own-span activation onto
the other-span class mean along u). Each row has DBG (hard, with its bootstrap CI), mean P(own), the paired
change of P(own) against no intervention with its bootstrap CI, and agreement with gold (with a bootstrap
CI over items). Written to RUN_DIR/steering/table.json and table.csv and RUN_DIR/figures/
steering_section.html (picked up by `interp.report.build_report`). Coefficients given to `steering_table`,
`steering_command` and the sweep are in units of the direction's norm (scale-free across layers); `steer`
itself takes the absolute coefficient on the unit direction.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal, Sequence

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from hooks.spec import AttentionIntervention, validate_against
from interp.backends import Batch, Backend, ResidEdit, left_pad, make_backend
from interp.causal import Run, behaviour, load_run, own_probabilities, paired_effect, rejudge
from interp.errors import InterpError
from interp.inspection import tokenized_judge_prompt
from interp.judge import EditBuilder
from interp.metrics import bootstrap_ci
from interp.models import LoadedModel, load_model
from interp.runs import JudgeTask, judge_tasks, load_toml_config, safe_name
from interp.spans import TokenizedPrompt
from interp.storage import atomic_write_bytes, atomic_write_text, read_jsonl

SECTION_TITLE = "Steering: emphasis and a self-recognition direction"
DIRECTION_POSITIONS = ("spans", "final")
EDIT_POSITIONS = ("all", "spans", "final")
MODES = ("add", "project_out")
ROWS = ("none", "self-mask", "other-emphasis", "direction-removal", "direction-reversal")

DirectionPosition = Literal["spans", "final"]
EditPositions = Literal["all", "spans", "final"]
Mode = Literal["add", "project_out"]


# ---- attention emphasis ---------------------------------------------------------------------------


def emphasis_spec(
    alpha: float = 4.0,
    *,
    heads: Sequence[int] | dict[int, Sequence[int]] | None = None,
    layers: Sequence[int] | None = None,
    queries: Literal["outside", "final"] = "outside",
    name: str | None = "other-emphasis",
) -> AttentionIntervention:
    """Raise attention to the other response: its post-softmax weights times `alpha` (> 1), renormalised.

    `heads`: None = every head, a list = those heads in every chosen layer, or a layer -> heads table (e.g.
    from `emphasis_heads`). Validated like every spec (InterpError); alpha must be > 0.
    """
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
        raise InterpError(f"emphasis alpha must be a finite number > 0, got {alpha!r}")
    return AttentionIntervention(
        target="other",
        alpha=float(alpha),
        layers=tuple(layers) if layers is not None else None,
        heads=heads if heads is None or isinstance(heads, dict) else tuple(heads),
        queries=queries,
        name=name,
        emphasis=True,
    )


def pasta_spec(scale: float = 0.25, **kwargs) -> AttentionIntervention:
    """PASTA form: multiply attention on every key *except* the other response by `scale` (< 1), renormalise.

    Equal to multiplying the other response's weights by 1/scale and renormalising (see the module
    docstring), so this is `emphasis_spec(1 / scale)`: the same spec, the same compiled bias.
    """
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and 0 < scale):
        raise InterpError(f"PASTA scale must be a finite number > 0, got {scale!r}")
    return emphasis_spec(1.0 / scale, **kwargs)


def complement_bias(bias: dict[int, Tensor]) -> dict[int, Tensor]:
    """The PASTA form of a compiled emphasis bias, written literally.

    For every query row the emphasis bias touches (+log k on the target keys), put -log k on every key
    *outside* the target and 0 on it. Per row this is the emphasis bias minus the constant log k; keys the
    causal or padding mask hides stay hidden; rows the bias does not touch stay 0. The softmax is invariant
    to a per-row constant, so both give the same patterns and logits (up to float rounding).
    """
    out = {}
    for layer, b in bias.items():
        if not torch.isfinite(b).all():
            raise InterpError("complement_bias needs a finite bias (alpha > 0); a mask has no complement form")
        target = b != 0
        rows = target.any(-1, keepdim=True)
        value = torch.where(target, b, torch.zeros_like(b)).sum(-1, keepdim=True) / target.sum(-1, keepdim=True).clamp_min(1)
        out[layer] = torch.where(rows & ~target, -value, torch.zeros_like(b))
    return out


def emphasis_heads(run_dir: Path, judge: str, k: int) -> dict[int, list[int]]:
    """The top-k heads by own-minus-other attention (`interp.attention_maps.top_heads`) as a layer -> heads table."""
    from interp.attention_maps import top_heads

    if k < 1:
        raise InterpError(f"k_heads must be at least 1, got {k}")
    table: dict[int, list[int]] = {}
    for layer, head, _ in top_heads(run_dir, judge, k):
        table.setdefault(int(layer), []).append(int(head))
    if not table:
        raise InterpError(f"{run_dir}: no head has finite own-minus-other attention for {judge}; pass k_heads=None for all heads")
    return {layer: sorted(heads) for layer, heads in sorted(table.items())}


# ---- the run's judging prompts --------------------------------------------------------------------


def judging_prompt(model: LoadedModel, task: JudgeTask, response_a: str | None = None, response_b: str | None = None) -> TokenizedPrompt:
    """The judge prompt of one task exactly as `interp.runs.run_judging` builds it (optionally with a slot replaced)."""
    a = task.response_a if response_a is None else response_a
    b = task.response_b if response_b is None else response_b
    return tokenized_judge_prompt(model, task.item.task, task.item.query, a, b)


def own_slot(task: JudgeTask, judge: str) -> str:
    if task.author_a == task.author_b or judge not in (task.author_a, task.author_b):
        raise InterpError(f"judge {judge!r} must be exactly one of the authors ({task.author_a!r}, {task.author_b!r}) to steer on its own response")
    return "a" if task.author_a == judge else "b"


def split_items(item_ids: Sequence[str], train_fraction: float = 0.7, seed: int = 0) -> tuple[list[str], list[str]]:
    """Seeded train / held-out split of item ids (each list in run order); both non-empty when >= 2 items."""
    if not 0 < train_fraction < 1:
        raise InterpError(f"train_fraction must be in (0, 1), got {train_fraction}")
    ids = list(item_ids)
    if len(ids) < 2:
        raise InterpError(f"a train / held-out split needs at least 2 items, the run has {len(ids)}")
    shuffled = ids[:]
    random.Random(f"steering-split:{seed}").shuffle(shuffled)
    n_train = min(max(1, round(train_fraction * len(ids))), len(ids) - 1)
    train = set(shuffled[:n_train])
    return [i for i in ids if i in train], [i for i in ids if i not in train]


# ---- the direction --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One residual vector with its class: label 1 = own (own span / own response present), 0 = other."""

    item_id: str
    order: str
    label: int
    vector: Tensor


@dataclass
class SteeringDirection:
    judge: str
    layer: int
    position: str
    vector: Tensor  # own class mean - other class mean, [d_model], float32
    own_mean: Tensor
    other_mean: Tensor
    midpoint: float  # on the unit direction: (own_mean.u + other_mean.u) / 2
    train_ids: list[str]
    heldout_ids: list[str]
    mean_item_ids: list[str]  # the items whose activations entered the class means (train only)
    accuracy: dict[str, float]  # "train", "heldout"
    n: dict[str, int]
    seed: int
    train_fraction: float
    path: Path | None = None
    meta: dict = field(default_factory=dict)

    @property
    def norm(self) -> float:
        return float(self.vector.norm())

    @property
    def unit(self) -> Tensor:
        return unit_vector(self.vector)

    def sidecar(self) -> dict:
        return {
            "judge": self.judge,
            "layer": self.layer,
            "position": self.position,
            "seed": self.seed,
            "train_fraction": self.train_fraction,
            "norm": self.norm,
            "midpoint": self.midpoint,
            "d_model": int(self.vector.shape[0]),
            "train_ids": self.train_ids,
            "heldout_ids": self.heldout_ids,
            "mean_item_ids": self.mean_item_ids,
            "accuracy": self.accuracy,
            "n": self.n,
        } | self.meta


def unit_vector(direction) -> Tensor:
    vector = direction.vector if isinstance(direction, SteeringDirection) else torch.as_tensor(direction)
    vector = vector.detach().float().flatten()
    norm = vector.norm()
    if not torch.isfinite(norm) or norm == 0:
        raise InterpError("the steering direction has zero or non-finite norm")
    return vector / norm


def _difference_of_means(examples: Sequence[Example]) -> tuple[Tensor, Tensor, Tensor]:
    """(own mean - other mean, own mean, other mean) over `examples`, in float64 then float32."""
    own = [e.vector.double() for e in examples if e.label == 1]
    other = [e.vector.double() for e in examples if e.label == 0]
    if not own or not other:
        raise InterpError(f"difference of means needs examples of both classes (own {len(own)}, other {len(other)})")
    own_mean, other_mean = torch.stack(own).mean(0), torch.stack(other).mean(0)
    return (own_mean - other_mean).float(), own_mean.float(), other_mean.float()


def _accuracy(examples: Sequence[Example], unit: Tensor, midpoint: float) -> float:
    if not examples:
        return float("nan")
    scores = torch.stack([e.vector.double() for e in examples]) @ unit.double()
    labels = torch.tensor([e.label for e in examples])
    return float(((scores > midpoint).long() == labels).double().mean())


def _paired_accuracy(examples: Sequence[Example], unit: Tensor) -> float:
    """Share of prompts (item, order) whose own example projects higher than its other example on `unit`."""
    pairs: dict[tuple[str, str], dict[int, float]] = {}
    for e in examples:
        pairs.setdefault((e.item_id, e.order), {})[e.label] = float(e.vector.double() @ unit.double())
    scored = [p[1] > p[0] for p in pairs.values() if 0 in p and 1 in p]
    return float(np.mean(scored)) if scored else float("nan")


def _span_means(h: Tensor, start: int, end: int) -> Tensor | None:
    return h[start:end].double().mean(0).float() if end > start else None


def collect_examples(
    runner: Backend,
    judge: str,
    tasks: Sequence[JudgeTask],
    layer: int,
    position: DirectionPosition,
    *,
    batch_size: int = 8,
) -> list[Example]:
    """Residual-stream examples at block `layer` for `tasks` (one forward pass per batch of prompts).

    "spans": per prompt, the mean over the own response's tokens (label 1) and over the other response's
    tokens (label 0); empty spans give no example. "final": per prompt, the final position of the real
    prompt (label 1) and of the prompt with the own response replaced by the item's reference (label 0);
    tasks whose item has no reference are skipped.
    """
    if position not in DIRECTION_POSITIONS:
        raise InterpError(f"position must be one of {', '.join(DIRECTION_POSITIONS)}, not {position!r}")
    model = runner.model
    jobs: list[tuple[JudgeTask, int | None, TokenizedPrompt]] = []  # (task, label or None for "spans", prompt)
    for task in tasks:
        slot = own_slot(task, judge)
        if position == "spans":
            jobs.append((task, None, judging_prompt(model, task)))
        elif task.item.reference:
            replaced = {"response_a" if slot == "a" else "response_b": task.item.reference}
            jobs.append((task, 1, judging_prompt(model, task)))
            jobs.append((task, 0, judging_prompt(model, task, **replaced)))
    examples: list[Example] = []
    for start in range(0, len(jobs), batch_size):
        chunk = jobs[start : start + batch_size]
        batch, offsets = left_pad([p.input_ids for _, _, p in chunk], model.tokenizer.pad_token_id)
        captured: list[Tensor] = []

        def record(h: Tensor) -> Tensor:
            if position == "final":
                captured.append(h[:, -1].detach().float().clone())
            else:
                rows = []
                for row, (task, _, prompt) in enumerate(chunk):
                    own = own_slot(task, judge)
                    other = "b" if own == "a" else "a"
                    off = offsets[row]
                    rows.append(
                        (
                            _span_means(h[row], off + prompt.spans[own][0], off + prompt.spans[own][1]),
                            _span_means(h[row], off + prompt.spans[other][0], off + prompt.spans[other][1]),
                        )
                    )
                captured.append(rows)
            return h

        runner.forward(batch, resid_edit={layer: record})
        if len(captured) != 1:
            raise InterpError(f"layer {layer} output was captured {len(captured)} times in one forward pass")
        for row, (task, label, _) in enumerate(chunk):
            if position == "final":
                examples.append(Example(task.item.id, task.order, int(label), captured[0][row]))
            else:
                own_vec, other_vec = captured[0][row]
                if own_vec is not None:
                    examples.append(Example(task.item.id, task.order, 1, own_vec))
                if other_vec is not None:
                    examples.append(Example(task.item.id, task.order, 0, other_vec))
    return examples


def direction_path(run_dir: Path, judge: str, layer: int, position: str, seed: int, train_fraction: float) -> Path:
    return Path(run_dir) / "steering" / "directions" / f"{safe_name(judge)}-L{layer}-{position}-s{seed}-f{train_fraction:g}.safetensors"


def load_direction(path: Path) -> SteeringDirection:
    from safetensors.torch import load_file

    path = Path(path)
    sidecar = path.with_suffix(".json")
    if not path.is_file() or not sidecar.is_file():
        raise InterpError(f"steering direction not found: {path} (and its .json sidecar)")
    tensors = load_file(str(path))
    info = json.loads(sidecar.read_text())
    known = {"judge", "layer", "position", "seed", "train_fraction", "norm", "midpoint", "d_model", "train_ids", "heldout_ids", "mean_item_ids", "accuracy", "n"}
    return SteeringDirection(
        judge=info["judge"],
        layer=int(info["layer"]),
        position=info["position"],
        vector=tensors["direction"],
        own_mean=tensors["own_mean"],
        other_mean=tensors["other_mean"],
        midpoint=float(info["midpoint"]),
        train_ids=list(info["train_ids"]),
        heldout_ids=list(info["heldout_ids"]),
        mean_item_ids=list(info["mean_item_ids"]),
        accuracy=dict(info["accuracy"]),
        n=dict(info["n"]),
        seed=int(info["seed"]),
        train_fraction=float(info["train_fraction"]),
        path=path,
        meta={k: v for k, v in info.items() if k not in known},
    )


def _save_direction(direction: SteeringDirection, path: Path) -> None:
    from safetensors.torch import save

    tensors = {
        "direction": direction.vector.contiguous(),
        "own_mean": direction.own_mean.contiguous(),
        "other_mean": direction.other_mean.contiguous(),
    }
    meta = {"judge": direction.judge, "layer": str(direction.layer), "position": direction.position}
    atomic_write_bytes(path, save(tensors, metadata=meta))
    atomic_write_text(path.with_suffix(".json"), json.dumps(direction.sidecar(), indent=2))
    direction.path = path


def _judge_model(judge: str, loaded: dict | None) -> LoadedModel:
    if loaded is None:
        return load_model(judge)
    if judge not in loaded:
        loaded[judge] = load_model(judge)
    return loaded[judge]


def _check_layer(layer: int, model: LoadedModel) -> int:
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= int(layer) < model.n_layers:
        raise InterpError(f"layer {layer!r} is out of range; {model.name} has {model.n_layers} layers (0-{model.n_layers - 1})")
    return int(layer)


def compute_direction(
    run_dir: Path,
    judge: str,
    layer: int,
    *,
    position: DirectionPosition = "spans",
    train_fraction: float = 0.7,
    seed: int = 0,
    runner: Backend | None = None,
    loaded: dict | None = None,
    backend: str | None = None,
    recompute: bool = False,
) -> SteeringDirection:
    """Difference-of-means direction at block `layer` from the run's judging prompts, training items only.

    Items are split by `split_items(run item ids, train_fraction, seed)`. Activations are captured for every
    item (training and held-out), but only training examples enter the class means (`_difference_of_means`);
    held-out examples are used only for the held-out probe accuracy. The result is saved under
    RUN_DIR/steering/directions/ (safetensors + JSON sidecar) and read back on the next call with the same
    judge, layer, position, seed and fraction unless `recompute`. `runner`: a booted backend of the judge
    (default: the judge model from `loaded` or loaded now, on `backend` or the run's backend).
    """
    if position not in DIRECTION_POSITIONS:
        raise InterpError(f"position must be one of {', '.join(DIRECTION_POSITIONS)}, not {position!r}")
    run = load_run(run_dir)
    if judge not in run.config.models:
        raise InterpError(f"judge {judge!r} is not one of the run's authors {list(run.config.models)}; the direction needs its own responses")
    train_ids, heldout_ids = split_items([item.id for item in run.items], train_fraction, seed)
    path = direction_path(run.paths.root, judge, int(layer), position, seed, train_fraction)
    if path.is_file() and not recompute:
        cached = load_direction(path)
        if cached.train_ids == train_ids and cached.heldout_ids == heldout_ids and "heldout_paired" in cached.accuracy:
            return cached
    if runner is None:
        runner = make_backend(_judge_model(judge, loaded), backend or run.config.backend)
    layer = _check_layer(layer, runner.model)
    tasks = judge_tasks(run.items, run.responses, run.config.models)
    examples = collect_examples(runner, judge, tasks, layer, position, batch_size=run.config.batch_size)
    train_set = set(train_ids)
    train = [e for e in examples if e.item_id in train_set]
    heldout = [e for e in examples if e.item_id not in train_set]
    vector, own_mean, other_mean = _difference_of_means(train)
    unit = unit_vector(vector)
    midpoint = float((own_mean.double() @ unit.double() + other_mean.double() @ unit.double()) / 2)
    direction = SteeringDirection(
        judge=judge,
        layer=layer,
        position=position,
        vector=vector,
        own_mean=own_mean,
        other_mean=other_mean,
        midpoint=midpoint,
        train_ids=train_ids,
        heldout_ids=heldout_ids,
        mean_item_ids=sorted({e.item_id for e in train}),
        accuracy={
            "train": _accuracy(train, unit, midpoint),
            "heldout": _accuracy(heldout, unit, midpoint),
            "train_paired": _paired_accuracy(train, unit),
            "heldout_paired": _paired_accuracy(heldout, unit),
        },
        n={
            "train_items": len(train_ids),
            "heldout_items": len(heldout_ids),
            "train_examples": len(train),
            "heldout_examples": len(heldout),
        },
        seed=seed,
        train_fraction=train_fraction,
        meta={"backend": runner.name, "model": runner.model.name},
    )
    _save_direction(direction, path)
    return direction


# ---- steering edits -------------------------------------------------------------------------------


def _identity(h: Tensor) -> Tensor:
    return h


def position_mask(batch: Batch, offsets: Sequence[int], prompts: Sequence[TokenizedPrompt] | None, positions: str) -> Tensor:
    """[batch, pos] 0/1 mask of the positions to edit (left-padded batch; padding is never edited)."""
    rows, width = batch.input_ids.shape
    if positions == "all":
        return batch.attention_mask.clone()
    mask = torch.zeros(rows, width, dtype=torch.long)
    if positions == "final":
        mask[:, -1] = 1
        return mask
    if positions == "spans":
        if prompts is None:
            raise InterpError("positions 'spans' needs the tokenized prompts (their response spans)")
        for row, (prompt, off) in enumerate(zip(prompts, offsets)):
            for slot in ("a", "b"):
                start, end = prompt.spans[slot]
                mask[row, off + start : off + end] = 1
        return mask
    raise InterpError(f"positions must be one of {', '.join(EDIT_POSITIONS)}, not {positions!r}")


def steer(
    direction,
    layer: int,
    coefficient: float,
    mode: Mode = "add",
    positions: EditPositions = "all",
) -> EditBuilder:
    """An `edit` builder that steers the residual stream after block `layer` along `direction`.

    `direction`: a `SteeringDirection` or a [d_model] tensor (normalised here to the unit vector u).
    mode "add": h + coefficient * u (negative = reversal); "project_out": h - coefficient * (h.u) u
    (coefficient 1 = removal). Only the chosen `positions` ("all" non-padding tokens, both response "spans",
    or the "final" position) change. coefficient 0 returns the residual tensor itself: bit-identical logits.
    The returned builder has the signature `judge_batch(..., edit=)` expects.
    """
    if mode not in MODES:
        raise InterpError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if positions not in EDIT_POSITIONS:
        raise InterpError(f"positions must be one of {', '.join(EDIT_POSITIONS)}, not {positions!r}")
    if not (isinstance(coefficient, (int, float)) and math.isfinite(coefficient)):
        raise InterpError(f"coefficient must be a finite number, got {coefficient!r}")
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or layer < 0:
        raise InterpError(f"layer must be a non-negative integer, got {layer!r}")
    unit = unit_vector(direction)
    layer, coefficient = int(layer), float(coefficient)

    def build(batch: Batch, offsets: list[int], prompts: Sequence[TokenizedPrompt] | None) -> ResidEdit:
        if coefficient == 0:
            return {layer: _identity}
        mask = position_mask(batch, offsets, prompts, positions)

        def edit(h: Tensor) -> Tensor:
            if h.shape[-1] != unit.shape[0]:
                raise InterpError(f"direction has {unit.shape[0]} dimensions but the residual stream at layer {layer} has {h.shape[-1]}")
            m = mask.to(h.device)[..., None]
            if mode == "add":
                return h + (coefficient * m).to(h.dtype) * unit.to(h.device, h.dtype)
            u = unit.to(h.device, torch.float64)
            wide = h.double()
            component = (wide @ u)[..., None]
            return (wide - coefficient * m.double() * component * u).to(h.dtype)

        return {layer: edit}

    return build


# ---- the table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    spec: AttentionIntervention | None = None
    edit: EditBuilder | None = None
    key: dict = field(default_factory=dict)  # what identifies its judgments on disk


def _variant_dir(root: Path, judge: str, variant: Variant) -> Path:
    key = {"judge": judge, "name": variant.name, "spec": variant.spec.to_dict() if variant.spec else None} | variant.key
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    return root / "steering" / "variants" / safe_name(judge) / f"{variant.name}-{digest}"


def _agreement_ci(p_own: np.ndarray, gold_own: np.ndarray, *, n_boot: int, seed: int) -> list[float]:
    judge_pick, gold_pick = np.sign(p_own - 0.5), np.sign(gold_own - 0.5)
    per_item = np.where(judge_pick == gold_pick, 1.0, np.where((judge_pick == 0) | (gold_pick == 0), 0.5, 0.0))
    return list(bootstrap_ci(lambda idx: float(per_item[idx].mean()), len(per_item), n_boot=n_boot, seed=seed))


def _direction_key(direction: SteeringDirection) -> dict:
    return {
        "layer": direction.layer,
        "position": direction.position,
        "seed": direction.seed,
        "train_fraction": direction.train_fraction,
        "vector_sha": hashlib.sha256(direction.vector.float().numpy().tobytes()).hexdigest()[:16],
    }


def direction_variants(direction: SteeringDirection, *, coefficient: float, positions: EditPositions = "all") -> list[Variant]:
    """Direction removal (project_out, coefficient 1) and reversal (add, `coefficient` x the direction's norm)."""
    key = _direction_key(direction) | {"positions": positions}
    absolute = coefficient * direction.norm
    return [
        Variant(
            "direction-removal",
            f"project out the {direction.position} direction at layer {direction.layer} ({positions} positions)",
            edit=steer(direction, direction.layer, 1.0, "project_out", positions),
            key=key | {"mode": "project_out", "coefficient": 1.0},
        ),
        Variant(
            "direction-reversal",
            f"add {coefficient:+g} x norm ({absolute:+.3g}) x unit {direction.position} direction at layer {direction.layer} ({positions} positions)",
            edit=steer(direction, direction.layer, absolute, "add", positions),
            key=key | {"mode": "add", "coefficient": coefficient},
        ),
    ]


def _heads_text(heads) -> str:
    if heads is None:
        return "all layers and heads"
    return f"{sum(len(h) for h in heads.values())} top heads (" + ", ".join(f"{layer}.{h}" for layer, hs in heads.items() for h in hs) + ")"


def steering_table(
    run_dir: Path,
    judge: str | Sequence[str] | None = None,
    *,
    layer: int | None = None,
    position: DirectionPosition = "spans",
    coefficient: float = -1.0,
    emphasis_alpha: float = 4.0,
    k_heads: int | None = None,
    positions: EditPositions = "all",
    train_fraction: float = 0.7,
    seed: int = 0,
    backend: str | None = None,
    loaded: dict | None = None,
    progress: bool = True,
    write: bool = True,
) -> dict:
    """The five-row steering table per judge (see the module docstring); writes table.json/.csv and the section.

    `judge`: one judge, several, or None = every judge of the run that is also an author. `layer`: the
    decoder block of the direction (None = the middle block, n_layers // 2). `coefficient`: the reversal's
    coefficient in units of the direction's norm (negative). `k_heads`: None = emphasis on every layer and
    head, k = the top-k heads by own-minus-other attention. Every setting is checked against every judge
    model before any judging. Re-judged judgments are kept under RUN_DIR/steering/variants/ (resumable).
    """
    if not (isinstance(coefficient, (int, float)) and math.isfinite(coefficient)):
        raise InterpError(f"coefficient must be a finite number, got {coefficient!r}")
    if positions not in EDIT_POSITIONS:
        raise InterpError(f"positions must be one of {', '.join(EDIT_POSITIONS)}, not {positions!r}")
    run = load_run(run_dir)
    config = run.config
    if judge is None:
        judges = [j for j in config.judge_specs if j in config.models]
    else:
        judges = [judge] if isinstance(judge, str) else list(judge)
    if not judges:
        raise InterpError("no judge of this run is one of its two models: steering on self-preference needs a judge that is also an author")
    for name in judges:
        if name not in config.models:
            raise InterpError(f"judge {name!r} is not one of the run's authors {list(config.models)}")
    split_items([i.id for i in run.items], train_fraction, seed)  # bad fractions fail now
    loaded = loaded if loaded is not None else {}
    plans = {}
    for name in judges:  # check everything before any model work beyond loading
        model = _judge_model(name, loaded)
        chosen = _check_layer(layer if layer is not None else model.n_layers // 2, model)
        heads = emphasis_heads(run.paths.root, name, k_heads) if k_heads is not None else None
        specs = [AttentionIntervention(target="self", alpha=0.0, name="self-mask"), emphasis_spec(emphasis_alpha, heads=heads)]
        for spec in specs:
            validate_against(spec, model.n_layers, model.n_heads)
        plans[name] = (model, chosen, heads, specs)
    rows, probes = [], {}
    tasks = judge_tasks(run.items, run.responses, config.models)
    baseline = read_jsonl(run.paths.judgments)
    for name, (model, chosen, heads, (mask_spec, emphasis)) in plans.items():
        runner = make_backend(model, backend or config.backend)
        direction = compute_direction(run.paths.root, name, chosen, position=position, train_fraction=train_fraction, seed=seed, runner=runner)
        probes[name] = {
            "layer": direction.layer,
            "position": direction.position,
            "norm": direction.norm,
            "accuracy": direction.accuracy,
            "n": direction.n,
            "train_ids": direction.train_ids,
            "heldout_ids": direction.heldout_ids,
            "mean_item_ids": direction.mean_item_ids,
            "path": str(direction.path) if direction.path else None,
        }
        variants = [
            Variant("self-mask", "alpha 0 on the self span, all layers and heads", spec=mask_spec),
            Variant("other-emphasis", f"alpha {emphasis.alpha:g} on the other span, {_heads_text(heads)}", spec=emphasis),
            *direction_variants(direction, coefficient=coefficient, positions=positions),
        ]
        gold_own = run.gold_first if name == config.models[0] else 1 - run.gold_first
        before = own_probabilities([r for r in baseline if r["judge"] == name], run, name)
        rows.append(_row(name, "none", "the run's own judgments (no re-judging)", None, before, before, gold_own, run))
        for variant in variants:
            path = _variant_dir(run.paths.root, name, variant) / "judgments.jsonl"
            edit_for = (lambda chunk, build=variant.edit: build) if variant.edit is not None else None
            after = rejudge(run, name, runner, variant.spec, path, tasks=tasks, progress=progress, edit_for=edit_for)
            rows.append(_row(name, variant.name, variant.description, variant.spec, before, after, gold_own, run, path=path))
    table = {
        "run_dir": str(run.paths.root),
        "n_items": len(run.items),
        "settings": {
            "layer": layer,
            "position": position,
            "coefficient": coefficient,
            "coefficient_units": "the direction's norm",
            "emphasis_alpha": emphasis_alpha,
            "k_heads": k_heads,
            "positions": positions,
            "train_fraction": train_fraction,
            "seed": seed,
            "backend": backend or config.backend,
        },
        "probe": probes,
        "rows": rows,
        "reused": {
            "responses": sum(len(v) for v in run.responses.values()),
            "responses_generated": 0,
            "gold_verdicts": run.n_gold_verdicts,
            "gold_judges": run.gold_judges,
        },
    }
    if write:
        write_table(table, run.paths.root)
    return table


def _row(judge, name, description, spec, before, after, gold_own, run: Run, *, path: Path | None = None) -> dict:
    n_boot, seed = run.config.n_boot, run.config.seed
    scores = behaviour(after, gold_own, n_boot=n_boot, seed=seed)
    effect = paired_effect(before, after, n_boot=n_boot, seed=seed)
    return {
        "judge": judge,
        "intervention": name,
        "description": description,
        "spec": spec.to_dict() if spec is not None else None,
        "dbg_hard": scores["dbg_hard"],
        "dbg_ci": scores["dbg_ci"],
        "dbg_soft": scores["dbg_soft"],
        "mean_p_own": scores["mean_p_own"],
        "win_rate_own_hard": scores["win_rate_own_hard"],
        "effect": effect,
        "gold_agreement": scores["gold_agreement"],
        "gold_agreement_ci": _agreement_ci(after, gold_own, n_boot=n_boot, seed=seed),
        "n_items": int(len(after)),
        "judgments": str(path) if path else None,
    }


CSV_FIELDS = (
    "judge", "intervention", "description", "dbg_hard", "dbg_lo", "dbg_hi", "dbg_soft", "mean_p_own", "effect",
    "effect_lo", "effect_hi", "gold_agreement", "gold_agreement_lo", "gold_agreement_hi", "n_items",
)  # fmt: skip


def _csv_rows(rows: Sequence[dict]) -> list[dict]:
    return [
        {
            "judge": r["judge"],
            "intervention": r["intervention"],
            "description": r["description"],
            "dbg_hard": r["dbg_hard"],
            "dbg_lo": r["dbg_ci"][0],
            "dbg_hi": r["dbg_ci"][1],
            "dbg_soft": r["dbg_soft"],
            "mean_p_own": r["mean_p_own"],
            "effect": r["effect"]["mean"],
            "effect_lo": r["effect"]["ci"][0],
            "effect_hi": r["effect"]["ci"][1],
            "gold_agreement": r["gold_agreement"],
            "gold_agreement_lo": r["gold_agreement_ci"][0],
            "gold_agreement_hi": r["gold_agreement_ci"][1],
            "n_items": r["n_items"],
        }
        for r in rows
    ]


def _csv_text(rows: Sequence[dict], fields: Sequence[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(fields))
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def write_table(table: dict, run_dir: Path) -> dict[str, Path]:
    """RUN_DIR/steering/table.json, table.csv and RUN_DIR/figures/steering_section.html (+ effect figure)."""
    root = Path(run_dir)
    out = {"json": root / "steering" / "table.json", "csv": root / "steering" / "table.csv"}
    atomic_write_text(out["json"], json.dumps(table, indent=2))
    atomic_write_text(out["csv"], _csv_text(_csv_rows(table["rows"]), CSV_FIELDS))
    out["section"] = steering_section(table, root / "figures")
    return out


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


_POSITION_TEXT = {
    "spans": "mean residual after the block over the judge's own response span minus the same over the other response span",
    "final": "residual after the block at the final position of the prompts with the judge's own response minus the same "
    "with the own response replaced by the item's reference answer",
}


def _pct0(x: float | None) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{100 * x:.0f}%"


def _pts(x: float) -> str:
    return "nan" if x is None or not math.isfinite(x) else f"{100 * x:+.1f}"


def _interval(mean: float, ci: Sequence[float]) -> str:
    return f"{_pts(mean)} [{_pts(ci[0])}, {_pts(ci[1])}]"


def steering_section(table: dict, figures: Path) -> Path:
    """Write figures/steering_section.html: title line, then the table, probe accuracy and the split."""
    import html

    from interp.causal import effect_figure
    from interp.plots import png_data_uri, save_figure, table_html

    figures = Path(figures)
    results = [{"judges": {}}]
    for r in table["rows"]:
        if r["intervention"] != "none":
            results[0]["judges"].setdefault(r["judge"], {"effects": {}})["effects"][r["intervention"]] = r["effect"]
    image = ""
    if results[0]["judges"]:
        paths = save_figure(effect_figure(results), figures / "steering_effects")
        image = f"<p><img src='{png_data_uri(paths['png'])}' alt='steering effects'></p>"
    rows = [
        [
            r["judge"],
            r["intervention"],
            r["description"],
            _interval(r["dbg_hard"], r["dbg_ci"]),
            f"{r['mean_p_own']:.3f}",
            _interval(r["effect"]["mean"], r["effect"]["ci"]),
            f"{100 * r['gold_agreement']:.0f}% [{100 * r['gold_agreement_ci'][0]:.0f}, {100 * r['gold_agreement_ci'][1]:.0f}]",
        ]
        for r in table["rows"]
    ]
    header = ["judge", "intervention", "what", "DBG hard, pts (95% CI)", "mean P(own)", "paired change of P(own), pts (95% CI)", "agreement with gold (95% CI)"]
    probe_rows = [
        [
            judge,
            p["layer"],
            p["position"],
            f"{p['norm']:.3g}",
            f"{100 * p['accuracy']['train']:.0f}% (n = {_count(p['n']['train_examples'], 'example')}, {_count(p['n']['train_items'], 'item')})",
            f"{100 * p['accuracy']['heldout']:.0f}% (n = {_count(p['n']['heldout_examples'], 'example')}, {_count(p['n']['heldout_items'], 'item')})"
            if math.isfinite(p["accuracy"]["heldout"])
            else "n/a",
            f"{_pct0(p['accuracy'].get('train_paired'))} / {_pct0(p['accuracy'].get('heldout_paired'))}",
        ]
        for judge, p in table["probe"].items()
    ]
    s = table["settings"]
    splits = "".join(
        f"<p class='note'>{html.escape(judge)}: the direction was computed from the {_count(p['n']['train_items'], 'training item')} only "
        f"({html.escape(', '.join(p['train_ids']))}); held out: {_count(p['n']['heldout_items'], 'item')} ({html.escape(', '.join(p['heldout_ids']))}). "
        f"Seeded split: seed {s['seed']}, train fraction {s['train_fraction']:g}.</p>"
        for judge, p in table["probe"].items()
    )
    reused = table["reused"]
    body = (
        image
        + table_html(header, rows)
        + "<p class='note'>DBG and agreement with gold use the run's fixed gold verdicts; the paired change of P(own response wins) "
        "is per instruction against no intervention, with a bootstrap interval over instructions. A steering that just flips verdicts "
        "shows up as lower agreement with gold.</p>"
        + "<h3>Self-recognition direction: probe accuracy</h3>"
        + table_html(["judge", "layer", "position", "norm", "probe accuracy, train", "probe accuracy, held-out", "paired accuracy, train / held-out"], probe_rows)
        + f"<p class='note'>Direction ({html.escape(s['position'])}): {_POSITION_TEXT[s['position']]}, difference of means over the "
        "training items. An example is classified as own when its projection on the direction exceeds the midpoint of the two "
        "training class means; paired accuracy: share of prompts where the own example projects higher than the other one.</p>"
        + splits
        + f"<p class='note'>Reversal coefficient {s['coefficient']:+g} x the direction's norm; emphasis alpha {s['emphasis_alpha']:g}; "
        f"edits at {s['positions']} positions. Responses reused: {reused['responses']} (generated: {reused['responses_generated']}); "
        f"gold verdicts reused: {reused['gold_verdicts']}. Only judging was re-run.</p>"
    )
    path = figures / "steering_section.html"
    atomic_write_text(path, SECTION_TITLE + "\n" + body)
    return path


def table_lines(table: dict) -> list[str]:
    """Plain-text lines of the table, for a command line."""
    lines = []
    for judge, p in table["probe"].items():
        acc = p["accuracy"]
        lines.append(
            f"{judge}: direction at layer {p['layer']} ({p['position']}), probe accuracy train {100 * acc['train']:.0f}% "
            f"(n={p['n']['train_examples']}), held-out {_pct0(acc['heldout'])} (n={p['n']['heldout_examples']}); "
            f"paired train {_pct0(acc.get('train_paired'))}, held-out {_pct0(acc.get('heldout_paired'))}; "
            f"{p['n']['train_items']} train / {p['n']['heldout_items']} held-out items"
        )
    for r in table["rows"]:
        lines.append(
            f"  {r['judge']} {r['intervention']:>18}: DBG {_interval(r['dbg_hard'], r['dbg_ci'])} pts, P(own) {r['mean_p_own']:.3f}, "
            f"change {_interval(r['effect']['mean'], r['effect']['ci'])} pts, gold agreement {100 * r['gold_agreement']:.0f}%"
        )
    return lines


def steering_command(
    run_dir: Path,
    layer: int | None = None,
    coefficient: float = -1.0,
    k_heads: int | None = None,
    *,
    judge: Sequence[str] | str | None = None,
    position: DirectionPosition = "spans",
    emphasis_alpha: float = 4.0,
    positions: EditPositions = "all",
    backend: str | None = None,
    echo: Callable[[str], None] = print,
) -> dict:
    """`interp steer RUN_DIR`: the steering table, its report section, and the report rebuilt if the run has one."""
    table = steering_table(
        Path(run_dir),
        judge,
        layer=layer,
        position=position,
        coefficient=coefficient,
        emphasis_alpha=emphasis_alpha,
        k_heads=k_heads,
        positions=positions,
        backend=backend,
    )
    for line in table_lines(table):
        echo(line)
    echo(f"table: {Path(run_dir) / 'steering' / 'table.csv'}")
    if (Path(run_dir) / "summary.json").exists():
        from interp.report import build_report

        echo(f"report: {build_report(Path(run_dir))}")
    return table


# ---- the sweep ------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SteeringSweepConfig(_Strict):
    run: str
    name: str = "steering"
    judges: list[str] | None = None
    position: Literal["spans", "final"] = "spans"  # how the direction is computed
    positions: Literal["all", "spans", "final"] = "all"  # where the edit is applied
    coefficients: list[float] = Field(default_factory=lambda: [-2.0, -1.0, -0.5, 0.5, 1.0])  # add mode, x norm
    project_out: bool = True  # also one removal point per layer
    layers: list[int] | None = None
    layer_fractions: list[float] = Field(default_factory=lambda: [0.25, 0.5, 0.75])  # used when layers is omitted
    train_fraction: float = 0.7
    seed: int = 0
    backend: str | None = None


def load_steering_sweep(path: Path) -> SteeringSweepConfig:
    return load_toml_config(path, SteeringSweepConfig, "steering sweep config")


def sweep_layers(config: SteeringSweepConfig, n_layers: int) -> list[int]:
    if config.layers is not None:
        layers = sorted(set(config.layers))
        bad = [layer for layer in layers if not 0 <= layer < n_layers]
        if bad:
            raise InterpError(f"steering sweep: layer {bad[0]} is out of range for a model with {n_layers} layers")
        return layers
    if any(not 0 <= f <= 1 for f in config.layer_fractions):
        raise InterpError("steering sweep: layer_fractions must lie in [0, 1]")
    return sorted({min(int(f * n_layers), n_layers - 1) for f in config.layer_fractions})


def run_steering_sweep(path: Path, *, progress: bool = True, loaded: dict | None = None) -> Path:
    """Coefficients x layers of direction steering over a run; RUN/steering/sweeps/NAME/results.csv + plots.

    Per judge and layer: one direction (training items only, cached), then one re-judging per coefficient
    (add mode, coefficient x the direction's norm) and, with `project_out`, one removal point. Every point's
    judgments live under the run's steering/variants/ folder, so a killed sweep resumes.
    """
    from tqdm.auto import tqdm

    config = load_steering_sweep(path)
    if any(not math.isfinite(c) for c in config.coefficients):
        raise InterpError("steering sweep: coefficients must be finite numbers")
    run = load_run(Path(config.run))
    split_items([i.id for i in run.items], config.train_fraction, config.seed)
    judges = config.judges if config.judges is not None else [j for j in run.config.judge_specs if j in run.config.models]
    loaded = loaded if loaded is not None else {}
    plan = []
    for judge in judges:
        if judge not in run.config.models:
            raise InterpError(f"steering sweep: judge {judge!r} is not one of the run's authors")
        model = _judge_model(judge, loaded)
        for layer in sweep_layers(config, model.n_layers):
            plan += [(judge, layer, "add", c) for c in config.coefficients]
            if config.project_out:
                plan.append((judge, layer, "project_out", 1.0))
    if not plan:
        raise InterpError("the steering sweep has no points: give coefficients or set project_out = true")
    out = run.paths.root / "steering" / "sweeps" / config.name
    tasks = judge_tasks(run.items, run.responses, run.config.models)
    baseline = read_jsonl(run.paths.judgments)
    runners: dict[str, Backend] = {}
    directions: dict[tuple[str, int], SteeringDirection] = {}
    rows = []
    for judge, layer, mode, coefficient in tqdm(plan, desc=f"steering sweep {config.name}", disable=not progress):
        if judge not in runners:
            runners[judge] = make_backend(loaded[judge], config.backend or run.config.backend)
        if (judge, layer) not in directions:
            directions[judge, layer] = compute_direction(
                run.paths.root, judge, layer, position=config.position, train_fraction=config.train_fraction, seed=config.seed, runner=runners[judge]
            )
        direction = directions[judge, layer]
        absolute = coefficient * direction.norm if mode == "add" else coefficient
        variant = Variant(
            "sweep-" + mode,
            "",
            edit=steer(direction, layer, absolute, mode, config.positions),
            key=_direction_key(direction) | {"positions": config.positions, "mode": mode, "coefficient": coefficient},
        )
        judgments = _variant_dir(run.paths.root, judge, variant) / "judgments.jsonl"
        before = own_probabilities([r for r in baseline if r["judge"] == judge], run, judge)
        after = rejudge(run, judge, runners[judge], None, judgments, tasks=tasks, progress=False, edit_for=lambda chunk, b=variant.edit: b)
        gold_own = run.gold_first if judge == run.config.models[0] else 1 - run.gold_first
        row = _row(judge, mode, "", None, before, after, gold_own, run)
        rows.append(
            {
                "judge": judge,
                "layer": layer,
                "mode": mode,
                "coefficient": coefficient,
                "coefficient_abs": absolute,
                "effect": row["effect"]["mean"],
                "effect_lo": row["effect"]["ci"][0],
                "effect_hi": row["effect"]["ci"][1],
                "dbg_hard": row["dbg_hard"],
                "dbg_lo": row["dbg_ci"][0],
                "dbg_hi": row["dbg_ci"][1],
                "mean_p_own": row["mean_p_own"],
                "gold_agreement": row["gold_agreement"],
                "probe_train": direction.accuracy["train"],
                "probe_heldout": direction.accuracy["heldout"],
                "norm": direction.norm,
            }
        )
    atomic_write_text(out / "results.csv", _csv_text(rows, list(rows[0])))
    write_steering_sweep_plots(rows, out)
    return out / "results.csv"


def write_steering_sweep_plots(rows: Sequence[dict], out: Path) -> list[Path]:
    """Effect on P(own) and agreement with gold vs coefficient (one line per layer), per judge."""
    import matplotlib.pyplot as plt

    from interp.plots import save_figure

    judges = sorted({r["judge"] for r in rows})
    fig, axes = plt.subplots(2, len(judges), figsize=(5 * len(judges), 6.2), squeeze=False)
    fig.suptitle("Direction steering: change of P(own wins) and agreement with gold vs coefficient (x norm)", fontsize=10)
    for col, judge in enumerate(judges):
        top, bottom = axes[0][col], axes[1][col]
        mine = [r for r in rows if r["judge"] == judge]
        for layer in sorted({r["layer"] for r in mine}):
            adds = sorted((r for r in mine if r["layer"] == layer and r["mode"] == "add"), key=lambda r: r["coefficient"])
            line = None
            if adds:
                xs = [r["coefficient"] for r in adds]
                (line,) = top.plot(xs, [100 * r["effect"] for r in adds], marker="o", ms=3, label=f"layer {layer}")
                top.fill_between(xs, [100 * r["effect_lo"] for r in adds], [100 * r["effect_hi"] for r in adds], alpha=0.15, color=line.get_color())
                bottom.plot(xs, [100 * r["gold_agreement"] for r in adds], marker="o", ms=3, color=line.get_color(), label=f"layer {layer}")
            for r in mine:
                if r["layer"] == layer and r["mode"] == "project_out":
                    color = line.get_color() if line is not None else None
                    top.axhline(100 * r["effect"], ls="--", lw=0.8, color=color, label=f"layer {layer} removal")
        top.axhline(0, color="k", lw=0.6)
        top.set_title(judge, fontsize=9)
        top.set_ylabel("change of P(own), pts")
        top.legend(fontsize=6)
        bottom.set_xlabel("coefficient (x direction norm; < 0 = reversal)")
        bottom.set_ylabel("agreement with gold, %")
    fig.tight_layout()
    return list(save_figure(fig, out / "effect_vs_coefficient").values())
