"""A self-recognition direction in the residual stream: difference of class means on training items only.

`compute_direction` re-builds the run's judging prompts exactly as
`interp.run.judging.run_judging` does (both orders), runs the judge once per batch and records the residual stream
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
residual norms, which can dominate span means and push the midpoint probe below chance). The direction is saved as
RUN_DIR/steering/directions/<judge>-L<layer>-<position>-s<seed>-f<frac> .safetensors (tensors "direction" = own mean -
other mean, "own_mean", "other_mean") with a JSON sidecar
(layer, position, split item ids, the item ids that entered the means, accuracies, norm, midpoint).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
import torch
from torch import Tensor

from interp.core.backends import Backend, Edits, left_pad
from interp.core.models import LoadedModel, own_model
from interp.core.models import own_slot as core_own_slot
from interp.core.placement import to_host
from interp.core.spans import TokenizedPrompt, tokenized_judge_prompt
from interp.engine.judges import Judges, judge_pool
from interp.engine.variants import digest, run_identity, self_judges
from interp.errors import InterpError
from interp.hooks.steering import unit_vector
from interp.results import codec
from interp.results.studies import DirectionSidecar
from interp.run.judging import JudgeTask, judge_tasks
from interp.run.store import Run, read_run
from interp.splits import split_ids
from interp.storage import atomic_write_bytes, path_label

DIRECTION_POSITIONS = ("spans", "final")
DirectionPosition = Literal["spans", "final"]


def judging_prompt(
    model: LoadedModel, task: JudgeTask, response_a: str | None = None, response_b: str | None = None
) -> TokenizedPrompt:
    """The judge prompt of one task exactly as `interp.run.judging.run_judging` builds it (optionally with a slot
    replaced)."""
    a = task.response_a if response_a is None else response_a
    b = task.response_b if response_b is None else response_b
    return tokenized_judge_prompt(model, task.item.task, task.item.query, a, b)


def own_slot(task: JudgeTask, judge: str) -> str:
    """The slot ("a" or "b") holding the judge's own model's response."""
    slot = core_own_slot(task.author_a, task.author_b, own_model(judge))
    if slot is None:
        raise InterpError(
            f"judge {judge!r} must be exactly one of the authors ({task.author_a!r}, {task.author_b!r}) to "
            "steer on its own response"
        )
    return slot


def steering_split(item_ids: Sequence[str], train_fraction: float = 0.7, seed: int = 0) -> tuple[list[str], list[str]]:
    """The steering direction's train / held-out split: `interp.splits.split_ids` (purpose "steering-split")."""
    return split_ids(
        item_ids, train_fraction, seed, purpose="steering-split", what="train_fraction", parts=("train", "held-out")
    )


@dataclass(frozen=True)
class Example:
    """One residual vector with its class: label 1 = own (own span / own response present), 0 = other."""

    item_id: str
    order: str
    label: int
    vector: Tensor


@dataclass
class SteeringDirection:
    """A difference-of-means direction at one layer and position, with its class means, midpoint, split and probe
    accuracies; `path` is where it is saved (None until saved)."""

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
        """The direction's L2 norm."""
        return float(self.vector.norm())

    @property
    def unit(self) -> Tensor:
        """The direction scaled to norm 1."""
        return unit_vector(self.vector)

    def probe_record(self) -> dict:
        """Where the direction lies and how well it separates own from other (for tables and reports)."""
        return {
            "layer": self.layer,
            "position": self.position,
            "norm": self.norm,
            "accuracy": self.accuracy,
            "n": self.n,
            "train_ids": self.train_ids,
            "heldout_ids": self.heldout_ids,
            "mean_item_ids": self.mean_item_ids,
            "path": str(self.path) if self.path else None,
        }

    def sidecar(self) -> dict:
        """The JSON sidecar saved next to the tensors: everything but the tensors, `meta` included."""
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
    return to_host(h[start:end]).double().mean(0).float() if end > start else None


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
    return collect_examples_at(runner, judge, tasks, [layer], position, batch_size=batch_size)[layer]


def _direction_jobs(
    model, tasks: Sequence[JudgeTask], reader: str, position: DirectionPosition
) -> list[tuple[JudgeTask, int | None, TokenizedPrompt]]:
    """(task, label or None for "spans", prompt): one prompt per task for "spans"; for "final" the prompt (label 1)
    and, where the item has a reference, the prompt with the own response replaced by it (label 0)."""
    jobs: list[tuple[JudgeTask, int | None, TokenizedPrompt]] = []
    for task in tasks:
        slot = own_slot(task, reader)
        if position == "spans":
            jobs.append((task, None, judging_prompt(model, task)))
        elif task.item.reference:
            replaced = {"response_a" if slot == "a" else "response_b": task.item.reference}
            jobs.append((task, 1, judging_prompt(model, task)))
            jobs.append((task, 0, judging_prompt(model, task, **replaced)))
    return jobs


@dataclass(frozen=True)
class _Recorder:
    """One batch's residual readers: `at(layer)` records that block's output into `captured[layer]` (the final
    position's vector, or each row's own and other span means) and returns it unchanged."""

    captured: dict[int, list]
    chunk: list
    offsets: Sequence[int]
    position: DirectionPosition
    reader: str

    def at(self, layer: int):
        """The edit that records block `layer`'s output."""

        def record(h: Tensor) -> Tensor:
            if self.position == "final":
                self.captured[layer].append(to_host(h[:, -1].detach().float()))
            else:
                rows = []
                for row, (task, _, prompt) in enumerate(self.chunk):
                    own = own_slot(task, self.reader)
                    other = "b" if own == "a" else "a"
                    off = self.offsets[row]
                    rows.append(
                        (
                            _span_means(h[row], off + prompt.spans[own][0], off + prompt.spans[own][1]),
                            _span_means(h[row], off + prompt.spans[other][0], off + prompt.spans[other][1]),
                        )
                    )
                self.captured[layer].append(rows)
            return h

        return record


def collect_examples_at(
    runner: Backend,
    judge: str,
    tasks: Sequence[JudgeTask],
    layers: Sequence[int],
    position: DirectionPosition,
    *,
    batch_size: int = 8,
    own: str | None = None,
) -> dict[int, list[Example]]:
    """`collect_examples` at several blocks from the same passes: layer -> examples. `own`: the author whose
    response is "own" (default the judge's own model; a control judge reads the tested judge's)."""
    reader = own or judge  # own_slot reads own_model(reader): a plain model's is itself
    if position not in DIRECTION_POSITIONS:
        raise InterpError(f"position must be one of {', '.join(DIRECTION_POSITIONS)}, not {position!r}")
    model = runner.model
    jobs = _direction_jobs(model, tasks, reader, position)
    examples: dict[int, list[Example]] = {layer: [] for layer in layers}
    for start in range(0, len(jobs), batch_size):
        chunk = jobs[start : start + batch_size]
        batch, offsets = left_pad([p.input_ids for _, _, p in chunk], model.tokenizer.pad_token_id)
        captured: dict[int, list] = {layer: [] for layer in layers}

        record = _Recorder(captured, chunk, offsets, position, reader)
        runner.forward(batch, edits=Edits(resid={layer: record.at(layer) for layer in layers}))
        for layer in layers:
            if len(captured[layer]) != 1:
                raise InterpError(f"layer {layer} output was captured {len(captured[layer])} times in one forward pass")
            for row, (task, label, _) in enumerate(chunk):
                if position == "final":
                    examples[layer].append(Example(task.item.id, task.order, int(label), captured[layer][0][row]))
                else:
                    own_vec, other_vec = captured[layer][0][row]
                    if own_vec is not None:
                        examples[layer].append(Example(task.item.id, task.order, 1, own_vec))
                    if other_vec is not None:
                        examples[layer].append(Example(task.item.id, task.order, 0, other_vec))
    return examples


@dataclass(frozen=True)
class LayerDirection:
    """A self-recognition direction at one layer (own-span mean minus other-span mean on the fitting items) and
    how well it tells the own answer from the other on the scoring items (paired accuracy)."""

    layer: int
    vector: Tensor
    paired_accuracy: float
    n_fit: int
    n_scored: int


def layer_directions(
    runner: Backend,
    judge: str,
    tasks: Sequence[JudgeTask],
    layers: Sequence[int],
    fit_ids: Sequence[str],
    score_ids: Sequence[str],
    *,
    batch_size: int = 8,
    own: str | None = None,
) -> list[LayerDirection]:
    """Per layer, the "spans" direction from `fit_ids`' prompts scored on `score_ids`' prompts (one pass per batch
    of prompts for every layer): the residual candidates of `interp.studies.explain`. `own`: as for
    `collect_examples_at`."""
    fit, scored = set(fit_ids), set(score_ids)
    wanted = [task for task in tasks if task.item.id in fit | scored]
    out = []
    for layer, examples in collect_examples_at(
        runner, judge, wanted, layers, "spans", batch_size=batch_size, own=own
    ).items():
        train = [e for e in examples if e.item_id in fit]
        test = [e for e in examples if e.item_id in scored]
        if not {e.label for e in train} >= {0, 1}:
            raise InterpError(f"layer {layer}: the fitting items give no own and other span to take a direction from")
        vector, _, _ = _difference_of_means(train)
        accuracy = _paired_accuracy(test, unit_vector(vector)) if test else float("nan")
        out.append(LayerDirection(layer, vector, accuracy, len(train), len(test)))
    return out


def direction_path(
    run: Run,
    judge: str,
    layer: int,
    position: str,
    seed: int,
    train_fraction: float,
    backend: str,
    train_items: Sequence[str] | None = None,
) -> Path:
    """Where a direction is cached: a readable label plus a hash of everything that determines it."""
    identity = {
        "run": run_identity(run),
        "judge": judge,
        "layer": layer,
        "position": position,
        "seed": seed,
        "train_fraction": train_fraction,
        "backend": backend,
    }
    if train_items is not None:
        identity["train_items"] = sorted(train_items)
    key = digest(identity)
    return run.dir.steering / "directions" / f"{path_label(judge)}-L{layer}-{position}-{key}.safetensors"


DIRECTION_META = ("backend", "model")  # what `SteeringDirection.meta` holds: who read the residuals


def load_direction(path: Path) -> SteeringDirection:
    """The direction saved at `path` (the .safetensors file and its .json sidecar); InterpError if either is missing."""
    from safetensors.torch import load_file

    path = Path(path)
    sidecar = path.with_suffix(".json")
    if not path.is_file() or not sidecar.is_file():
        raise InterpError(f"steering direction not found: {path} (and its .json sidecar)")
    tensors = load_file(str(path))
    info = codec.read_file(sidecar, DirectionSidecar)
    return SteeringDirection(
        judge=info.judge,
        layer=info.layer,
        position=info.position,
        vector=tensors["direction"],
        own_mean=tensors["own_mean"],
        other_mean=tensors["other_mean"],
        midpoint=info.midpoint,
        train_ids=list(info.train_ids),
        heldout_ids=list(info.heldout_ids),
        mean_item_ids=list(info.mean_item_ids),
        accuracy=dict(info.accuracy),
        n=dict(info.n),
        seed=info.seed,
        train_fraction=info.train_fraction,
        path=path,
        meta={key: getattr(info, key) for key in DIRECTION_META if key in info.model_fields_set},
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
    codec.write_file(path.with_suffix(".json"), DirectionSidecar, direction.sidecar())
    direction.path = path


def check_layer(layer: int, model: LoadedModel) -> int:
    """`layer` as an int when it is an integer index of one of the model's decoder layers; InterpError otherwise."""
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= int(layer) < model.n_layers:
        raise InterpError(
            f"layer {layer!r} is out of range; {model.name} has {model.n_layers} layers (0-{model.n_layers - 1})"
        )
    return int(layer)


def _direction_split(
    run: Run, train_fraction: float, seed: int, train_items: Sequence[str] | None
) -> tuple[list[str], list[str], float]:
    """(training ids, held-out ids, training fraction): `steering_split` of the run's items, or `train_items` and the
    rest (the fraction then what they make of the run)."""
    if train_items is None:
        train_ids, heldout_ids = steering_split([item.id for item in run.items], train_fraction, seed)
    else:
        chosen = set(train_items)
        train_ids, heldout_ids = (
            [i.id for i in run.items if i.id in chosen],
            [i.id for i in run.items if i.id not in chosen],
        )
        if not train_ids or not heldout_ids:
            raise InterpError(
                f"train_items must name some but not all of the run's {len(run.items)} items ({len(train_ids)} named)"
            )
        train_fraction = len(train_ids) / len(run.items)
    return train_ids, heldout_ids, train_fraction


def _fitted_direction(
    examples: list[Example], split: tuple[list[str], list[str]], judge: str, layer: int, position, seed, train_fraction
) -> SteeringDirection:
    """The difference of means of the training examples and its accuracies on both halves (`meta` empty)."""
    train_ids, heldout_ids = split
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
        meta={},
    )
    return direction


@dataclass(frozen=True)
class DirectionSplit:
    """How `compute_direction` splits the run's items into training and held-out: `steering_split(item ids,
    train_fraction, seed)`, or, with `train_items` (ids: e.g. a selection split), those and the rest."""

    train_fraction: float = 0.7
    seed: int = 0
    train_items: Sequence[str] | None = None


def compute_direction(
    run: Run | Path,
    judge: str,
    layer: int,
    *,
    position: DirectionPosition = "spans",
    split: DirectionSplit | None = None,
    judges: Judges | None = None,
    recompute: bool = False,
) -> SteeringDirection:
    """Difference-of-means direction at block `layer` from the run's judging prompts, training items only.

    Items are split by `split` (default `DirectionSplit()`): by `steering_split(run item ids, train_fraction,
    seed)`, or, with `train_items` (ids: e.g. a selection split), into those and the rest. Activations are captured
    for every item (training and held-out), but only training examples enter the class means (`_difference_of_means`);
    held-out examples are used only for the held-out probe accuracy. The result is saved under
    RUN_DIR/steering/directions/ (safetensors + JSON sidecar) and read back on the next call with the same
    judge, layer, position, seed, fraction and backend unless `recompute`. `judges`: the job's judge models
    and backends (default: a fresh pool on the run's backend).
    """
    if position not in DIRECTION_POSITIONS:
        raise InterpError(f"position must be one of {', '.join(DIRECTION_POSITIONS)}, not {position!r}")
    run = run if isinstance(run, Run) else read_run(run)
    self_judges(run, [judge])
    split = split if split is not None else DirectionSplit()
    seed, train_items = split.seed, split.train_items
    train_ids, heldout_ids, train_fraction = _direction_split(run, split.train_fraction, seed, train_items)
    judges = judges if judges is not None else judge_pool(run)
    runner = judges.runner(judge, run)
    layer = check_layer(layer, runner.model)
    path = direction_path(run, judge, layer, position, seed, train_fraction, runner.name, train_items)
    if path.is_file() and not recompute:
        return load_direction(path)
    tasks = judge_tasks(run.items, run.responses, run.config.models)
    examples = collect_examples(runner, judge, tasks, layer, position, batch_size=run.config.batch_size)
    direction = _fitted_direction(examples, (train_ids, heldout_ids), judge, layer, position, seed, train_fraction)
    direction.meta.update({"backend": runner.name, "model": runner.model.name})
    with run.dir.writer():
        _save_direction(direction, path)
    return direction
