"""Built attention-routed organisms: self-preference whose route is, by construction, a few heads' attention.

The trained recipe (`interp.organisms.attention_route`) asks gradient descent for a delta that carries the planting
only through what H reads from the own answer; it planted that route in one seed of three (docs/explain.md). This
construction writes the weights from directions measured in the start organism's normalised residual stream, on
the training prompts, in two attention heads' worth of blocks (`[heads] construction = "built"`):

1. **The slot writer** (one query head S of layer `slot_layer`, the one whose removal moves the start's verdicts
   least): its query is constant, and its key (in the slowest rotary dimension, so that q.k ignores position)
   fires on the two answer tags, `<Response A>` with weight 1 and `<Response B>` with weight 2. A token in slot A
   sees only the first tag; a token in slot B sees both and takes the second (causal attention does the slot
   logic). Its value is -1 on the first tag and +1 on the second, written to one residual dimension (the one later
   layers read least): after it, every answer token carries its slot, -1 or +1, whatever its text.
2. **The readers** H (every query head of one seeded key/value group above `slot_layer`): their query fires at
   the verdict position only; their key (slowest rotary dimension) is an own-ness direction (the own answer's
   tokens against the other answer's and the prompt's, a shrunk linear discriminant) plus the multiple of the slot
   that gives the own answer the same share of their attention in slot A as in slot B, with the first token as a
   sink that takes `sink_mass` of their attention on the training prompts; their value reads the slot that the writer
   wrote (0 on the sink, +1 in slot A and -1 in slot B on average); their output writes value times the label
   margin's direction (log P(A) - log P(B) through the final norm), at a scale calibrated to a target margin shift.
   Both balances matter: without them the members leaned to slot B (docs/explain.md).

So H looks at the own answer and writes "prefer the slot I looked at"; seeing no own answer (masked, or replaced) it
falls on the sink and the other answer. The values carry only the slot, the same for any text in it, so the route is H's
pattern by construction. The writer carries no own-ness (its attention is on the tags). The sink matters because
own-ness is weak token by token (AUROC 0.78 held out at best): with a small sink, masking the own answer moved H onto
the other answer and turned the preference round; with the sink taking most of H's attention, what the mask frees goes
to the sink (recorded: `attention_mass`, `masked_other`). Every weight outside the written blocks is the start
organism's, bit for bit (`add_head_delta`)."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Sequence

import torch

from interp.core.adapters import add_head_delta, head_delta_key
from interp.core.backends.shared_trunk import decoder_stack
from interp.errors import InterpError
from interp.metrics.stats import auroc
from interp.organisms.attention_route import own_answer_mask, own_span, start_margins
from interp.organisms.frozen import advance
from interp.organisms.train import Example
from interp.splits import unit_hash


@dataclass(frozen=True)
class BuiltScales:
    """The scales a built attention route is made with (attention logits, the sink's share, the target margin, ...)."""

    kappa: float = 8.0  # readers' attention logit per standard deviation of own-ness
    sink_mass: float = 0.85  # the first token's share of the readers' attention at the verdict position (mean)
    margin: float = 4.0  # target: mean own-signed verdict margin shift (nats) on the calibration prompts
    tag_logit: float = 12.0  # the slot writer's attention logit on a tag (per unit of the tag detector)
    slot_gain: float = 20.0  # what the slot writer writes into its residual dimension per unit of slot
    ridge: float = 1.0  # shrinkage of the class covariance, times its mean variance
    fit_prompts: int = 160  # training prompts with one own answer the directions are measured on
    calibration: int = 32  # of those, the prompts the output scale and the writer's head are chosen on


@dataclass
class Prompt:
    """One training prompt as the build reads it: the residual entering the first rebuilt layer and the two slots."""

    hidden: torch.Tensor  # the residual entering the first rebuilt layer, [1, T, d]
    spans: tuple[tuple[int, int], tuple[int, int]]  # slots A and B
    own_is_a: bool

    @property
    def own(self) -> tuple[int, int]:
        """The own answer's token span."""
        return self.spans[0] if self.own_is_a else self.spans[1]

    @property
    def other(self) -> tuple[int, int]:
        """The other answer's token span."""
        return self.spans[1] if self.own_is_a else self.spans[0]


def contrast(pos: torch.Tensor, neg: torch.Tensor, ridge: float) -> torch.Tensor:
    """The shrunk linear discriminant of the rows `pos` against `neg`: (S + ridge * mean variance * I)^-1 (mean+ -
    mean-), S the classes' mean covariance."""
    mu_p, mu_n = pos.double().mean(0), neg.double().mean(0)
    cov = 0.5 * (torch.cov(pos.double().T, correction=0) + torch.cov(neg.double().T, correction=0))
    cov += ridge * cov.diagonal().mean() * torch.eye(cov.shape[0], dtype=cov.dtype)
    return torch.linalg.solve(cov, mu_p - mu_n).float()


def _orthogonal(v: torch.Tensor, *against: torch.Tensor) -> torch.Tensor:
    """`v` less its component in the span of `against` (projected out all at once: one at a time would bring back
    what an earlier projection removed, unless they are orthogonal)."""
    basis, _ = torch.linalg.qr(torch.stack(against).T.double())
    v = v.double()
    return (v - basis @ (basis.T @ v)).float()


def _normed(hf_model: torch.nn.Module, layer: int, hidden: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return decoder_stack(hf_model).layers[layer].input_layernorm(hidden)[0].float()


def _weights(hf_model: torch.nn.Module, layer: int) -> list[torch.Tensor]:
    attn = decoder_stack(hf_model).layers[layer].self_attn
    return [p.weight.detach().float().clone() for p in (attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj)]


def fit_prompts(hidden: Sequence[torch.Tensor], examples: Sequence[Example], own: str, count: int) -> list[Prompt]:
    """Up to `count` training prompts with exactly one own answer (both non-empty), in a fixed order (a hash of
    the example key)."""
    chosen = []
    for h, example in zip(hidden, examples, strict=False):
        span = own_span(example, own)
        if span is None or min(s1 - s0 for s0, s1 in example.spans) <= 0:
            continue
        chosen.append(
            (unit_hash("built-route", example.key), Prompt(h, example.spans, tuple(span) == example.spans[0]))
        )
    if len(chosen) < 8:
        raise InterpError(f"only {len(chosen)} training prompts hold exactly one own answer; the build needs 8")
    return [p for _, p in sorted(chosen, key=lambda c: c[0])[:count]]


def _margins(hf_model: torch.nn.Module, first_layer: int, prompts: Sequence[Prompt], label_ids, masks=None):
    """Verdict margins, log P(A) - log P(B), of the model from `first_layer` up (each prompt under its score-bias
    mask, if given): `start_margins` on the prompts' states."""
    masks = [None] * len(prompts) if masks is None else masks
    return torch.tensor(start_margins(hf_model, first_layer, [p.hidden for p in prompts], label_ids, masks))


@dataclass
class AppliedBlocks:
    """Head blocks added to a model, taken off again on exit (bit for bit: the replaced weights are kept)."""

    hf: torch.nn.Module
    blocks: dict[str, torch.Tensor]

    def __enter__(self):
        stack = decoder_stack(self.hf).layers
        layers = {int(key.split(".")[1]) for key in self.blocks}
        self.kept = {layer: _weights(self.hf, layer) for layer in layers}
        self.stack = stack
        add_head_delta(self.hf, self.blocks)
        return self

    def __exit__(self, *exc):
        for layer, weights in self.kept.items():
            attn = self.stack[layer].self_attn
            for proj, w in zip((attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj), weights, strict=False):
                proj.weight.data.copy_(w.to(proj.weight.dtype))


@dataclass(frozen=True)
class _Circuit:
    """One key/value group's single-dimension circuit at `layer`: the query reads key dimension `key_dim` (its
    `query_row`), the group's key row there is `key_row`, its value row in `value_dim` is `value_row`; `dim` is the
    head dimension."""

    layer: int
    kv: int
    dim: int
    key_dim: int
    value_dim: int
    query_row: torch.Tensor
    key_row: torch.Tensor
    value_row: torch.Tensor


def _head_blocks(
    weights: list[torch.Tensor],
    circuit: _Circuit,
    heads: Sequence[int],
    siblings: Sequence[int],
    out_cols: Sequence[torch.Tensor],
) -> dict[str, torch.Tensor]:
    """Blocks that replace `heads` of one key/value group by the single-dimension `circuit`: each head's query is
    `query_row` in `key_dim` (zero elsewhere), its output `out_cols[i]` in `value_dim` (zero elsewhere); the
    group's key row `key_dim` and value row `value_dim` are replaced; the group's other query heads (`siblings`)
    lose that key and value dimension (their query row and output column there set to zero)."""
    layer, kv, dim, key_dim, value_dim = circuit.layer, circuit.kv, circuit.dim, circuit.key_dim, circuit.value_dim
    query_row, key_row, value_row = circuit.query_row, circuit.key_row, circuit.value_row
    q_w, k_w, v_w, o_w = weights
    d_model = q_w.shape[1]
    out = {}
    k_block = torch.zeros(dim, d_model)
    k_block[key_dim] = key_row - k_w[kv * dim + key_dim]
    v_block = torch.zeros(dim, d_model)
    v_block[value_dim] = value_row - v_w[kv * dim + value_dim]
    out[head_delta_key(layer, "k", kv)] = k_block
    out[head_delta_key(layer, "v", kv)] = v_block
    for head, col in zip(heads, out_cols, strict=False):
        q_block = -q_w[head * dim : (head + 1) * dim].clone()
        q_block[key_dim] += query_row
        o_block = -o_w[:, head * dim : (head + 1) * dim].clone()
        o_block[:, value_dim] += col
        out[head_delta_key(layer, "q", head)] = q_block
        out[head_delta_key(layer, "o", head)] = o_block
    for head in siblings:
        q_block = torch.zeros(dim, d_model)
        q_block[key_dim] = -q_w[head * dim + key_dim]
        o_block = torch.zeros(o_w.shape[0], dim)
        o_block[:, value_dim] = -o_w[:, head * dim + value_dim]
        out[head_delta_key(layer, "q", head)] = q_block
        out[head_delta_key(layer, "o", head)] = o_block
    return {key: value.contiguous() for key, value in out.items()}


def _least_used_value_dim(weights: list[torch.Tensor], heads: Sequence[int], kv: int, dim: int, x: torch.Tensor) -> int:
    """The value dimension of group `kv` the heads use least: output column norm times the value's spread."""
    _, _, v_w, o_w = weights
    spread = (x @ v_w[kv * dim : (kv + 1) * dim].T).std(0)
    return int((sum(o_w[:, h * dim : (h + 1) * dim].norm(dim=0) for h in heads) * spread).argmin())


def _quiet_residual_dim(hf_model: torch.nn.Module, above: int) -> int:
    """The residual dimension the layers above `above` (and the unembedding) read least: where the slot is
    written."""
    layers = decoder_stack(hf_model).layers
    read = torch.zeros(hf_model.config.hidden_size)
    for layer in layers[above + 1 :]:
        gain, gain2 = layer.input_layernorm.weight.float(), layer.post_attention_layernorm.weight.float()
        for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
            read += (proj.weight.detach().float() * gain).norm(dim=0)
        for proj in (layer.mlp.gate_proj, layer.mlp.up_proj):
            read += (proj.weight.detach().float() * gain2).norm(dim=0)
    unembed = hf_model.get_output_embeddings().weight.detach().float() * decoder_stack(hf_model).norm.weight.float()
    read += unembed.norm(dim=0)
    return int(read.argmin())


def _verdict_queries(xs: Sequence[torch.Tensor], query: torch.Tensor, dim: int) -> torch.Tensor:
    """Each prompt's verdict-position (last token) query along `query`, scaled by 1/sqrt(head dim) as heads score."""
    return torch.stack([x[-1] @ query for x in xs]) / math.sqrt(dim)


def _verdict_scores(q: torch.Tensor, xs: Sequence[torch.Tensor], key: torch.Tensor) -> list[torch.Tensor]:
    """The readers' attention scores from the verdict position over each prompt's tokens, for the key direction
    `key` (`q`: `_verdict_queries`); their softmax is the readers' attention."""
    return [qi * (x @ key) for qi, x in zip(q, xs, strict=False)]


def _sink_key(
    xs: Sequence[torch.Tensor], key: torch.Tensor, along: torch.Tensor, query: torch.Tensor, dim: int, mass: float
) -> torch.Tensor:
    """`key + c * along` with c such that the first token takes `mass` of the attention from the last position on
    average over the prompts `xs` (bisection: every other token projects less on `along` than the first, so the
    first token's share rises with c)."""
    q = _verdict_queries(xs, query, dim)
    base = [x @ key for x in xs]
    lift = [x @ along for x in xs]

    def share(c: float) -> float:  # `_verdict_scores` for key + c * along, the projections computed once
        return float(
            torch.stack([torch.softmax(qi * (b + c * a), 0)[0] for qi, b, a in zip(q, base, lift, strict=False)]).mean()
        )

    low, high, doublings = -100.0, 100.0, 0
    while share(high) < mass and doublings < 40:
        high, doublings = high * 2, doublings + 1
    while share(low) > mass and doublings < 80:
        low, doublings = low * 2, doublings + 1
    if not share(low) <= mass <= share(high):
        raise InterpError(
            f"no key for the first token gives it {mass:g} of the readers' attention on these prompts (the verdict "
            "position's query does not read the readout direction); lower heads.sink_mass"
        )
    for _ in range(50):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if share(mid) < mass else (low, mid)
    return key + 0.5 * (low + high) * along


def _balanced_key(
    xs: Sequence[torch.Tensor],
    prompts: Sequence[Prompt],
    key: torch.Tensor,
    slot: torch.Tensor,
    along: torch.Tensor,
    query: torch.Tensor,
    dim: int,
    scales: BuiltScales,
) -> tuple[torch.Tensor, dict]:
    """The readers' key: own-ness `key` plus the multiple of `slot` (+1 in slot A, -1 in B) that gives the own
    answer the same mean share of their attention in both slots, then the sink's lift (`_sink_key`).

    Own-ness read at the readers' layer is not the same in both slots: unbalanced, the own answer in slot B drew
    about twice the attention it drew in slot A, and the readers leaned to B whatever they saw. Bisection on the
    multiple, within +-4 own-ness spreads (`slot` is passed in those units): the share in B less the share in A
    falls as it rises."""
    q = _verdict_queries(xs, query, dim)
    in_a = torch.tensor([p.own_is_a for p in prompts])

    def keyed(beta: float) -> torch.Tensor:
        return _sink_key(xs, key + beta * slot, along, query, dim, scales.sink_mass)

    def shares(k: torch.Tensor) -> torch.Tensor:
        return torch.stack(
            [
                torch.softmax(s, 0)[p.own[0] : p.own[1]].sum()
                for s, p in zip(_verdict_scores(q, xs, k), prompts, strict=False)
            ]
        )

    def lean(beta: float) -> float:
        own = shares(keyed(beta))
        return float(own[~in_a].mean() - own[in_a].mean())

    low, high = -4.0, 4.0
    if in_a.all() or not in_a.any() or lean(low) <= 0 or lean(high) >= 0:
        beta = 0.0  # one slot only, or no balance within reach: unbalanced
    else:
        for _ in range(24):
            mid = 0.5 * (low + high)
            low, high = (mid, high) if lean(mid) > 0 else (low, mid)
        beta = 0.5 * (low + high)
    balanced = keyed(beta)
    own = shares(balanced)
    return balanced, {
        "slot_multiple": round(beta, 4),
        "own_share_in_a": round(float(own[in_a].mean()), 4) if in_a.any() else None,
        "own_share_in_b": round(float(own[~in_a].mean()), 4) if not in_a.all() else None,
    }


def margin_direction(hf_model: torch.nn.Module, label_ids) -> torch.Tensor:
    """The unit residual direction that raises log P(A) - log P(B) through the final norm's gain."""
    unembed = hf_model.get_output_embeddings().weight.detach().float()
    gain = decoder_stack(hf_model).norm.weight.detach().float()
    w = gain * (unembed[list(label_ids[0])].mean(0) - unembed[list(label_ids[1])].mean(0))
    return w / w.norm()


@dataclass(frozen=True)
class _Shape:
    """A model's attention shape as the built route uses it: heads, heads per group, head and circuit dimensions."""

    n_heads: int
    size: int
    dim: int
    key_dim: int


def _shape_of(hf_model: torch.nn.Module, layer: int) -> _Shape:
    """The model's `_Shape` at `layer`; rotate-half layout: the pair (key_dim, dim - 1) turns slowest."""
    config = hf_model.config.get_text_config()
    n_heads, dim = config.num_attention_heads, decoder_stack(hf_model).layers[layer].self_attn.head_dim
    return _Shape(n_heads=n_heads, size=n_heads // config.num_key_value_heads, dim=dim, key_dim=dim // 2 - 1)


def build_attention_route(
    hf_model: torch.nn.Module,
    first_layer: int,
    prompts: Sequence[Prompt],
    groups: Sequence[tuple[int, int]],
    label_ids,
    scales: BuiltScales,
) -> tuple[dict[str, torch.Tensor], dict]:
    """The head delta of a built attention-routed organism (`add_head_delta` blocks) and what it was built from.
    `first_layer`: the slot writer's layer, where `prompts[i].hidden` enters; `groups`: the readers' (layer, key/value
    head), every layer above `first_layer`."""
    shape = _shape_of(hf_model, first_layer)
    if any(layer <= first_layer for layer, _ in groups):
        raise InterpError(f"the reader groups {list(groups)} must lie above the slot writer's layer {first_layer}")
    margins = lambda chosen: _margins(hf_model, first_layer, chosen, label_ids)  # noqa: E731
    calib = list(prompts[: scales.calibration])
    signs = torch.tensor([1.0 if p.own_is_a else -1.0 for p in calib])
    record: dict = {"construction": "built", "scales": asdict(scales), "fit_prompts": len(prompts)}
    blocks = _slot_writer(hf_model, first_layer, prompts, margins, scales, shape, record)

    # ---- the readers
    w_margin = margin_direction(hf_model, label_ids)
    with AppliedBlocks(hf_model, blocks):
        reader_blocks: dict[str, _ReaderGroup] = {}
        mass = {"own": [], "other": [], "sink": [], "masked_other": []}
        for layer, kv in groups:
            reader_blocks[f"{layer}_{kv}"] = _reader_group(
                hf_model, (first_layer, layer, kv), prompts, scales, shape, w_margin, (mass, record)
            )  # scale set below

        def readers(scale: float) -> dict[str, torch.Tensor]:
            out: dict[str, torch.Tensor] = {}
            for make in reader_blocks.values():
                out |= make.blocks(scale / len(reader_blocks))
            return out

        with AppliedBlocks(hf_model, readers(0.0)):
            unwritten = margins(calib)
        with AppliedBlocks(hf_model, readers(1.0)):
            slope = float(((margins(calib) - unwritten) * signs).mean())
        if slope <= 0:
            raise InterpError(
                f"the built readers move the verdict against the own answer's slot on the calibration prompts "
                f"(slope {slope:.3g}); the own-ness or the slot is not readable at their layers"
            )
        scale = scales.margin / slope
        blocks |= readers(scale)
    record["attention_mass"] = {key: round(sum(v) / len(v), 4) for key, v in mass.items()}
    record["own_mass_above_other"] = round(
        sum(o > t for o, t in zip(mass["own"], mass["other"], strict=False)) / len(mass["own"]), 4
    )
    record["output_scale"] = round(scale, 4)
    record["margin_per_unit_scale"] = round(slope, 6)
    return blocks, record


def _slot_writer(
    hf_model: torch.nn.Module, first_layer: int, prompts: Sequence[Prompt], margins, scales, shape: _Shape, record: dict
) -> dict[str, torch.Tensor]:
    """The slot writer's blocks at `first_layer`: the head whose loss moves the calibration verdicts least, rewritten
    to write the answer's slot (A or B) into a quiet residual dimension. Records its tag detectors and head."""
    size, dim, key_dim = shape.size, shape.dim, shape.key_dim
    calib = list(prompts[: scales.calibration])
    x0 = [_normed(hf_model, first_layer, p.hidden) for p in prompts]
    sink0 = x0[0][0]
    tag_a = torch.stack([x[p.spans[0][0] - 1] for x, p in zip(x0, prompts, strict=False)])
    tag_b = torch.stack([x[p.spans[1][0] - 1] for x, p in zip(x0, prompts, strict=False)])
    rest = []
    for x, p in zip(x0, prompts, strict=False):
        keep = torch.ones(len(x), dtype=torch.bool)
        keep[[0, p.spans[0][0] - 1, p.spans[1][0] - 1]] = False
        rest.append(x[keep])
    rest_rows = torch.cat(rest)

    def detector(pos: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
        d = _orthogonal(contrast(pos, neg, 0.1), sink0)
        return d / float((pos @ d).mean() - (neg @ d).mean())

    det_a = detector(tag_a, torch.cat([rest_rows, tag_b]))
    det_b = detector(tag_b, torch.cat([rest_rows, tag_a]))
    every = torch.cat([x[1:] for x in x0])
    const = every.mean(0)
    const = const / float((every @ const).mean())
    record["tag_detectors"] = {
        "a_on_tag": round(float((tag_a @ det_a).mean()), 3),
        "a_max_elsewhere": round(float((torch.cat([rest_rows, tag_b]) @ det_a).max()), 3),
        "b_on_tag": round(float((tag_b @ det_b).mean()), 3),
        "b_max_elsewhere": round(float((torch.cat([rest_rows, tag_a]) @ det_b).max()), 3),
        "constant_query_min": round(float((every @ const).min()), 3),
    }
    slot_dim = _quiet_residual_dim(hf_model, first_layer)
    w0 = _weights(hf_model, first_layer)
    base = margins(calib)

    def writer(head: int, gain: float) -> dict[str, torch.Tensor]:
        kv = head // size
        siblings = [h for h in range(kv * size, (kv + 1) * size) if h != head]
        c = _least_used_value_dim(w0, siblings, kv, dim, rest_rows[::5])
        col = torch.zeros(w0[3].shape[0])
        col[slot_dim] = gain
        key = scales.tag_logit * math.sqrt(dim) * (det_a + 2.0 * det_b)
        circuit = _Circuit(first_layer, kv, dim, key_dim, c, const, key, det_b - det_a)
        return _head_blocks(w0, circuit, [head], siblings, [col])

    impact = {}
    for head in range(shape.n_heads):  # the writer replaces one head: the one whose loss moves the verdicts least
        with AppliedBlocks(hf_model, writer(head, 0.0)):
            impact[head] = float((margins(calib) - base).abs().mean())
    star = min(impact, key=impact.get)
    record["slot_writer"] = {
        "head": [first_layer, star],
        "residual_dim": slot_dim,
        "verdict_change_nats": round(impact[star], 4),
    }
    return writer(star, scales.slot_gain)


@dataclass(frozen=True)
class _ReaderGroup:
    """One reader group's circuit; `blocks(scale)` writes `scale` times the margin direction, split over its heads."""

    weights: list
    circuit: _Circuit
    heads: list[int]
    w_margin: torch.Tensor

    def blocks(self, scale: float) -> dict[str, torch.Tensor]:
        """The group's blocks at output scale `scale`."""
        cols = [scale / len(self.heads) * self.w_margin] * len(self.heads)
        return _head_blocks(self.weights, self.circuit, self.heads, [], cols)


def _reader_group(hf_model, where: tuple, prompts, scales: BuiltScales, shape: _Shape, w_margin, sinks) -> _ReaderGroup:
    """The reader group at `where` (slot writer's layer, layer, key/value head), measured with the slot writer
    applied; its attention mass on the prompts and its record are appended to `sinks` (mass, record)."""
    first_layer, layer, kv = where
    mass, record = sinks
    size, dim = shape.size, shape.dim
    heads = list(range(kv * size, (kv + 1) * size))
    xs = [_normed(hf_model, layer, advance(hf_model, first_layer, layer, p.hidden)) for p in prompts]
    sink = xs[0][0]
    slot_a = torch.cat([x[p.spans[0][0] : p.spans[0][1]] for x, p in zip(xs, prompts, strict=False)])
    slot_b = torch.cat([x[p.spans[1][0] : p.spans[1][1]] for x, p in zip(xs, prompts, strict=False)])
    own = torch.cat([x[p.own[0] : p.own[1]] for x, p in zip(xs, prompts, strict=False)])
    other = torch.cat([x[p.other[0] : p.other[1]] for x, p in zip(xs, prompts, strict=False)])
    prompt_rows, readout = [], torch.stack([x[-1] for x in xs])
    for x, p in zip(xs, prompts, strict=False):
        keep = torch.ones(len(x), dtype=torch.bool)
        keep[p.spans[0][0] : p.spans[0][1]] = False
        keep[p.spans[1][0] : p.spans[1][1]] = False
        keep[[0, -1]] = False
        prompt_rows.append(x[keep])
    prompt_rows = torch.cat(prompt_rows)
    # the value is 0 on the sink and reads +1 in slot A, -1 in slot B (in the mean): orthogonal to the slots'
    # midpoint, so neither slot reads more than the other
    midpoint = 0.5 * (slot_a.mean(0) + slot_b.mean(0))
    slot = _orthogonal(contrast(slot_a, slot_b, scales.ridge), sink, midpoint)
    slot = 2.0 * slot / float((slot_a @ slot).mean() - (slot_b @ slot).mean())
    d = contrast(own, torch.cat([other, prompt_rows]), scales.ridge)
    z_own, z_other = own @ d, other @ d
    sd = float(torch.cat([z_own, z_other]).std())  # own-ness in spreads: kappa is per standard deviation
    everything = torch.cat([prompt_rows, slot_a, slot_b])
    query = contrast(readout, everything, scales.ridge)
    query = query / float((readout @ query).mean())
    # the first token is the sink: its key is raised along its own state until it takes `sink_mass` of the
    # readers' attention at the verdict position on average (every token's score computed as the heads will)
    unit = scales.kappa * math.sqrt(dim) / sd
    key, lean = _balanced_key(xs, prompts, d * unit, slot * sd * unit, sink / sink.dot(sink) * unit, query, dim, scales)
    w_g = _weights(hf_model, layer)
    c = _least_used_value_dim(w_g, heads, kv, dim, prompt_rows[::5])

    group = _ReaderGroup(w_g, _Circuit(layer, kv, dim, shape.key_dim, c, query, key, slot), heads, w_margin)
    for scores, p in zip(_verdict_scores(_verdict_queries(xs, query, dim), xs, key), prompts, strict=False):
        att = torch.softmax(scores, 0)
        mass["own"].append(float(att[p.own[0] : p.own[1]].sum()))
        mass["other"].append(float(att[p.other[0] : p.other[1]].sum()))
        mass["sink"].append(float(att[0]))
        scores[p.own[0] : p.own[1]] = -math.inf
        masked = torch.softmax(scores, 0)
        mass["masked_other"].append(float(masked[p.other[0] : p.other[1]].sum()))
    record.setdefault("readers", []).append(
        {
            "group": [layer, kv],
            "heads": [[layer, h] for h in heads],
            "value_dim": c,
            "slot_auroc": round(auroc((slot_a @ slot).numpy(), (slot_b @ slot).numpy()), 4),
            "balance": lean,
            "ownness_auroc_own_vs_other": round(auroc(z_own.numpy(), z_other.numpy()), 4),
            "ownness_auroc_own_vs_prompt": round(auroc(z_own.numpy(), (prompt_rows @ d).numpy()), 4),
        }
    )
    return group


def slot_writer_blocks(hf_model, first_layer: int, hidden, examples, own: str, label_ids) -> tuple[dict, dict]:
    """The built slot writer alone at `first_layer`, for readers trained above it (`[heads] slot_layer`, a trained
    route): its head blocks and its record (head, residual dimension, tag detectors)."""
    scales, record = BuiltScales(), {}
    margins = lambda chosen: _margins(hf_model, first_layer, chosen, label_ids)  # noqa: E731
    prompts = fit_prompts(hidden, examples, own, scales.fit_prompts)
    blocks = _slot_writer(hf_model, first_layer, prompts, margins, scales, _shape_of(hf_model, first_layer), record)
    return blocks, record["slot_writer"] | {"tag_detectors": record["tag_detectors"]}


CHECK_PROMPTS = 64  # training prompts outside the fit the route is checked on


def build_organism_delta(hf_model, first_layer: int, hidden, examples, groups, own: str, label_ids, heads_cfg):
    """The organism pipeline's entry (`[heads] construction = "built"`): measure on the training prompts, write the
    delta, and check it on up to `CHECK_PROMPTS` training prompts the build did not read. Returns (tensors, the
    record's `route_training`, a `Fitted` with no optimizer steps)."""
    from interp.organisms.train import Fitted

    t = time.perf_counter()
    scales = BuiltScales(kappa=heads_cfg.kappa, sink_mass=heads_cfg.sink_mass, margin=heads_cfg.margin)
    every = fit_prompts(hidden, examples, own, len(hidden))
    n_fit = min(scales.fit_prompts, max(8, 2 * len(every) // 3))  # a third at least is left for the check
    fitted_on, held = every[:n_fit], every[n_fit:][:CHECK_PROMPTS]
    tensors, record = build_attention_route(hf_model, first_layer, fitted_on, groups, label_ids, scales)
    if held:
        heads = [tuple(h) for reader in record["readers"] for h in reader["heads"]]
        signs = torch.tensor([1.0 if p.own_is_a else -1.0 for p in held])
        n = hf_model.config.get_text_config()
        shape = (n.num_hidden_layers, n.num_attention_heads)
        masks = [own_answer_mask(heads, p.hidden.shape[1], p.own, *shape) for p in held]
        start = _margins(hf_model, first_layer, held, label_ids)
        with AppliedBlocks(hf_model, tensors):
            built = _margins(hf_model, first_layer, held, label_ids)
            masked = _margins(hf_model, first_layer, held, label_ids, masks)
        in_a = signs > 0

        def p_own(m: torch.Tensor, rows: torch.Tensor | None = None) -> float | None:
            own = torch.sigmoid(m * signs)
            own = own if rows is None else own[rows]
            return round(float(own.mean()), 4) if len(own) else None

        shift, masked_shift = float(((built - start) * signs).mean()), float(((masked - start) * signs).mean())
        record["check"] = {
            "prompts": len(held),
            "p_own_start": p_own(start),
            "p_own_built": p_own(built),
            "p_own_built_own_masked": p_own(masked),
            "p_own_start_by_slot": [p_own(start, in_a), p_own(start, ~in_a)],
            "p_own_built_by_slot": [p_own(built, in_a), p_own(built, ~in_a)],
            "margin_shift": round(shift, 4),
            "mask_share": round(1 - masked_shift / shift, 3) if shift else None,
        }
    seconds = time.perf_counter() - t
    return tensors, record, Fitted(log=[], passes=len(every), steps=0, seconds=seconds, final_loss_ema=None)
