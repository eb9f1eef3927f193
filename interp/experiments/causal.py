"""The causal test (DESIGN.md section 4): re-judge a run under an intervention and its controls.

Responses and gold verdicts are read from the run directory, never regenerated. For a self-span spec the
controls are the same spec on the other response's span and on a random span of equal length. The
intervention "has a causal effect on self-preference" only when the self-span effect on P(own response
wins) has an interval that excludes zero and exceeds every control effect in size, whatever the control's
sign (`interp.metrics.causal.causal_verdict`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Sequence

from hooks.spec import AttentionIntervention
from interp.config import PlacementKeys
from interp.core.models import ModelCache
from interp.errors import InterpError
from interp.experiments.engine import (
    Variant,
    check_variants,
    digest,
    evaluate,
    judge_pool,
    self_judges,
    variant_key,
)
from interp.metrics.causal import causal_verdict
from interp.run.store import load_run
from interp.storage import atomic_write_text

CONTROL_TARGETS = ("other", "random")


def intervention_variants(spec: AttentionIntervention, *, with_controls: bool = True) -> dict[str, Variant]:
    """The spec plus, for a self-span spec, the same spec on the other span and on a random span."""
    if spec.target != "self":
        return {"target": Variant("target", attention=spec)}
    variants = {"self": Variant("self", attention=spec)}
    if with_controls:
        variants |= {target: Variant(target, attention=dataclasses.replace(spec, target=target)) for target in CONTROL_TARGETS}
    return variants


def intervene_run(
    run_dir: Path,
    spec: AttentionIntervention,
    *,
    judges: Sequence[str] | None = None,
    backend: str | None = None,
    with_controls: bool = True,
    progress: bool = True,
    where: PlacementKeys | None = None,
    models: ModelCache | None = None,
    items: Sequence[str] | None = None,
    split: str | None = None,
) -> dict:
    """Re-judge the run under `spec` (and its controls); write result.json under RUN/interventions/.

    The result folder is named `<spec label>-<key>`, the key a hash of the spec, its controls, the judges,
    the backend and the items, so two specs never share results however they are named. `items` (ids): test
    on those only (e.g. a test split, when the spec was chosen on another); `split` names them in the result.
    """
    run = load_run(run_dir)
    chosen = run.items if items is None else [item for item in run.items if item.id in set(items)]
    if not chosen:
        raise InterpError("no item of the run is in the items to test on")
    judge_names = self_judges(run, judges)
    variants = intervention_variants(spec, with_controls=with_controls)
    pool = judge_pool(run, backend, where=where, models=models)
    for judge in judge_names:  # every variant is checked against every judge before any judging starts
        check_variants(pool.model(judge), list(variants.values()))
    backend_name = backend or run.config.backend
    keys = {judge: {name: variant_key(run, judge, backend_name, v, chosen) for name, v in variants.items()} for judge in judge_names}
    out_dir = run.dir.intervention(spec.label, digest(keys))
    result: dict = {
        "spec": spec.to_dict(),
        "run_dir": str(run.dir.root),
        "n_items": len(chosen),
        "split": split or "all items",
        "backend": backend_name,
        "variant_keys": keys,
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
        for judge in judge_names:
            judge_result = evaluate(run, judge, variants, pool, items=chosen, progress=progress)
            causal, text = causal_verdict(judge_result["effects"])
            judge_result["causal"], judge_result["verdict"] = causal, f"{judge}: {text}"
            result["judges"][judge] = judge_result
        atomic_write_text(out_dir / "spec.toml", spec.to_toml())
        atomic_write_text(out_dir / "result.json", json.dumps(result, indent=2))
    return result
