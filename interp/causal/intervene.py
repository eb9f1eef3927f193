"""The causal test over a run: re-judge under a mask of the judge's own answer, against a control judge and
random head sets, and decide with `interp.metrics.causal_test` (its docstring, and docs/causal-test.md, state
the null hypothesis, the statistic and the decision rule).

Responses and gold verdicts are read from the run directory, never regenerated. What is masked:

- `--all-layers`: the judge's own answer at every layer and head; nothing is chosen, so no random head sets;
- `--top-heads K`: the judge's K heads with the largest own-minus-other attention on a seeded selection share
  of the run's items, tested on the rest, against R random head sets of the same size (layer-matched);
- `--spec FILE`: any intervention spec, tested as given.

The control judges read the same pairs on the same answer (the tested judge's own): those the user names, or,
for an organism, the null organisms of the same base model (so the same answers). Where heads are chosen on the
tested judge (`--top-heads`, or the candidates of `interp explain`), the null is matched
(`interp.causal.matched`): each control goes through the same choice on the same selection items and is measured
at its own set; the random head sets are each judge's own draw. A spec or `--all-layers` chooses nothing, so
every judge is measured under it as given. Several judges in one
command are corrected with Holm. Every judgment is keyed (`interp.engine.variants`), so a killed test
resumes and a different test never reuses another's judgments.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from interp.analysis.attention_stats import heads_table, top_heads
from interp.causal.design import TestDesign, resolve_controls
from interp.causal.judge_test import (
    JudgeTestOptions,
    holm_judges,
    judge_level_fields,
    judge_level_test,
    own_answer_specificity,
    require_specificity,
)
from interp.causal.masked_mass import has_attention, mass_moved
from interp.causal.matched import NULL, attention_top_heads, localise_controls
from interp.core.models import own_model
from interp.data import Item
from interp.engine.executor import Execution, VariantTask, execute
from interp.engine.judges import Judges, baseline, evaluate, judge_pool
from interp.engine.variants import (
    NO_INTERVENTION,
    Variant,
    check_nodes_take_effect,
    check_spans,
    check_variants,
    digest,
    self_judges,
)
from interp.errors import InterpError
from interp.hooks.nodes import NodeIntervention, node_from_dict
from interp.hooks.spec import AttentionIntervention
from interp.metrics.causal_test import check_random_sets, min_random_sets, rank_pvalue
from interp.metrics.judge_level import MIN_CONTROLS, between_judge_test
from interp.metrics.mirror import mirror_shares
from interp.results.causal import (
    Behaviour,
    CausalResult,
    ControlRecord,
    MirrorShares,
    PairedEffect,
    RandomHeadSets,
    TestDesignRecord,
)
from interp.results.codec import check_causal_replaceable, write_causal
from interp.run.store import Run, read_run
from interp.splits import split_ids
from interp.storage import atomic_write_text

SPAN_CONTROLS = ("other", "random")
REMOVAL = "less"
"""The causal test's alternative: one-sided in the removal direction, the judge's P(own) falling more than its
controls' (the direction the share condition fixes: a share above 0 is a gap removed), for Crawford-Howell and the
rank among random head sets alike. The share's interval is at 1 - test_alpha (`interp.metrics.share.share_level`)."""


def random_head_sets(
    chosen: dict[int, list[int]], n_layers: int, n_heads: int, count: int, *, seed_key: str, layer_matched: bool
) -> list[dict[int, list[int]]]:
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


def _mask_spec(run: Run, judge: str, design: TestDesign, spec, selection: list[str]):
    if design.heads == "all-layers":
        if design.site == "head_output":
            return node_from_dict(
                {"site": "head_output", "op": design.op, "name": f"head-output-{design.op}-all-layers"}
            )
        return AttentionIntervention(target="self", alpha=0.0, name="self-mask-all-layers")
    if design.heads == "top-heads":
        if not has_attention(run, judge):
            raise InterpError(
                f"--top-heads reads {judge}'s span attention, which this run did not record; make the run "
                'with attention = "final"'
            )
        return top_heads_spec(design, heads_table(top_heads(run.dir.root, judge, design.top_k, items=selection)))
    if spec is None:
        raise InterpError("give an intervention: --all-layers, --top-heads K or --spec FILE")
    return spec


def top_heads_spec(design: TestDesign, heads: dict[int, list[int]]):
    """`--top-heads K`'s intervention at a chosen head table: the own-answer mask, or `design.op` on the heads'
    outputs (`--site head_output`)."""
    if design.site == "head_output":
        table = {layer: list(hs) for layer, hs in heads.items()}
        return node_from_dict(
            {
                "site": "head_output",
                "op": design.op,
                "heads": table,
                "name": f"head-output-{design.op}-top{design.top_k}-heads",
            }
        )
    heads = {layer: list(hs) for layer, hs in heads.items()}
    return AttentionIntervention(target="self", alpha=0.0, heads=heads, name=f"self-mask-top{design.top_k}-heads")


def _control_specs(run: Run, judge: str, controls: Sequence[str], design: TestDesign, spec, selection, given, pool):
    """Each control's spec and the null they make: `given` (the caller chose each control's set by the same
    method: "matched"); with `--top-heads`, each control's own top-K heads by own-minus-other attention on the
    selection items, the tested judge's answer read as own ("matched"); otherwise the tested judge's spec as given
    ("fixed": nothing is chosen on the judge)."""
    if given is not None:
        missing = [c for c in controls if c not in given]
        if missing:
            raise InterpError(f"control_specs: no spec for control judge(s) {', '.join(missing)}")
        return {c: given[c] for c in controls}, NULL
    if design.heads != "top-heads":
        return {c: spec for c in controls}, "fixed"
    located = localise_controls(run, controls, own_model(judge), ["attention"], selection, pool, progress=False)
    return {
        c: top_heads_spec(design, attention_top_heads(located[c]["attention"], design.top_k)) for c in controls
    }, NULL


def _delta(result: dict, name: str) -> np.ndarray:
    return np.asarray(result["per_item"]["after"][name]) - np.asarray(result["per_item"]["before"])


def _plan(run: Run, judges: Sequence[str] | None, design: TestDesign, items: Sequence[str] | None):
    ids = [item.id for item in run.items if items is None or item.id in set(items)]
    if not ids:
        raise InterpError("no item of the run is in the items to test on")
    selection, test = (
        split_ids(ids, design.selection_share, design.split_seed, purpose="selection", what="--selection-share")
        if design.selection_share
        else ([], ids)
    )
    names = self_judges(run, judges)
    controls = {judge: resolve_controls(run, judge, design) for judge in names}
    if design.heads == "top-heads":
        check_random_sets(random_sets(design, names), test_alpha=design.test_alpha, n_tests=len(names))
    return selection, test, names, controls


def random_sets(design: TestDesign, names: Sequence[str]) -> int:
    """R: the design's, or the fewest whose rank p can reach alpha after Holm over the tested judges."""
    return (
        design.random_head_sets
        if design.random_head_sets is not None
        else min_random_sets(design.test_alpha, len(names))
    )


def intervene_run(
    run_dir: Path,
    spec: AttentionIntervention | None = None,
    *,
    design: TestDesign | None = None,
    judges: Sequence[str] | None = None,
    items: Sequence[str] | None = None,
    split: str | None = None,
    control_specs: Mapping[str, AttentionIntervention | NodeIntervention] | None = None,
    execution: Execution = Execution(),
) -> CausalResult:
    """Run the causal test on the run's self-judges (or `judges`); write RUN/interventions/<label>-<key>/.

    `items` (ids): the items to split or test on (None: all of the run's); `split`: how the result names them.
    `control_specs`: each control judge's own spec, its set chosen by the same method as the tested judge's (the
    matched null, `interp.causal.matched`; one tested judge). `execution`: the backend, placement, models,
    memory budget, executor and progress bars (`interp.engine.executor.Execution`); none of them changes a
    judgment. Returns the result written to result.json (`CausalResult`).
    """
    design = design or TestDesign()
    run = read_run(run_dir)
    selection, test, names, controls = _plan(run, judges, design, items)
    test_items = [item for item in run.items if item.id in set(test)]
    pool = execution.pool(run)
    pool.keep |= set(names)  # the tested judges stay loaded; controls are loaded in turn and let go
    _check_top_k(pool, names, design)
    if control_specs is not None and len(names) != 1:
        raise InterpError("control_specs: the matched null's control sets belong to one tested judge; test one")
    specs, variants = _judge_variants(run, names, design, spec, selection)
    control_variants, nulls = _control_variants(run, names, controls, design, specs, selection, control_specs, pool)
    backend_name = execution.backend if execution.backend is not None else run.config.backend
    _check_inputs(run, pool, names, variants, control_variants, test_items)
    keys, control_keys = _variant_keys(run, names, pool, (variants, control_variants, controls), test_items)
    identity = {
        "keys": keys,
        "control_keys": control_keys,
        "design": design.record(),
        "selection": selection,
        "test": test,
    }
    label = spec.label if design.heads == "spec" and spec is not None else specs[names[0]].name or "causal-test"
    out_dir = run.dir.intervention(label, digest(identity))
    result = _result_header(run, specs[names[0]], design, identity, controls, split, backend_name)
    check_causal_replaceable(out_dir)  # one a newer interp wrote is refused, never replaced by this version's
    with run.dir.writer():
        execute(
            run,
            [
                task
                for judge in names
                for task in _tasks(run, judge, control_variants[judge], variants[judge], test_items)
            ],
            pool,
        )
        for judge in names:
            result["judges"][judge] = _judge_result(
                run,
                judge,
                (specs, variants, control_variants, nulls),
                design,
                random_sets(design, names),
                pool,
                (selection, test, test_items),
                execution.progress,
            )
        holm_judges(result, names)
        require_specificity(result, names)
        atomic_write_text(out_dir / "spec.toml", specs[names[0]].to_toml())
        return write_causal(out_dir, result)


def _variant_keys(run: Run, names: Sequence[str], pool: Judges, plan: tuple, test_items) -> tuple[dict, dict]:
    """Each tested judge's variant keys and its controls' (`plan`: variants, control variants, controls), as the
    pool judges them (a held judge's backend and open blocks are part of its keys, `Judges.key`)."""
    variants, control_variants, controls = plan
    keys = {
        judge: {name: pool.key(run, judge, v, test_items) for name, v in variants[judge].items()} for judge in names
    }
    control_keys = {
        judge: {
            control: pool.key(run, control, control_variants[judge][control], test_items, own_model(judge))
            for control in controls[judge]
        }
        for judge in names
    }
    return keys, control_keys


def _result_header(
    run: Run, spec, design: TestDesign, identity: dict, controls: dict, split: str | None, backend_name: str
) -> dict:
    """result.json before any judge is tested: what was tested, on which items, and what was reused."""
    return {
        "spec": spec.to_dict(),
        "design": TestDesignRecord(**design.record()),
        "run_dir": str(run.dir.root),
        "n_items": len(identity["test"]),
        "split": split
        or (
            f"{len(identity['selection'])} selection / {len(identity['test'])} test items (test share "
            f"{1 - design.selection_share:g}, split seed {design.split_seed})"
            if design.selection_share
            else "all items"
        ),
        "selection_items": identity["selection"],
        "test_items": identity["test"],
        "backend": backend_name,
        "variant_keys": identity["keys"],
        "control_variant_keys": identity["control_keys"],
        "test": {
            "kind": "between-judge",
            "claim": "self-preference: the tested judge against the spread of control judges that read the same "
            "answers and wrote neither",
            "controls": controls,
            "min_controls": MIN_CONTROLS,
        },
        "reused": {
            "responses": sum(len(v) for v in run.responses.values()),
            "responses_generated": 0,
            "gold_verdicts": run.n_gold_verdicts,
            "gold_judges_rerun": 0,
            "gold_judges": run.gold_judges,
        },
        "judges": {},
    }


def _judge_result(
    run: Run, judge: str, plan: tuple, design: TestDesign, random_sets: int, pool, items: tuple, progress: bool
) -> dict:
    """One tested judge's entry in result.json (`plan`: specs, variants, control variants, nulls; `items`: the
    selection ids, the test ids and the test items)."""
    specs, variants, control_variants, nulls = plan
    selection, test, test_items = items
    trial = _Trial(judge, specs[judge], variants[judge], control_variants[judge], test_items)
    return _test_judge(run, trial, design, random_sets, pool, progress) | {
        "selection_items": selection,
        "test_items": test,
        "null": nulls[judge],
        "control_sets": {c: v.identity() for c, v in control_variants[judge].items()},
    }


def _judge_variants(run: Run, names: Sequence[str], design: TestDesign, spec, selection: list[str]):
    """Per tested judge, the spec it is tested under and the variants it is judged with."""
    specs = {judge: _mask_spec(run, judge, design, spec, selection) for judge in names}
    return specs, {judge: _variants(specs[judge], design.span_controls, selection) for judge in names}


def causal_tasks(
    run_dir: Path,
    spec: AttentionIntervention | NodeIntervention | None = None,
    *,
    design: TestDesign,
    judges: Sequence[str] | None = None,
    items: Sequence[str] | None = None,
    control_specs: Mapping[str, AttentionIntervention | NodeIntervention] | None = None,
) -> list[VariantTask]:
    """The (judge, variant) tasks `intervene_run` with these arguments executes before its statistics (its
    random head sets aside), so a job of many tests can run all of theirs as one batch of tasks first
    (`interp.studies.explain` on Ray); the tests then read every judgment from the store."""
    run = read_run(run_dir)
    selection, test, names, controls = _plan(run, judges, design, items)
    test_items = [item for item in run.items if item.id in set(test)]
    specs, variants = _judge_variants(run, names, design, spec, selection)
    control_variants, _ = _control_variants(run, names, controls, design, specs, selection, control_specs, None)
    return [
        task for judge in names for task in _tasks(run, judge, control_variants[judge], variants[judge], test_items)
    ]


def _control_variants(run: Run, names, controls: dict, design: TestDesign, specs: dict, selection, given, pool):
    """Per tested judge, each control's variant ("self": its own set under the matched null) and the null."""
    variants, nulls = {}, {}
    for judge in names:
        chosen, nulls[judge] = _control_specs(
            run, judge, controls[judge], design, specs[judge], selection, given, pool or judge_pool(run)
        )
        variants[judge] = {c: variant_of("self", s, selection) for c, s in chosen.items()}
    return variants, nulls


def _tasks(
    run: Run, judge: str, control_variants: dict[str, Variant], variants: dict[str, Variant], items: list[Item]
) -> list[VariantTask]:
    """What the test judges for one tested judge, as tasks: its variants, then each control's baseline (when
    the run did not judge with it) and its judging under its own variant (the tested judge's answer as own)."""
    ids, own, folder = tuple(item.id for item in items), own_model(judge), str(run.dir.root)
    tasks = [VariantTask(folder, judge, variant, ids) for variant in variants.values()]
    for control, variant in control_variants.items():
        if control not in run.config.judge_specs:
            tasks.append(VariantTask(folder, control, NO_INTERVENTION, ids, own))
        tasks.append(VariantTask(folder, control, variant, ids, own))
    return tasks


def _check_top_k(pool: Judges, names: Sequence[str], design: TestDesign) -> None:
    """--top-heads K must leave heads unchosen: K >= layers x heads masks every head, and every random set
    would be the chosen one (p_rank 1 by construction)."""
    if design.heads != "top-heads":
        return
    for judge in names:
        model = pool.model(judge)
        total = model.n_layers * model.n_heads
        if design.top_k >= total:
            raise InterpError(
                f"--top-heads {design.top_k} is not fewer than {judge}'s {model.n_layers} layers x "
                f"{model.n_heads} heads = {total}: "
                f"nothing would be left unchosen for the random head sets; use at most {total - 1}, or --all-layers"
            )


def _check_inputs(
    run: Run,
    pool: Judges,
    names: Sequence[str],
    variants: dict[str, dict[str, Variant]],
    control_variants: dict[str, dict[str, Variant]],
    items: list[Item],
) -> None:
    """Everything the test reads, read and checked before its first write: each mask fits each model and takes
    effect on it (a control: its own variant), its target span exists in every test prompt (both orders), every
    baseline judgment is there, and the run's summary (read again for the report at the end) is valid JSON."""
    for judge in names:
        for model, checked in [
            (judge, list(variants[judge].values())),
            *((c, [v]) for c, v in control_variants[judge].items()),
        ]:
            loaded = pool.model(model)
            check_variants(loaded, checked)
            check_spans(run, loaded, checked, items, own=own_model(judge))
            check_nodes_take_effect(run, loaded, checked, items)
            if model in run.config.judge_specs:
                baseline(run, model, items, own_model(judge))
            pool.release(model)  # checked: let it go until its turn comes (a tested judge is kept)
    if run.dir.summary.exists():
        run.dir.read_summary()


def variant_of(
    name: str, spec: AttentionIntervention | NodeIntervention, reference: Sequence[str] | None = None
) -> Variant:
    """The variant that applies one spec: an attention spec as a score bias, a node spec at its hook points
    (`reference`: the items whose prompts give its means or donors)."""
    if isinstance(spec, NodeIntervention):
        return Variant(name, (spec,), reference=tuple(reference) if reference else None)
    return Variant(name, (spec,))


def _variants(
    spec: AttentionIntervention | NodeIntervention, span_controls: bool, reference: Sequence[str] | None = None
) -> dict[str, Variant]:
    variants = {"self": variant_of("self", spec, reference)}
    if span_controls and isinstance(spec, AttentionIntervention) and spec.target == "self":
        variants |= {target: Variant(target, (dataclasses.replace(spec, target=target),)) for target in SPAN_CONTROLS}
    return variants


@dataclasses.dataclass(frozen=True)
class _Trial:
    """One tested judge's work: its spec and variants, each control judge's variant, and the test items."""

    judge: str
    spec: AttentionIntervention
    variants: dict[str, Variant]
    control_variants: dict[str, Variant]
    items: list[Item]


def _test_judge(run: Run, trial: _Trial, design: TestDesign, n_random: int, pool: Judges, progress: bool) -> dict:
    """One judge: its within-judge effect, and, with at least MIN_CONTROLS control judges, the between-judge
    test of self-preference (Crawford-Howell of its change of P(own) against the controls' changes under the
    same answer, each under its own variant; for chosen heads, also against random head sets), and the share of its
    self-preference gap over the controls that the mask removes."""
    judge, spec, variants, control_variants, items = (
        trial.judge,
        trial.spec,
        trial.variants,
        trial.control_variants,
        trial.items,
    )
    config = run.config
    controls = list(control_variants)
    own = own_model(judge)
    judged = evaluate(run, judge, variants, pool, items=items, progress=progress)
    delta_judge = _delta(judged, "self")
    gold = run.gold_own(own)[[run.items.index(item) for item in items]]
    judged_controls = {}
    for c in controls:  # one at a time, each let go once judged: the peak holds one control, not all
        judged_controls[c] = evaluate(
            run, c, {"self": control_variants[c]}, pool, items=items, progress=progress, own=own
        )
        pool.release(c)
    delta_controls = np.array([_delta(r, "self") for r in judged_controls.values()]).reshape(len(controls), len(items))
    common = dict(
        test_alpha=design.test_alpha,
        n_flips=design.n_flips,
        n_boot=config.n_boot,
        seed=config.seed,
        alternative=REMOVAL,
    )
    before, after = np.asarray(judged["per_item"]["before"]), np.asarray(judged["per_item"]["after"]["self"])
    control_before = np.array([r["per_item"]["before"] for r in judged_controls.values()]).reshape(
        len(controls), len(items)
    )
    control_after = np.array([r["per_item"]["after"]["self"] for r in judged_controls.values()]).reshape(
        len(controls), len(items)
    )
    test, gap = judge_level_test(before, after, gold, gold, control_before, control_after, JudgeTestOptions(**common))
    random_effects, random_skipped = None, False
    if design.heads == "top-heads" and test.p_value is not None:
        if test.p_value > design.test_alpha:  # the random sets cannot change the decision: skipped, and said so
            random_skipped = True
        else:
            random_effects = _random_effects(run, trial, design, n_random, pool, progress, variants["self"].reference)
            chosen = float(delta_judge.mean() - delta_controls.mean())
            p_rank = rank_pvalue(chosen, random_effects, REMOVAL)  # one-sided too: the chosen heads remove more
            test = between_judge_test(delta_judge, delta_controls, p_rank=p_rank, **common)
    out = {"before": Behaviour(**judged["before"])} | {k: judged[k] for k in ("variants", "effects", "own")}
    out |= judge_level_fields(judge, test, gap, controls, design.n_flips, len(items))
    out["test"] |= {
        "random_head_sets": n_random if design.heads == "top-heads" else None,
        "random_sets_skipped": random_skipped,
    }
    out |= {
        "per_item_delta": dict(zip(judged["per_item"]["items"], delta_judge.tolist(), strict=False)),
        "masked_mass": mass_moved(run, judge, spec, judged["per_item"]["items"]),
        "mirror": MirrorShares(**mirror_shares(before, after, gold, test_alpha=design.test_alpha)),
        "controls": {c: _control_record(r) for c, r in judged_controls.items()},
    }
    out["specificity"] = own_answer_specificity(
        (before, after),
        dict(zip(controls, zip(control_before, control_after, strict=True), strict=True)),
        [item.id for item in items],
        out["mirror"],
        common | {"method": design.specificity},
    )
    if random_effects is not None:
        out["random_head_sets"] = RandomHeadSets(effects=random_effects.tolist(), layer_matched=design.layer_matched)
    return out


def _control_record(judged: dict) -> ControlRecord:
    """A control judge's record from what `evaluate` gave under its own variant ("self"): its behaviour before,
    its variant's record and behaviour after, and its paired change of P(own)."""
    before, after, effect = judged["before"], judged["variants"]["self"], judged["effects"]["self"]
    return ControlRecord(before=Behaviour(**before), after=after, effect=PairedEffect(**effect))


def _random_variants(name: str, spec, design: TestDesign, n_random: int, model, reference=None) -> dict[str, Variant]:
    """`n_random` random head sets of the size (and, layer-matched, the layers) of `spec`'s heads, drawn for judge
    `name` (each judge its own draw, seeded by its name and the split seed), as variants under `spec`'s op."""
    table = spec.heads_table
    chosen = {layer: list(heads) for layer, heads in table.items()} if table else None
    if chosen is None:
        raise InterpError("random head sets need the chosen heads as a layer -> heads table")
    tables = random_head_sets(
        chosen,
        model.n_layers,
        model.n_heads,
        n_random,
        seed_key=f"{name}|{design.split_seed}",
        layer_matched=design.layer_matched,
    )
    return {
        f"random-{r}": variant_of(
            f"random-{r}",
            dataclasses.replace(
                spec, heads=tuple((layer, tuple(h)) for layer, h in sorted(t.items())), name=f"random-heads-{r}"
            ),
            reference,
        )
        for r, t in enumerate(tables)
    }


def _random_effects(
    run: Run, trial: _Trial, design: TestDesign, n_random: int, pool: Judges, progress: bool, reference=None
) -> np.ndarray:
    """Per random head set of the chosen size: the judge's mean change of P(own) minus the controls' mean change,
    each judge at its own random draw of its own chosen set's size (the matched null)."""
    judge, spec, control_variants, items = trial.judge, trial.spec, trial.control_variants, trial.items
    draws = {judge: _random_variants(judge, spec, design, n_random, pool.model(judge), reference)}
    for control, variant in control_variants.items():
        own_spec = variant.interventions[0] if variant.interventions else spec
        draws[control] = _random_variants(control, own_spec, design, n_random, pool.model(control), reference)
    ids, own, folder = tuple(item.id for item in items), own_model(judge), str(run.dir.root)
    execute(run, [VariantTask(folder, name, v, ids, own) for name, vs in draws.items() for v in vs.values()], pool)
    judged = evaluate(run, judge, draws[judge], pool, items=items, progress=progress)
    effects = np.array([_delta(judged, name).mean() for name in draws[judge]])
    if control_variants:
        per_control = [
            evaluate(run, c, draws[c], pool, items=items, progress=progress, own=own) for c in control_variants
        ]
        effects = effects - np.array([np.mean([_delta(r, name).mean() for r in per_control]) for name in draws[judge]])
    return effects
