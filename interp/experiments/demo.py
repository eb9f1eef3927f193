"""`interp demo`: the main job on the packaged defaults, end to end, into one report.

Responses of SmolLM2 and Gemma-3; judging in both orders (with span attention) by both models and by the two
organisms (`smollm2-135m-judge`, null, and `smollm2-135m-selfpref`, planted self-preference; their own
answers are SmolLM2's); reference-based gold; DBG; the Figure 7 attention analysis; then the causal test on the
planted organism: the self-span mask (alpha = 0) on its top heads by own-minus-other attention chosen on the
organisms' selection split, tested on their test split, against the other-span and random-span controls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from hooks.spec import AttentionIntervention
from interp.analysis.attention_stats import heads_table, top_heads
from interp.config import PlacementKeys, RunConfig, run_config_from_dict
from interp.core.models import ModelCache
from interp.core.placement import placement_of
from interp.data import builtin_items
from interp.experiments.causal import intervene_run
from interp.experiments.validate import AUTHORS, NULL, PLANTED, organism_splits
from interp.report.attention import write_attention_figures
from interp.report.build import build_report
from interp.report.interventions import intervention_section
from interp.run.pipeline import run_dbg
from interp.run.store import RunDir

DEMO_TOP_HEADS = 8
# On a 2-core CPU a judge forward pass costs ~10 ms per prompt token, so the demo caps answers at 60 words
# (the paper, and `interp dbg`'s default, use 200): judge prompts stay ~300 tokens and the whole demo,
# causal test included, fits in minutes. The report states the cap.
DEMO_MAX_WORDS = 60


def demo_config(n: int | None, backend: str = "hf") -> RunConfig:
    values = dict(
        name="demo",
        data="builtin",
        n=len(builtin_items()) if n is None else n,  # 0 is refused by the config, never read as "all"
        backend=backend,
        models=list(AUTHORS),
        judges=[*AUTHORS, NULL, PLANTED],
        max_words=DEMO_MAX_WORDS,
        max_new_tokens=96,
    )
    return run_config_from_dict(values, "demo")  # a bad --backend or --n is one line, not a traceback


def top_heads_spec(run_dir: Path, judge: str, k: int = DEMO_TOP_HEADS, items: Sequence[str] | None = None) -> AttentionIntervention:
    """The self-span mask on the judge's top-k heads by own-minus-other attention over `items` (None: all)."""
    heads = heads_table(top_heads(run_dir, judge, k, items=items))
    return AttentionIntervention(target="self", alpha=0.0, heads=heads, name=f"self-mask-top{k}-heads")


def planted_causal_test(out: Path, *, models: ModelCache, progress: bool) -> dict | None:
    """The causal test on the planted organism, heads chosen on the selection split and tested on the test
    split (None when the run holds no item of one of them, e.g. a demo over a few items)."""
    run_ids = {item.id for item in RunDir(out).read_items()}
    splits = organism_splits(PLANTED)
    selection, test = ([i.id for i in splits[name] if i.id in run_ids] for name in ("selection", "test"))
    if not selection or not test:
        return None
    spec = top_heads_spec(out, PLANTED, items=selection)
    return intervene_run(out, spec, judges=[PLANTED], items=test, split=f"test split (heads chosen on {len(selection)} selection items)", progress=progress, models=models)


def run_demo(
    out: Path, *, n: int | None = None, backend: str = "hf", where: PlacementKeys | None = None, progress: bool = True, overwrite: bool = False
) -> Path:
    out = Path(out)
    RunDir(out).check_output(overwrite=overwrite)
    where = where or PlacementKeys()
    config = run_config_from_dict(demo_config(n, backend).model_dump(exclude_none=True) | where.model_dump(exclude_none=True), "demo")
    models = ModelCache(placement_of(config))
    run_dbg(config, out, progress=progress, models=models, overwrite=overwrite)
    with RunDir(out).writer():
        write_attention_figures(out)
        result = planted_causal_test(out, models=models, progress=progress)
        if result is not None:
            intervention_section([result], RunDir(out).figures)
        return build_report(out)
