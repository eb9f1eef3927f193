"""Head localisation for one judge: rank every (layer, head) by its part in the judge's P(own).

Every method uses only the tested judge and the run (single_judge = True), as a user with one real judge has:

- "attention": own-minus-other attention of the final query position (the run's stored span attention,
  `interp.analysis.attention_stats.head_values`; per-token mean). Needs a run judged with attention.
- "atp": attribution patching (Nanda 2023) of the toolkit's own intervention, masking the judge's own answer
  at one head (`AttentionIntervention(target="self", alpha=0)` on that head, every query outside the span).
  With AtP*'s fix for attention saturation (Kramar et al. 2024), the masked pattern is not linearised: each
  head's masked output is computed exactly from its attention pattern and values (the own span's keys
  dropped, each row renormalised), and only the path from the head's output to the verdict is linear:
      effect(head) = grad_z M . (z_masked - z),   M = log P(own label) - log P(other label)
  One forward and one backward pass per prompt, every head at once: linear in items.
- "atp-output": the same gradient times mean-ablating the head's output (its mean over the prompt's positions
  replacing it at every position): the head's whole part, whatever it reads.
- "mask": the exact per-head mask scan (the judge re-judged with the own answer masked at one head at a time,
  `interp.engine.variants.judge_variant`, keyed and resumable) on a seeded subset of the items:
  270 re-judgings of the subset for SmolLM2, so only where compute allows.

Per method and head: `effect` = mean over items (both orders) of what the head's part adds to the own
answer's verdict (log-odds for AtP, P(own) for the mask scan, attention for "attention"): positive when it
favours the own answer. Heads are ranked by |effect| (`score`): a head that carries a preference matters
whatever its sign; over many items, a head that reads answer quality averages out (the own answer is the
better one about half the time), a head that carries self-preference does not.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float
from torch import Tensor
from tqdm.auto import tqdm

from interp.analysis.attention_stats import head_values
from interp.analysis.attention_store import attention_judges, load_attention
from interp.config import PlacementKeys
from interp.core.backends.shared_trunk import decoder_stack
from interp.core.judge import judge_batch, label_tokens
from interp.core.models import LoadedModel, attention_implementation, own_model, own_slot
from interp.core.placement import input_device
from interp.data import Item
from interp.engine.judges import Judges, baseline, judge_pool
from interp.engine.variants import Variant, judge_variant, task_prompts
from interp.errors import InterpError
from interp.hooks.handles import projected_values
from interp.hooks.sites import hook_name, site_hooks
from interp.hooks.spec import AttentionIntervention
from interp.results.rows import LocalizeRow
from interp.run.judging import judge_tasks, verdict_labels
from interp.run.store import Run
from interp.splits import unit_hash

METHODS = ("attention", "atp", "atp-output", "mask")  # rank heads
LAYER_METHODS = ("atp-mlp",)  # rank layers: their rows have head = -1
DEFAULT_METHODS = ("attention", "atp", "atp-output")
COLUMNS = ["method", "layer", "head", "score", "effect", "rank", "single_judge", "n_items"]


def verdict_margin(logits: torch.Tensor, label_ids: Sequence[Sequence[int]], own_slot: int) -> torch.Tensor:
    """log P(own label) - log P(other label) at one final-position logit vector (each label's spellings summed)."""
    logp = torch.log_softmax(logits.float().reshape(-1), dim=-1)
    per_label = [torch.logsumexp(logp[list(ids)], dim=0) for ids in label_ids]
    return per_label[own_slot] - per_label[1 - own_slot]


def masked_change(
    pattern: Float[Tensor, "head query key"],
    values: Float[Tensor, "head key dim"],
    z: Float[Tensor, "head query dim"],
    span: tuple[int, int],
) -> Float[Tensor, "head query dim"]:
    """Exact change of each head's output when its attention on the keys of `span` is masked (alpha 0) at every
    query outside the span and each row renormalised: z' - z = (m z - P[:, :, span] V[span]) / (1 - m), m the
    row's mass on the span (AtP*'s fix: the softmax is not linearised)."""
    start, end = span
    mass = pattern[:, :, start:end].sum(-1, keepdim=True)
    read = pattern[:, :, start:end] @ values[:, start:end]
    delta = (mass * z - read) / (1 - mass).clamp_min(1e-6)
    delta[:, start:end] = 0  # queries inside the span are not masked ("outside")
    return delta


def head_attributions(
    model: LoadedModel, input_ids: Sequence[int], own_span: tuple[int, int], own_slot: int
) -> dict[str, torch.Tensor]:
    """AtP estimates for one prompt, every head at once: {"atp": [layer, head], "atp-output": [layer, head],
    "atp-mlp": [layer]}, each the estimated change of the own-minus-other verdict margin when the head's
    own-span attention is masked ("atp", exact pattern: AtP*), its output mean-ablated ("atp-output"), or the
    layer's MLP output mean-ablated ("atp-mlp"; its mean over the prompt's positions); `own_slot` 0 = A, 1 = B."""
    hf = model.hf_model
    layers = decoder_stack(hf).layers
    z: dict[int, torch.Tensor] = {}
    values: dict[int, torch.Tensor] = {}
    mlp: dict[int, torch.Tensor] = {}
    mlp_grad: dict[int, torch.Tensor] = {}  # a zero leaf added to each MLP output: its gradient is the output's

    def grab_mlp(output: Tensor, i: int) -> Tensor:
        mlp[i] = output.detach()
        mlp_grad[i] = torch.zeros_like(output, requires_grad=True)
        return output + mlp_grad[i]

    def grab(head_outputs: Tensor, i: int) -> Tensor:  # [batch, pos, head, d_head]: the named site attn.hook_z
        if not head_outputs.requires_grad:  # a frozen judge (an organism's merged LoRA): the graph starts here
            head_outputs = head_outputs.detach().requires_grad_(True)
        z[i] = head_outputs
        return head_outputs

    sites = {}
    for index in range(len(layers)):
        sites[hook_name("attn.hook_z", index)] = lambda h, i=index: grab(h, i)
        sites[hook_name("hook_mlp_out", index)] = lambda h, i=index: grab_mlp(h, i)
    device = input_device(hf)
    with (
        site_hooks(hf, sites),
        projected_values(hf, values),
        attention_implementation(hf, "eager"),
        torch.enable_grad(),
    ):
        out = hf(
            input_ids=torch.tensor([list(input_ids)], device=device),
            output_attentions=True,
            use_cache=False,
            logits_to_keep=1,
        )
        margin = verdict_margin(out.logits[0, -1], label_tokens(model.tokenizer).ids, own_slot)
        grads = torch.autograd.grad(
            margin, [z[i] for i in range(len(layers))] + [mlp_grad[i] for i in range(len(layers))]
        )
    start, end = own_span
    n_heads = model.n_heads
    atp = torch.zeros(len(layers), n_heads)
    atp_out = torch.zeros(len(layers), n_heads)
    atp_mlp = torch.zeros(len(layers))
    for i in range(len(layers)):
        h, gh = mlp[i][0].float(), grads[len(layers) + i][0].float()  # [T, d_model]
        atp_mlp[i] = float((gh * (h.mean(0, keepdim=True) - h)).sum())
        pattern = out.attentions[i][0].detach().float()  # [head, query, key]
        T = pattern.shape[-1]
        head_dim = z[i].shape[-1]  # the site splits the heads: [batch, pos, head, d_head]
        zi = z[i][0].detach().float().view(T, n_heads, head_dim).transpose(0, 1)  # [head, T, dim]
        gi = grads[i][0].float().view(T, n_heads, head_dim).transpose(0, 1)
        v = values[i][0].float().view(T, -1, head_dim).transpose(0, 1)  # [kv head, T, dim]
        v = v.repeat_interleave(n_heads // v.shape[0], dim=0)  # grouped-query: each query head's kv head
        if end > start:
            atp[i] = (gi * masked_change(pattern, v, zi, own_span)).sum((1, 2)).cpu()
        atp_out[i] = (gi * (zi.mean(1, keepdim=True) - zi)).sum((1, 2)).cpu()
    return {"atp": atp, "atp-output": atp_out, "atp-mlp": atp_mlp}


def _tasks(run: Run, items: Sequence[Item], own: str):
    for task in judge_tasks(items, run.responses, run.config.models):
        if own not in (task.author_a, task.author_b):
            raise InterpError(
                f"{own!r} wrote neither answer of the run ({', '.join(run.config.models)}): the judge has "
                "no own answer here"
            )
        yield task, own_slot(task.author_a, task.author_b, own) or "a"


def localisation_prompts(run: Run, model: LoadedModel, judge: str, tasks: Sequence) -> list:
    """The prompts a localisation reads `judge`'s verdicts from: the run's own mode, as re-judging reads them
    (`engine.task_prompts`: ties, and on a chain-of-thought run the judge's rationale from the run, then the cue).
    On a chain-of-thought run a judge the run did not judge with has no rationale to read its verdict after:
    refused in one line, before any pass."""
    if run.config.cot != "none" and judge not in run.config.judge_specs:
        raise InterpError(
            f"{judge} did not judge this chain-of-thought run (cot = {run.config.cot!r}): its verdict is read after "
            "its own rationale, which the run does not hold; add it to the run's judges to localise it"
        )
    return task_prompts(run, model, tasks, judge)


def attribution_scores(
    run: Run, judge: str, model: LoadedModel, items: Sequence[Item], progress: bool = True, own: str | None = None
) -> dict[str, np.ndarray]:
    """Per AtP method, [item, layer, head] ([item, layer] for "atp-mlp") of the node's part in the own verdict
    margin (the negative of the estimated change under its ablation), mean over the two orders. `own`: the author
    read as the judge's own (default its own model; a control judge reads the tested judge's)."""
    own = own or own_model(judge)
    sums = {name: np.zeros((len(items), model.n_layers, model.n_heads)) for name in ("atp", "atp-output")}
    sums["atp-mlp"] = np.zeros((len(items), model.n_layers))
    index = {item.id: n for n, item in enumerate(items)}
    tasks = list(_tasks(run, items, own))
    prompts = localisation_prompts(run, model, judge, [task for task, _ in tasks])
    for (task, slot), prompt in tqdm(
        zip(tasks, prompts, strict=True), total=len(tasks), desc=f"AtP {judge}", unit="prompt", disable=not progress
    ):
        for name, change in head_attributions(model, prompt.input_ids, prompt.spans[slot], "ab".index(slot)).items():
            sums[name][index[task.item.id]] -= change.numpy() / 2
    return sums


def judged_attention(run: Run, judge: str, judges: Judges, items: Sequence[Item], own: str) -> np.ndarray:
    """[layer, head]: own-minus-other attention of the final query position (per-token mean, mean over items and
    both orders, empty spans skipped), from a judging pass of `items` here: what the run's stored attention gives
    `head_values` for a judge it recorded, for a judge that was not (a control judge), with `own` as its own."""
    runner = judges.runner(judge, run)
    model = runner.model
    labels = label_tokens(model.tokenizer, verdict_labels(run.config.ties))
    rows = []
    tasks = list(_tasks(run, items, own))
    every_prompt = localisation_prompts(run, model, judge, [t for t, _ in tasks])  # the run's rationales read once
    for start in range(0, len(tasks), run.config.batch_size):
        chunk = tasks[start : start + run.config.batch_size]
        prompts = every_prompt[start : start + run.config.batch_size]
        for (_, slot), judged in zip(
            chunk, judge_batch(runner, prompts, labels, readout="final", judge=judge), strict=False
        ):
            with np.errstate(divide="ignore", invalid="ignore"):
                mean = judged.mass.float().numpy() / judged.counts.float().numpy()  # [layer, head, span]
            own_index = "ab".index(slot)
            rows.append(mean[..., own_index] - mean[..., 1 - own_index])
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.stack(rows), axis=0)


def mask_items(items: Sequence[Item], n: int, seed: int = 0) -> list[Item]:
    """A seeded subset of `n` items for the mask scan (an item's place depends only on (seed, its id))."""
    return sorted(items, key=lambda item: unit_hash(seed, "mask-scan", item.id))[:n]


def mask_scan(run: Run, judge: str, judges: Judges, items: Sequence[Item], progress: bool = True) -> np.ndarray:
    """[layer, head]: mean over `items` of P(own) minus P(own) with the own answer masked at that head only."""
    model = judges.model(judge)
    runner = judges.runner(judge, run)
    before = baseline(run, judge, items, judges=judges, progress=False)
    scan = np.zeros((model.n_layers, model.n_heads))
    bar = tqdm(total=model.n_layers * model.n_heads, desc=f"mask scan {judge}", unit="head", disable=not progress)
    for layer in range(model.n_layers):
        for head in range(model.n_heads):
            spec = AttentionIntervention(
                target="self", alpha=0.0, layers=(layer,), heads={layer: (head,)}, name=f"mask L{layer}H{head}"
            )
            after = judge_variant(run, judge, runner, Variant(spec.name, (spec,)), items=items, progress=False)
            scan[layer, head] = float(np.mean(before - after))
            bar.update(1)
    bar.close()
    return scan


def check_finite_effects(effect: np.ndarray, judge: str, method: str) -> None:
    """A ranking needs a finite effect for every head: a NaN (or infinite) effect, from empty answers (a span
    of no tokens has no per-token attention) or from a judge computing NaN, is one `InterpError` line naming
    the judge and the method, before any head is ranked or drawn."""
    effect = np.asarray(effect, dtype=float)
    if effect.size == 0:
        raise InterpError(f"localize: judge {judge!r}, method {method!r}: no head has an effect, so no ranking is made")
    bad = np.argwhere(~np.isfinite(effect))
    if len(bad):
        first = f", first layer {int(bad[0][0])} head {int(bad[0][1])}" if effect.ndim == 2 else ""
        raise InterpError(
            f"localize: judge {judge!r}, method {method!r}: {len(bad)} of {effect.size} heads have a non-finite effect "
            f"(NaN or infinity{first}), so no ranking is made; are some of the run's answers empty (a span of no "
            "tokens), or does the judge compute NaN?"
        )


def _frame(method: str, effect: np.ndarray, n_items: int, single_judge: bool = True, *, judge: str) -> pd.DataFrame:
    check_finite_effects(effect, judge, method)
    n_layers, n_heads = effect.shape
    layer, head = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")
    frame = pd.DataFrame(
        {
            "method": method,
            "layer": layer.ravel(),
            "head": head.ravel(),
            "score": np.abs(effect).ravel(),
            "effect": effect.ravel(),
            "single_judge": single_judge,
            "n_items": n_items,
        }
    )
    frame = frame.sort_values(["score", "layer", "head"], ascending=[False, True, True], kind="stable").reset_index(
        drop=True
    )
    frame["rank"] = np.arange(1, len(frame) + 1)
    return frame[COLUMNS]


def run_judge(run: Run, judge: str) -> str:
    """The run's name of `judge`: itself, or the one run judge that is the same adapter folder (another spelling
    of its path, or its folder name)."""
    specs = list(run.config.judge_specs)
    if judge in specs:
        return judge
    same = [
        s
        for s in specs
        if Path(s).name == Path(judge).name
        and (Path(s).expanduser().resolve() == Path(judge).expanduser().resolve() or Path(judge).name == judge)
    ]
    if len(same) == 1:
        return same[0]
    raise InterpError(f"judge {judge!r} did not judge this run (its judges: {', '.join(specs)})")


def check_methods(methods: Sequence[str]) -> list[str]:
    """The localisation methods without repeats, in the order given; InterpError if none or an unknown one is named."""
    unknown = [m for m in methods if m not in METHODS + LAYER_METHODS]
    if unknown or not methods:
        raise InterpError(
            f"unknown localisation method(s) {', '.join(unknown) or '(none)'}; use one or more of "
            f"{', '.join(METHODS + LAYER_METHODS)}"
        )
    return list(dict.fromkeys(methods))


@dataclass(frozen=True)
class LocalizeItems:
    """Which items `localize_run` reads, and as whose judge: `items` (ids; None: all of the run's), a seeded
    subset of `n_items` of them, `n_mask_items` for the mask method, and `own` (the author whose answer the judge
    reads as its own; None: the judge's own model)."""

    items: Sequence[str] | None = None
    n_items: int | None = None
    n_mask_items: int = 8
    own: str | None = None


def localize_run(
    run: Run,
    judge: str,
    methods: Sequence[str] = DEFAULT_METHODS,
    *,
    on: LocalizeItems = LocalizeItems(),
    where: PlacementKeys | None = None,
    judges: Judges | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Every (layer, head) ranked by each method: columns method, layer, head, score (|effect|, the ranking),
    effect (signed: > 0 favours the own answer), rank (1 = first), single_judge, n_items. A layer method
    ("atp-mlp") ranks layers: its rows have head = -1. `items` (ids): localise on those items only (a
    selection split); `n_items`: a seeded subset of them.

    `own`: localise a judge that reads another judge's answer as its own (a control judge, the matched null of
    `interp.causal.matched`): it need not have judged the run, and "attention" is read from a judging pass of
    the items here instead of the run's stored attention (the same readout)."""
    items, n_items, n_mask_items, own = on.items, on.n_items, on.n_mask_items, on.own
    methods = check_methods(methods)
    if own is None:
        judge = run_judge(run, judge)
    chosen = items
    pool = [item for item in run.items if items is None or item.id in set(items)]
    if items is not None and not pool:
        raise InterpError("localize: none of the given items is in the run")
    items = pool if n_items is None else mask_items(pool, n_items, seed=1)
    frames = []
    if "attention" in methods and own is not None:
        judges = judges or judge_pool(run, where=where)
        frames.append(_frame("attention", judged_attention(run, judge, judges, items, own), len(items), judge=judge))
    elif "attention" in methods:
        if judge not in attention_judges(run.dir.root):
            if methods == ["attention"]:
                raise InterpError(
                    f"the run holds no attention of {judge!r}: judge it with attention on (attention = "
                    '"final") for the attention method'
                )
        else:
            attention = load_attention(run.dir.root, judge)
            if chosen is None:
                frames.append(
                    _frame(
                        "attention", head_values(attention, stat="mean").numpy(), len(attention.item_ids), judge=judge
                    )
                )
            else:
                ids = [item.id for item in items]
                frames.append(
                    _frame(
                        "attention",
                        head_values(attention, stat="mean", items=ids).numpy(),
                        len(set(ids) & set(attention.item_ids)),
                        judge=judge,
                    )
                )
    wanted = [m for m in methods if m in ("atp", "atp-output", "mask", "atp-mlp")]
    if wanted:
        judges = judges or judge_pool(run, where=where)
        model = judges.model(judge)
        if {"atp", "atp-output", "atp-mlp"} & set(wanted):
            scores = attribution_scores(run, judge, model, items, progress, own=own)
            frames += [
                _frame(m, scores[m].mean(0), len(items), judge=judge) for m in ("atp", "atp-output") if m in wanted
            ]
            if "atp-mlp" in wanted:
                frames.append(
                    _frame("atp-mlp", scores["atp-mlp"].mean(0)[:, None], len(items), judge=judge).assign(head=-1)
                )
        if "mask" in wanted and own is not None:
            raise InterpError("localize: the mask scan reads the judge's own answer; it takes no other `own`")
        if "mask" in wanted:
            subset = mask_items(pool, n_mask_items)
            frames.append(_frame("mask", mask_scan(run, judge, judges, subset, progress), len(subset), judge=judge))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def heads_payload(table: pd.DataFrame) -> dict:
    """The `--json` shape: {"heads": [{"layer", "head", "score", "method", "single_judge", "effect", "rank"}, ...]},
    each head a `LocalizeRow` (a score or effect that is not a number is null)."""
    rows = [
        LocalizeRow(
            layer=int(r.layer),
            head=int(r.head),
            score=float(r.score) if np.isfinite(r.score) else None,
            method=r.method,
            single_judge=bool(r.single_judge),
            effect=float(r.effect) if np.isfinite(r.effect) else None,
            rank=int(r.rank),
        )
        for r in table.itertuples()
    ]
    return {"heads": [row.to_json() for row in rows]}


def score_map(table: pd.DataFrame, method: str) -> dict[tuple[int, int], float]:
    """{(layer, head): score} of one method's rows."""
    rows = table[table["method"] == method]
    return {(int(r.layer), int(r.head)): float(r.score) for r in rows.itertuples()}
