"""LoRA training of a judge organism on the CPU: seeded, deterministic, inside a 30-minute budget.

What is computed:
- Examples: every training pair (`interp.organisms.data`) in both orders, each the toolkit's own judge prompt
  (`interp.core.spans.tokenized_judge_prompt`, chat template for SmolLM2) with the target P(A) = the pair's
  label mapped to the order (1, 0, or 0.5 for a tie).
- Loss at the final prompt position (the one whose next token is the verdict), with P(label) summed over the
  label's single-token spellings exactly as `interp.core.judge.label_tokens` reads it:
  `vocab`: -[t log P(A) + (1-t) log P(B)] with P over the whole vocabulary (also pushes mass onto the labels);
  `pair`:  the same with P renormalised over A and B (what the judge reports);
  `pair_mass`: `pair` plus -log(P(A) + P(B)) over the vocabulary, so that the label mass the toolkit's
  reliability check reads (`interp.metrics.dbg.MIN_LABEL_MASS`) rises too, without the two terms competing
  for the verdict.
- LoRA (peft) of rank <= 8 on the attention and MLP projections of the last `top_layers` decoder layers only.
  The layers below carry no adapter, so their output for a prompt never changes during training: it is
  computed once per example (no gradient, right-padded batches: padding after a prompt cannot change its
  causal hidden states) and cached; every training pass runs only the top layers from that cached hidden
  state (`interp.organisms.frozen`). `check_frozen_split` measures that this is the same function as the full model
  (Llama-style models, whose decoder input is the plain embedding).
- Optimizer: AdamW, gradient accumulation over `batch_size` examples (one example per pass: no padding),
  gradient-norm clipping, linear warm-up then linear decay (or constant). Example order per epoch is a seeded
  hash permutation (of pairs, both orders adjacent, with `orders_together`); LoRA init is seeded
  (`torch.manual_seed(seed)`); the thread count is fixed.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import torch
from tqdm.auto import tqdm

from interp.core.judge import label_tokens
from interp.core.models import LoadedModel, load_model
from interp.core.placement import input_device
from interp.core.spans import tokenized_judge_prompt
from interp.core.threads import following_free_cores, set_torch_threads
from interp.data import PACKAGED_SETS, Item, load_mtbench_questions
from interp.errors import InterpError
from interp.organisms.config import OrganismConfig, check_config_fits, check_fits_model
from interp.organisms.data import (
    DataMix,
    Planting,
    TrainPair,
    build_pairs,
    mtbench_question_file,
    pair_label,
    splits_of,
    unit_hash,
)
from interp.organisms.frozen import check_frozen_split, final_logits_from, frozen_states
from interp.run.responses import Decoding, generate_responses

MAX_SPLIT_ERROR = 1e-3  # largest |logit| difference allowed between the full model and cached + top layers


@dataclass(frozen=True)
class Example:
    """One training example: a judge prompt in one order, its target and gold P(A), the slots and their authors."""

    key: str  # pair key | order
    task: str
    input_ids: tuple[int, ...]
    target_a: float  # training target P(A)
    gold_a: float  # gold P(A) (differs from target_a where the planting flipped the label)
    spans: tuple[tuple[int, int], tuple[int, int]] = ((0, 0), (0, 0))  # slots A and B, token [start, end)
    authors: tuple[str, str] = ("", "")  # who wrote the answers in slots A and B


# ---- data --------------------------------------------------------------------------------------------


def organism_items(config: OrganismConfig) -> dict[str, list[Item]]:
    """The split's item sets split by item id, plus the MT-Bench questions and the `data.train_only` sets (all
    training data)."""
    splits = splits_of(config.split)
    splits["mtbench"] = load_mtbench_questions(mtbench_question_file()) if config.data.mtbench else []
    splits["train_only"] = [item for name in config.data.train_only for item in PACKAGED_SETS[name]()]
    return splits


# Rows a generation call of the training answers. Greedy: a run's default (`generation_batch_size`); a greedy answer
# does not depend on its batch (its key holds no batch size; the attention-routed recipe's 328 training answers came
# out the same text at 24 rows as at 8), and on the CPU 24 rows cost little more a step than 8. Sampled: 8, as their
# keys were made (a sampled answer is keyed by its batch-mates).
ANSWER_ROWS = 24
SAMPLED_ROWS = 8


def cached_answers(
    models: dict[str, LoadedModel],
    items: Sequence[Item],
    config: OrganismConfig,
    progress: bool = True,
    sample: int = 0,
) -> dict[str, dict[str, str]]:
    """Answers of each model (adapter off: the plain loaded models), from the on-disk cache or generated: greedy,
    or with `sample` = k >= 1 the k-th seeded sample at the config's temperature."""
    decoding = Decoding(
        max_words=config.data.max_words, max_new_tokens=config.data.max_new_tokens, batch_size=ANSWER_ROWS
    )
    if sample:
        decoding = replace(
            decoding,
            batch_size=SAMPLED_ROWS,
            temperature=config.data.sample_temperature,
            seed=int(unit_hash(config.data_seed_used, "sample", sample) * 2**31),
        )
    with following_free_cores():  # the training's fixed count is for its reductions; the answers' key never held it
        return {
            name: {r.item_id: r.text for r in generate_responses(model, items, decoding, name=name, progress=progress)}
            for name, model in models.items()
        }


def sampled_answers(
    models: dict[str, LoadedModel], items: Sequence[Item], config: OrganismConfig, progress: bool = True
) -> dict[str, dict[str, list[str]]]:
    """`data.samples` seeded sampled answers of each model to each item with a reference (the only items that
    make intact pairs): {model: {item id: [1st sample, 2nd, ...]}}."""
    drawn: dict[str, dict[str, list[str]]] = {name: {} for name in models}
    with_reference = [item for item in items if item.reference]
    for k in range(1, config.data.samples + 1) if with_reference else ():
        for name, by_item in cached_answers(models, with_reference, config, progress, sample=k).items():
            for item_id, text in by_item.items():
                drawn[name].setdefault(item_id, []).append(text)
    return drawn


def training_pairs(
    config: OrganismConfig, models: dict[str, LoadedModel], progress: bool = True
) -> tuple[list[TrainPair], list[float]]:
    """Pairs and their labels (gold, or planted) from the train split, the training-only sets and MT-Bench."""
    data = config.data
    splits = organism_items(config)
    planting = (
        Planting(config.planting.own_author, config.planting.share, config.planting.own_degraded)
        if config.planting.share > 0
        else None
    )
    mix = DataMix(
        intact_pairs=data.intact_pairs,
        degraded_per_item=data.degraded_per_item,
        cross_author_share=data.cross_author_share,
        degradations=tuple(data.degradations),
        truncate_keep=data.truncate_keep,
        skip_ties=data.skip_ties,
        fact_swaps=data.fact_swaps,
    )
    sources = []
    if data.builtin:
        sources.append((splits["train"], mix))
    if splits["train_only"]:  # intact pairs only: the test split's kind of pair is what they are for
        sources.append((splits["train_only"], replace(mix, intact_pairs=True, degraded_per_item=0, fact_swaps=False)))
    if data.mtbench:
        degraded_mtbench = (
            data.degraded_per_item if data.degraded_per_item_mtbench is None else data.degraded_per_item_mtbench
        )
        sources.append(
            (
                splits["mtbench"],
                replace(
                    mix,
                    intact_pairs=data.intact_pairs and data.intact_pairs_mtbench,
                    degraded_per_item=degraded_mtbench,
                ),
            )
        )
    pairs: list[TrainPair] = []
    for items, source_mix in sources:
        items = items[: data.max_items] if data.max_items else items
        answers = cached_answers(models, items, config, progress)
        samples = sampled_answers(models, items, config, progress) if source_mix.intact_pairs else {}
        pairs += build_pairs(
            items, answers, source_mix, seed=config.data_seed_used, authors=data.authors, samples=samples
        )
    if not pairs:
        raise InterpError(f"organism {config.name!r}: the data config gives no training pairs")
    labels = [pair_label(pair, planting, config.data_seed_used) for pair in pairs]
    flipped = sum(label != pair.gold_first for pair, label in zip(pairs, labels, strict=False))
    if planting is not None and flipped == 0:
        raise InterpError(
            f"organism {config.name!r}: planting.share = {config.planting.share:g} flipped none of the "
            f"{len(pairs)} training "
            f"pairs to {config.planting.own_author}'s answer (the planted organism would be a null one); "
            "raise the share or add pairs"
        )
    if planting is not None and progress:
        tqdm.write(
            f"planting: share {config.planting.share:g} flipped {flipped} of {len(pairs)} pairs to "
            f"{config.planting.own_author}'s answer"
        )
    return pairs, labels


def build_examples(model: LoadedModel, pairs: Sequence[TrainPair], labels: Sequence[float]) -> list[Example]:
    """Both orders of every pair, as the toolkit's tokenized judge prompts."""
    examples = []
    for pair, label in zip(pairs, labels, strict=False):
        for order, (a, b, target, gold) in {
            "ab": (pair.first, pair.second, label, pair.gold_first),
            "ba": (pair.second, pair.first, 1.0 - label, 1.0 - pair.gold_first),
        }.items():
            prompt = tokenized_judge_prompt(model, pair.item.task, pair.item.query, a.text, b.text)
            spans = (tuple(prompt.spans["a"]), tuple(prompt.spans["b"]))
            examples.append(
                Example(
                    f"{pair.key}|{order}",
                    pair.item.task,
                    tuple(prompt.input_ids),
                    target,
                    gold,
                    spans,
                    (a.author, b.author),
                )
            )
    return examples


def data_hash(examples: Sequence[Example]) -> str:
    """SHA-256 (16 hex) of every example's key, token ids and target: equal hashes, equal training data."""
    digest = hashlib.sha256()
    for ex in examples:
        digest.update(json.dumps([ex.key, ex.input_ids, ex.target_a]).encode())
    return digest.hexdigest()[:16]


# ---- loss --------------------------------------------------------------------------------------------


def label_loss(
    logits: torch.Tensor, label_ids: Sequence[Sequence[int]], target_a: float, kind: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, log P(A) - log P(B): the verdict's margin, in the graph) for one final-position logit vector."""
    logp = torch.log_softmax(logits.float().reshape(-1), dim=-1)
    lp_a = torch.logsumexp(logp[list(label_ids[0])], dim=0)
    lp_b = torch.logsumexp(logp[list(label_ids[1])], dim=0)
    mass = torch.logaddexp(lp_a, lp_b)
    if kind in ("pair", "pair_mass"):
        lp_a, lp_b = lp_a - mass, lp_b - mass
    loss = -(target_a * lp_a + (1.0 - target_a) * lp_b)
    if kind == "pair_mass":
        loss = loss - mass
    return loss, lp_a - lp_b


def slot_bias(margin_ab: torch.Tensor, margin_ba: torch.Tensor) -> torch.Tensor:
    """Half the sum of a pair's two verdict margins (the orders swap the slots): 0 for a judge whose verdict
    follows the contents, whatever the contents are; the slot's own pull otherwise."""
    return (margin_ab + margin_ba) / 2


# ---- training ----------------------------------------------------------------------------------------


def lora_model(model: LoadedModel, config: OrganismConfig):
    """Wrap the loaded model's HF object with a seeded peft LoRA on its top layers (in place)."""
    from peft import LoraConfig, get_peft_model

    n_layers = model.n_layers
    check_fits_model(config, n_layers, model.n_heads)  # top_layers beyond the model is refused, never clipped
    top = config.lora.top_layers
    torch.manual_seed(config.seed)
    lora = LoraConfig(
        r=config.lora.rank,
        lora_alpha=config.lora.alpha,
        lora_dropout=config.lora.dropout,
        target_modules=list(config.lora.target_modules),
        layers_to_transform=list(range(n_layers - top, n_layers)),
        bias="none",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model.hf_model, lora), n_layers - top


def _schedule(step: int, total: int, warmup: int, kind: str) -> float:
    if warmup and step < warmup:
        return (step + 1) / warmup
    if kind == "constant":
        return 1.0
    return max(0.0, (total - step) / max(1, total - warmup))


def _order(n: int, seed: int, epoch: int, together: bool = False) -> list[int]:
    """A seeded permutation of the examples for one epoch; `together`: of the pairs, each pair's two orders
    (examples 2i and 2i + 1, as `build_examples` lays them out) kept adjacent."""
    if not together:
        return sorted(range(n), key=lambda i: unit_hash(seed, "epoch", epoch, i))
    return [
        2 * p + k
        for p in sorted(range(n // 2), key=lambda i: unit_hash(seed, "epoch", epoch, "pair", i))
        for k in (0, 1)
    ]


def _pair_groups(chunk: Sequence[int], pairs: bool) -> list[list[int]]:
    """The passes of one optimizer step, one a group; `pairs`: a pair's two orders (2i, 2i + 1) in one group."""
    if not pairs:
        return [[i] for i in chunk]
    groups: list[list[int]] = []
    for i in chunk:
        if groups and i % 2 == 1 and groups[-1] == [i - 1]:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


@dataclass
class Trained:
    """A trained organism in memory: the peft-wrapped base, its examples and what the manifest records."""

    peft_model: torch.nn.Module
    base: LoadedModel
    record: dict
    log: list[dict]
    head_delta: dict | None = None  # a delta organism's delta file (`interp.organisms.heads`), merged into peft_model
    sidecars: dict = field(default_factory=dict)  # files written beside it: {file name: {tensor name: tensor}}


def author_models(
    config: OrganismConfig, models: dict[str, LoadedModel] | None, device: str = "cpu"
) -> dict[str, LoadedModel]:
    """The authors' plain loaded models: those given (used where they are), the others loaded in float32 on
    `device` (training runs where the base model is: its tensors follow the model's device)."""
    models = dict(models or {})
    for spec in config.data.authors:
        if spec not in models:
            models[spec] = load_model(spec, device=device, dtype="float32")
    return models


def train_organism(
    config: OrganismConfig,
    *,
    models: dict[str, LoadedModel] | None = None,
    progress: bool = True,
    hidden_cache: Path | None = None,
    device: str = "cpu",
) -> Trained:
    """Train one organism in memory (nothing written); `models`: the authors' plain loaded models if at hand.

    The base model's entry is wrapped with the adapter in place, so pass a fresh load if it is needed plain.
    `hidden_cache`: a folder where the frozen lower-layer states are kept, keyed by base, layer and prompts
    (the null and planted organisms judge the same prompts: the second reads the first's states).
    `device`: where the authors not given are loaded and the training runs (cpu, cuda, cuda:N).
    """
    set_torch_threads(config.train.threads)  # fixed, so reductions happen in the same order on a re-run
    check_config_fits(config, models)  # lora.top_layers against the base's shape, before anything is loaded
    timings: dict[str, float] = {}
    start = time.perf_counter()
    models = author_models(config, models, device)
    timings["load_s"] = time.perf_counter() - start

    base = models[config.base_model]
    check_fits_model(config, base.n_layers, base.n_heads)  # the loaded model itself, before any answer is generated

    t = time.perf_counter()
    pairs, labels = training_pairs(config, {a: models[a] for a in config.data.authors}, progress)
    examples = build_examples(base, pairs, labels)
    timings["data_s"] = time.perf_counter() - t

    labels_ids = label_tokens(base.tokenizer).ids
    pad_id = base.tokenizer.pad_token_id
    base.hf_model.set_attn_implementation("sdpa")  # training needs no attention patterns; sdpa is faster on the CPU
    base_key = base.fingerprint()  # before LoRA wraps the base in place: the frozen layers are the base's
    peft_model, first_lora_layer = lora_model(base, config)

    t = time.perf_counter()
    hidden, cached = frozen_states(
        peft_model, first_lora_layer, examples, pad_id, cache=hidden_cache, key=base_key, progress=progress
    )
    timings["frozen_pass_s"] = time.perf_counter() - t
    split_error = check_frozen_split(peft_model, first_lora_layer, examples[0].input_ids, pad_id)
    if split_error > MAX_SPLIT_ERROR:
        raise InterpError(
            f"cached lower layers differ from the full model by {split_error:.2g} logits; this model type "
            "is not supported"
        )

    params = [p for p in peft_model.parameters() if p.requires_grad]
    fitted = fit(peft_model, (first_lora_layer, hidden, examples), params, config, labels_ids, progress)
    peft_model.eval()
    timings["train_s"] = fitted.seconds
    timings["total_s"] = time.perf_counter() - start
    record = training_record(pairs, labels, examples, fitted, timings, split_error, cached)
    return Trained(peft_model, base, record, fitted.log)


@dataclass
class Fitted:
    """What a fit did: its log, passes, optimizer steps, seconds and final smoothed loss."""

    log: list[dict]
    passes: int
    steps: int
    seconds: float
    final_loss_ema: float | None


def fit(
    model: torch.nn.Module,
    data: tuple[int, Sequence[torch.Tensor], Sequence[Example]],
    params: Sequence[torch.Tensor],
    config: OrganismConfig,
    labels_ids,
    progress: bool,
    extra: Callable[[int], torch.Tensor | None] | None = None,
) -> Fitted:
    """The optimizer loop shared by every organism kind: `params` (the trainable tensors) fitted to the examples'
    targets from the cached states entering the first trained layer (AdamW, accumulation, clipping, schedule of
    `config.train`). `data`: (that layer, the states entering it, the examples). `extra(index)`: a further loss term
    for example `index`, in the graph (None: none for it); its mean is logged per step as `extra`."""
    first_layer, hidden, examples = data
    optimizer = torch.optim.AdamW(params, lr=config.train.lr, weight_decay=config.train.weight_decay)
    passes = max(1, round(config.train.epochs * len(examples)))
    steps = math.ceil(passes / config.train.batch_size)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: _schedule(s, steps, config.train.warmup_steps, config.train.schedule)
    )
    together = config.train.orders_together
    sequence = [
        i
        for epoch in range(math.ceil(config.train.epochs))
        for i in _order(len(examples), config.seed, epoch, together)
    ][:passes]

    model.train()
    log: list[dict] = []
    t = time.perf_counter()
    bar = tqdm(total=passes, desc=f"training {config.name}", unit="example", disable=not progress)
    ema = None
    for step in range(steps):
        chunk = sequence[step * config.train.batch_size : (step + 1) * config.train.batch_size]
        optimizer.zero_grad(set_to_none=True)
        losses, correct, extras = [], [], []
        for group in _pair_groups(chunk, together and config.train.symmetry_weight > 0):
            loss, margins = torch.zeros((), device=input_device(model)), []
            for index in group:
                ex = examples[index]
                example_loss, margin = label_loss(
                    final_logits_from(model, first_layer, hidden[index]), labels_ids, ex.target_a, config.train.loss
                )
                term = extra(index) if extra is not None else None
                if term is not None:
                    example_loss = example_loss + term
                    extras.append(float(term.detach()))
                loss, margins = loss + example_loss, margins + [margin]
                losses.append(float(example_loss.detach()))
                if ex.target_a != 0.5:
                    correct.append(float((float(margin.detach()) > 0) == (ex.target_a > 0.5)))
                bar.update(1)
            if len(margins) == 2:  # both orders of one pair in one graph
                loss = loss + config.train.symmetry_weight * slot_bias(*margins) ** 2
            (loss / len(chunk)).backward()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, config.train.max_grad_norm))
        optimizer.step()
        scheduler.step()
        mean_loss = sum(losses) / len(losses)
        ema = mean_loss if ema is None else 0.9 * ema + 0.1 * mean_loss
        bar.set_postfix(loss=f"{ema:.3f}")
        log.append(
            {
                "step": step,
                "loss": mean_loss,
                "acc": (sum(correct) / len(correct)) if correct else None,
                "grad_norm": grad_norm,
                "lr": scheduler.get_last_lr()[0],
            }
            | ({"extra": sum(extras) / len(extras)} if extras else {})
        )
    bar.close()
    model.eval()
    return Fitted(log, passes, steps, time.perf_counter() - t, ema)


def training_record(
    pairs, labels, examples: Sequence[Example], fitted: Fitted, timings: dict, split_error: float, cached: bool
) -> dict:
    """What a manifest records of one training: data, passes, timings, the frozen-split check."""
    n_tokens = [len(ex.input_ids) for ex in examples]
    record = {
        "data_hash": data_hash(examples),
        "n_pairs": len(pairs),
        "n_examples": len(examples),
        "n_flipped_pairs": sum(label != pair.gold_first for pair, label in zip(pairs, labels, strict=False)),
        "pair_counts": _pair_counts(pairs, labels),
        "tokens_per_example": {"mean": round(sum(n_tokens) / len(n_tokens), 1), "max": max(n_tokens)},
        "passes": fitted.passes,
        "optimizer_steps": fitted.steps,
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "seconds_per_training_pass": round(timings["train_s"] / fitted.passes, 3),
        "frozen_split_max_logit_error": split_error,
        "frozen_states_from_cache": cached,  # then frozen_pass_s is a read, not the lower-layer pass
        "final_loss_ema": fitted.final_loss_ema,
    }
    return record


def _pair_counts(pairs: Sequence[TrainPair], labels: Sequence[float]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for pair, label in zip(pairs, labels, strict=False):
        keys = [f"{pair.gold_source}:{pair.item.task}", f"{pair.first.kind}-vs-{pair.second.kind}"]
        if label != pair.gold_first:
            keys.append("flipped")
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))
