"""`interp demo`: the main job on the packaged defaults, end to end, into one report.

Responses of SmolLM2 and Gemma-3; judging in both orders (with span attention) by both models and by the two
organisms (`smollm2-135m-judge`, null, and `smollm2-135m-selfpref`, planted self-preference; their own
answers are SmolLM2's); reference-based gold; DBG; the Figure 7 attention analysis; then the causal test on
both organisms (`interp.causal.intervene`): the own answer masked at every layer, each organism against the
spread of the shipped null family (the null organism leave-one-out), on the demo items of the organisms' test
split.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from interp.causal.design import TestDesign
from interp.causal.intervene import intervene_run
from interp.config import PlacementKeys, RunConfig, run_config_from_dict
from interp.core.models import ModelCache, own_model
from interp.core.placement import placement_of
from interp.core.timings import Timings
from interp.data import builtin_items
from interp.engine.executor import Execution
from interp.report.attention import write_attention_figures
from interp.report.build import build_report
from interp.report.interventions import intervention_section
from interp.results.causal import CausalResult
from interp.run.pipeline import run_dbg
from interp.run.store import RunDir
from interp.studies.validate import AUTHORS, NULL, PLANTED, organism_splits

# On a 2-core CPU a judge forward pass costs ~10 ms per prompt token, so the demo caps answers at 60 words
# (the paper, and `interp dbg`'s default, use 200): judge prompts stay ~300 tokens and the whole demo,
# causal test included, fits in minutes. The report states the cap.
DEMO_MAX_WORDS = 60


def demo_config(n: int | None, backend: str = "hf") -> RunConfig:
    """The demo's run config: the built-in items (`n` of them; None: all) judged by the demo's organisms."""
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


def organism_causal_test(out: Path, *, models: ModelCache, progress: bool) -> CausalResult | None:
    """The causal test on both organisms, on the demo items of the organisms' test split (never trained on):
    the own answer masked at every layer; each organism against the shipped null family (the null organism
    leave-one-out), the judge as the unit; Holm over the two. None when the run holds fewer than two test items.

    Memory: the models the test never reads (Gemma-3, the other author) are let go first, and each control once
    it is judged (a budget of 0: with every layer masked there are no random head sets, each control is judged
    once, so letting it go costs no reload); the organisms and their base (the shared trunk) stay."""
    run_ids = {item.id for item in RunDir(out).read_items()}
    test = [i.id for i in organism_splits(PLANTED)["test"] if i.id in run_ids]
    if len(test) < 2:
        return None
    used = {PLANTED, NULL, own_model(PLANTED), own_model(NULL)}
    for name in [name for name in models.models if name not in used and name not in models.held]:
        del models.models[name]
    return intervene_run(
        out,
        design=TestDesign(heads="all-layers"),
        judges=[PLANTED, NULL],
        items=test,
        split=f"the organisms' test split ({len(test)} demo items, never trained on)",
        execution=Execution(models=models, max_memory=0, progress=progress),
    )


class Demo(NamedTuple):
    """What the demo leaves: the report, the organisms' causal test (None when it was not run), and where the
    time went (`Timings`: generation, judging per judge, the causal test, figures; torch's thread count)."""

    report: Path
    causal: CausalResult | None
    timings: Timings | None = None


def run_demo(
    out: Path,
    *,
    n: int | None = None,
    backend: str = "hf",
    where: PlacementKeys | None = None,
    progress: bool = True,
    overwrite: bool = False,
) -> Demo:
    """The README's demo into `out`: the DBG run, its attention figures, the organisms' causal test and the report."""
    out = Path(out)
    RunDir(out).check_output(overwrite=overwrite)
    where = where or PlacementKeys()
    config = run_config_from_dict(
        demo_config(n, backend).model_dump(exclude_none=True) | where.model_dump(exclude_none=True), "demo"
    )
    models = ModelCache(placement_of(config))
    timings = Timings.started()
    run_dbg(config, out, progress=progress, models=models, overwrite=overwrite, timings=timings)
    with RunDir(out).writer():
        with timings.step("figures: attention"):
            write_attention_figures(out)
        with timings.step("causal test"):
            result = organism_causal_test(out, models=models, progress=progress)
        with timings.step("figures: causal section and report"):
            if result is not None:
                intervention_section([result], RunDir(out).figures)
            report = build_report(out)
        return Demo(report, result, timings.ended())
