"""The causal test over a run: re-judge under a mask of the judge's own answer, against a control judge and
random head sets, and decide with `interp.metrics.causal_test` (its docstring, and docs/causal-test.md, state
the null hypothesis, the statistic and the decision rule).

Responses and gold verdicts are read from the run directory, never regenerated. What is masked:

- `--all-layers`: the judge's own answer at every layer and head; nothing is chosen, so no random head sets;
- `--top-heads K`: the judge's K heads with the largest own-minus-other attention on a seeded selection share
  of the run's items, tested on the rest, against R random head sets of the same size (layer-matched);
- `--spec FILE`: any intervention spec, tested as given.

The control judge reads the same pairs under the same mask on the same answer (the tested judge's own):
the one the user names, or, for an organism, a null organism of the same base model (so the same answers)
when the run holds one (for the null organism: another null, e.g. a seed replicate). Several judges in one
command are corrected with Holm. Every judgment is keyed (`interp.experiments.engine`), so a killed test
resumes and a different test never reuses another's judgments.
"""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Sequence

import numpy as np

from interp.hooks.spec import AttentionIntervention
from interp.analysis.attention_stats import heads_table, top_heads
from interp.analysis.attention_store import attention_judges, load_attention
from interp.config import PlacementKeys
from interp.core.adapters import adapter_folder, organism_base, read_manifest
from interp.core.models import ModelCache, own_model
from interp.data import Item
from interp.splits import split_ids
from interp.errors import InterpError
from interp.experiments.engine import (
    Judges,
    Variant,
    check_variants,
    digest,
    evaluate,
    judge_pool,
    self_judges,
    variant_key,
)
from interp.metrics.causal_test import ALPHA, N_FLIPS, CausalTest, causal_test, holm
from interp.run.store import Run, read_run
from interp.storage import atomic_write_text

SPAN_CONTROLS = ("other", "random")
Heads = Literal["spec", "all-layers", "top-heads"]


@dataclass(frozen=True)
class TestDesign:
    """How a causal test is run: data, written into result.json and part of the result's key."""

    heads: Heads = "spec"
    top_k: int | None = None
    selection_share: float | None = None  # share of the run's items that choose heads; the rest test them
    split_seed: int = 0
    control_judge: str | None = None  # None: automatic (an organism's counterpart); "" : none
    random_head_sets: int = 19
    layer_matched: bool = True
    test_alpha: float = ALPHA  # the test's level (a spec's `alpha` is its mask strength)
    n_flips: int = N_FLIPS
    span_controls: bool = False  # also the other-span and random-span masks (descriptive, not in the decision)

    def __post_init__(self) -> None:
        if self.heads == "top-heads" and (self.top_k is None or self.top_k < 1):
            raise InterpError("--top-heads needs a number of heads of at least 1")
        if self.selection_share is not None and not 0 < self.selection_share < 1:
            raise InterpError(f"--selection-share {self.selection_share} must be between 0 and 1 (exclusive)")
        if self.heads == "top-heads" and self.selection_share is None:
            raise InterpError("--top-heads chooses heads on a selection share of the items: give --selection-share (e.g. 0.4)")
        if self.random_head_sets < 0:
            raise InterpError(f"--random-head-sets {self.random_head_sets} must be 0 or more")
        if not 0 < self.test_alpha < 1:
            raise InterpError(f"--test-alpha {self.test_alpha} must be between 0 and 1")
        if self.n_flips < 1:
            raise InterpError("n_flips must be at least 1")


def design_from_options(*, spec_given: bool, all_layers: bool, top_heads: int | None, control_judge: str | None, **fields) -> TestDesign:
    """The design from a command's options: exactly one of a spec, `all_layers` or `top_heads`; a control judge
    named "none" (or "") means no control judge."""
    chosen = [name for name, given in (("--spec", spec_given), ("--all-layers", all_layers), ("--top-heads", top_heads is not None)) if given]
    if len(chosen) != 1:
        raise InterpError(f"give exactly one of --spec FILE, --all-layers, --top-heads K (got {', '.join(chosen) or 'none'})")
    heads = {"--spec": "spec", "--all-layers": "all-layers", "--top-heads": "top-heads"}[chosen[0]]
    control = "" if control_judge in ("none", "") else control_judge
    return TestDesign(heads=heads, top_k=top_heads, control_judge=control, **fields)


def organism_role(spec: str) -> str | None:
    """"null" or "planted" for an organism (by its manifest's planting share), None for a plain model."""
    folder = adapter_folder(spec)
    if folder is None:
        return None
    share = read_manifest(folder).get("config", {}).get("planting", {}).get("share", 0.0)
    return "planted" if share and share > 0 else "null"


def counterpart(run: Run, judge: str) -> str | None:
    """An organism's automatic control: a null organism of the same base model among the run's judges, other
    than the judge itself (for a planted organism its null counterpart, for a null organism another null, e.g.
    a seed replicate). Never a planted one: a two-sided contrast against it is the planted test mirrored."""
    if organism_role(judge) is None:
        return None
    base = organism_base(judge)
    for other in run.config.judge_specs:
        if other != judge and organism_role(other) == "null" and organism_base(other) == base:
            return other
    return None


def resolve_control(run: Run, judge: str, design: TestDesign) -> str | None:
    if design.control_judge == "":
        return None
    control = design.control_judge if design.control_judge is not None else counterpart(run, judge)
    if control == judge:
        raise InterpError(f"--control-judge {control!r} is the judge under test; name another judge that reads the same pairs")
    return control


def random_head_sets(chosen: dict[int, list[int]], n_layers: int, n_heads: int, count: int, *, seed_key: str, layer_matched: bool) -> list[dict[int, list[int]]]:
    """`count` random head sets as large as `chosen` (per layer when layer-matched), seeded by `seed_key`."""
    size = sum(len(h) for h in chosen.values())
    sets = []
    for r in range(count):
        rng = random.Random(f"{seed_key}|{r}")
        if layer_matched:
            table = {layer: sorted(rng.sample(range(n_heads), len(heads))) for layer, heads in chosen.items()}
        else:
            pairs = rng.sample([(layer, head) for layer in range(n_layers) for head in range(n_heads)], size)
            table = {}
            for layer, head in sorted(pairs):
                table.setdefault(layer, []).append(head)
        sets.append(table)
    return sets


def has_attention(run: Run, judge: str) -> bool:
    """Whether the run recorded span attention for this judge."""
    return run.config.attention != "none" and judge in attention_judges(run.dir.root)


def mass_moved(run: Run, judge: str, spec: AttentionIntervention, item_ids: Sequence[str]) -> dict | None:
    """Where the masked attention went, at the masked heads and the final position, on the test items.

    Masking renormalises each attention row, so the own answer's mass m_own is shared out in proportion to
    what every other key already held: the other answer receives m_other / (1 - m_own) of it. That is exact
    where the mask acts first; later layers see changed inputs, which this does not follow. None when the
    run holds no span attention for the judge, or the spec is not a mask of the own answer.
    """
    if spec.target != "self" or not has_attention(run, judge):
        return None
    attention = load_attention(run.dir.root, judge)
    rows = [attention.item_ids.index(i) for i in item_ids if i in attention.item_ids]
    own, other = attention.own("mass")[rows].numpy(), attention.other("mass")[rows].numpy()  # item order layer head
    keep = np.zeros(own.shape[2:], dtype=bool)
    for layer, heads in spec.selection(keep.shape[0]).items():
        keep[layer, list(heads) if heads is not None else slice(None)] = True
    own, other = own[..., keep], other[..., keep]
    finite = np.isfinite(own) & np.isfinite(other) & (own < 1)
    removed = own[finite]
    to_other = removed * other[finite] / (1 - removed)
    total = float(removed.sum())
    return {
        "share_to_other_answer": float(to_other.sum() / total) if total > 0 else None,
        "mean_own_mass_removed": float(removed.mean()) if removed.size else None,
        "where": "masked heads, final position, where the mask acts first (later layers not followed)",
    }


def _mask_spec(run: Run, judge: str, design: TestDesign, spec: AttentionIntervention | None, selection: list[str]) -> AttentionIntervention:
    if design.heads == "all-layers":
        return AttentionIntervention(target="self", alpha=0.0, name="self-mask-all-layers")
    if design.heads == "top-heads":
        if not has_attention(run, judge):
            raise InterpError(f"--top-heads reads {judge}'s span attention, which this run did not record; make the run with attention = \"final\"")
        heads = heads_table(top_heads(run.dir.root, judge, design.top_k, items=selection))
        return AttentionIntervention(target="self", alpha=0.0, heads=heads, name=f"self-mask-top{design.top_k}-heads")
    if spec is None:
        raise InterpError("give an intervention: --all-layers, --top-heads K or --spec FILE")
    return spec


def _delta(result: dict, name: str) -> np.ndarray:
    return np.asarray(result["per_item"]["after"][name]) - np.asarray(result["per_item"]["before"])


def _plan(run: Run, judges: Sequence[str] | None, design: TestDesign, items: Sequence[str] | None):
    ids = [item.id for item in run.items if items is None or item.id in set(items)]
    if not ids:
        raise InterpError("no item of the run is in the items to test on")
    selection, test = split_ids(ids, design.selection_share, design.split_seed, purpose="selection", what="--selection-share") if design.selection_share else ([], ids)
    names = self_judges(run, judges)
    controls = {judge: resolve_control(run, judge, design) for judge in names}
    if design.heads == "all-layers":
        missing = [judge for judge, control in controls.items() if control is None]
        if missing:
            raise InterpError(
                f"--all-layers needs a control judge for {', '.join(missing)}: masking an answer at every layer moves any judge "
                "that reads it; name one with --control-judge (e.g. the other model of the pair)"
            )
    return selection, test, names, controls


def intervene_run(
    run_dir: Path,
    spec: AttentionIntervention | None = None,
    *,
    design: TestDesign | None = None,
    judges: Sequence[str] | None = None,
    backend: str | None = None,
    with_controls: bool | None = None,
    progress: bool = True,
    where: PlacementKeys | None = None,
    models: ModelCache | None = None,
    items: Sequence[str] | None = None,
    split: str | None = None,
) -> dict:
    """Run the causal test on the run's self-judges (or `judges`); write RUN/interventions/<label>-<key>/.

    `items` (ids): the items to split or test on (None: all of the run's). `with_controls` overrides
    `design.span_controls`. Returns the result written to result.json.
    """
    design = design or TestDesign()
    if with_controls is not None:
        design = dataclasses.replace(design, span_controls=with_controls)
    run = read_run(run_dir)
    selection, test, names, controls = _plan(run, judges, design, items)
    test_items = [item for item in run.items if item.id in set(test)]
    pool = judge_pool(run, backend, where=where, models=models)
    specs = {judge: _mask_spec(run, judge, design, spec, selection) for judge in names}
    for judge in names:  # every mask is checked against every model before any judging starts
        for model in {judge, controls[judge]} - {None}:
            check_variants(pool.model(model), [Variant("self", attention=specs[judge])])
    backend_name = backend if backend is not None else run.config.backend
    variants = {judge: _variants(specs[judge], design.span_controls) for judge in names}
    keys = {judge: {name: variant_key(run, judge, backend_name, v, test_items) for name, v in variants[judge].items()} for judge in names}
    control_keys = {
        judge: variant_key(run, controls[judge], backend_name, variants[judge]["self"], test_items, own_model(judge)) for judge in names if controls[judge]
    }
    identity = {"keys": keys, "control_keys": control_keys, "design": dataclasses.asdict(design), "selection": selection, "test": test}
    label = spec.label if design.heads == "spec" and spec is not None else specs[names[0]].name or "causal-test"
    out_dir = run.dir.intervention(label, digest(identity))
    result: dict = {
        "spec": specs[names[0]].to_dict(),
        "design": dataclasses.asdict(design),
        "run_dir": str(run.dir.root),
        "n_items": len(test),
        "split": split or (f"test share {1 - design.selection_share:g} (split seed {design.split_seed})" if design.selection_share else "all items"),
        "selection_items": selection,
        "test_items": test,
        "backend": backend_name,
        "variant_keys": keys,
        "control_variant_keys": control_keys,
        "reused": {
            "responses": sum(len(v) for v in run.responses.values()),
            "responses_generated": 0,
            "gold_verdicts": run.n_gold_verdicts,
            "gold_judges_rerun": 0,
            "gold_judges": run.gold_judges,
        },
        "judges": {},
    }
    with run.dir.writer():
        for judge in names:
            result["judges"][judge] = _test_judge(run, judge, controls[judge], specs[judge], variants[judge], design, pool, test_items, progress)
            result["judges"][judge] |= {"selection_items": selection, "test_items": test}
        _holm(result, names)
        atomic_write_text(out_dir / "spec.toml", specs[names[0]].to_toml())
        atomic_write_text(out_dir / "result.json", json.dumps(result, indent=2))
    return result


def _variants(spec: AttentionIntervention, span_controls: bool) -> dict[str, Variant]:
    variants = {"self": Variant("self", attention=spec)}
    if span_controls and spec.target == "self":
        variants |= {target: Variant(target, attention=dataclasses.replace(spec, target=target)) for target in SPAN_CONTROLS}
    return variants


def _test_judge(
    run: Run, judge: str, control: str | None, spec: AttentionIntervention, variants: dict[str, Variant], design: TestDesign, pool: Judges, items: list[Item], progress: bool
) -> dict:
    config = run.config
    judged = evaluate(run, judge, variants, pool, items=items, progress=progress)
    delta_judge = _delta(judged, "self")
    control_result, delta_control = None, None
    if control is not None:
        control_result = evaluate(run, control, {"self": variants["self"]}, pool, items=items, progress=progress, own=own_model(judge))
        delta_control = _delta(control_result, "self")
    contrast = delta_judge - (delta_control if delta_control is not None else 0.0)
    common = dict(control_judge=control, alpha=design.test_alpha, n_flips=design.n_flips, n_boot=config.n_boot, seed=config.seed)
    first = causal_test(delta_judge, delta_control, **common)
    test, random_effects = first, None
    if design.heads == "top-heads" and design.random_head_sets > 0:
        if first.p_flip > design.test_alpha:  # the random sets cannot change the decision: the same test, marked
            test = dataclasses.replace(first, random_sets_skipped=True)
        else:
            random_effects = _random_contrasts(run, judge, control, spec, design, pool, items, progress)
            test = causal_test(delta_judge, delta_control, random_contrasts=random_effects, **common)
    out = {k: judged[k] for k in ("before", "variants", "effects", "own")}
    out |= {
        "causal": test.causal,
        "p_value": test.p_value,
        "p_holm": test.p_value,  # one judge; Holm over several replaces it (`_holm`)
        "test_alpha": test.alpha,
        "effect": test.effect,
        "n_test": test.n_test,
        "verdict": test.verdict(judge),
        "test": test.to_dict(),
        "per_item_contrast": dict(zip(judged["per_item"]["items"], contrast.tolist())),
        "masked_mass": mass_moved(run, judge, spec, judged["per_item"]["items"]),
    }
    if control_result is not None:
        out["control"] = {"judge": control, "before": control_result["before"], "after": control_result["variants"]["self"], "effect": control_result["effects"]["self"]}
    if random_effects is not None:
        out["random_head_sets"] = {"means": random_effects.mean(axis=1).tolist(), "layer_matched": design.layer_matched}
    return out


def _random_contrasts(run: Run, judge: str, control: str | None, spec: AttentionIntervention, design: TestDesign, pool: Judges, items: list[Item], progress: bool) -> np.ndarray:
    model = pool.model(judge)
    table = spec.heads_table
    chosen = {layer: list(heads) for layer, heads in table.items()} if table else None
    if chosen is None:
        raise InterpError("random head sets need the chosen heads as a layer -> heads table")
    tables = random_head_sets(chosen, model.n_layers, model.n_heads, design.random_head_sets, seed_key=f"{judge}|{design.split_seed}", layer_matched=design.layer_matched)
    variants = {f"random-{r}": Variant(f"random-{r}", attention=dataclasses.replace(spec, heads=tuple((layer, tuple(h)) for layer, h in sorted(t.items())), name=f"random-heads-{r}")) for r, t in enumerate(tables)}
    judged = evaluate(run, judge, variants, pool, items=items, progress=progress)
    rows = [_delta(judged, name) for name in variants]
    if control is not None:
        controlled = evaluate(run, control, variants, pool, items=items, progress=progress, own=own_model(judge))
        rows = [row - _delta(controlled, name) for row, name in zip(rows, variants)]
    return np.array(rows)


def _holm(result: dict, names: Sequence[str]) -> None:
    """Holm over the judges of one command (one judge: p_holm = p_value): the decision is p_holm <= test_alpha,
    and each record keeps its raw p beside the adjusted one."""
    adjusted = holm([result["judges"][judge]["p_value"] for judge in names])
    for judge, p in zip(names, adjusted):
        record = result["judges"][judge]
        record["p_holm"], record["causal_unadjusted"] = p, bool(record["p_value"] <= record["test_alpha"])
        record["causal"] = bool(p <= record["test_alpha"])
        test = CausalTest(**record["test"])
        record["verdict"] = test.verdict(judge, p_holm=p if len(names) > 1 else None, n_family=len(names))
    result["multiple_comparisons"] = f"Holm over {len(names)} judges" if len(names) > 1 else "none (one judge)"
