"""`interp demo`: the main job on the packaged defaults, end to end, into one report.

Responses, judging in both orders (with span attention), reference-based gold, DBG; then the Figure 7
attention analysis; then one causal test per judge: the self-span mask (alpha = 0) on its top heads by
own-minus-other attention, against the other-span and random-span controls.
"""

from __future__ import annotations

from pathlib import Path

from interp.data import builtin_items
from interp.report import build_report
from interp.runs import RunConfig, run_dbg

DEMO_TOP_HEADS = 8
# On a 2-core CPU a judge forward pass costs ~10 ms per prompt token, so the demo caps answers at 60 words
# (the paper, and `interp dbg`'s default, use 200): judge prompts stay ~300 tokens and the whole demo,
# causal test included, fits in minutes. The report states the cap.
DEMO_MAX_WORDS = 60


def demo_config(n: int | None, backend: str = "hf") -> RunConfig:
    return RunConfig(
        name="demo", data="builtin", n=n or len(builtin_items()), backend=backend, max_words=DEMO_MAX_WORDS, max_new_tokens=96
    )


def top_heads_spec(run_dir: Path, judge: str, k: int = DEMO_TOP_HEADS):
    from hooks.spec import AttentionIntervention
    from interp.attention_maps import top_heads

    table: dict[int, list[int]] = {}
    for layer, head, _ in top_heads(run_dir, judge, k):
        table.setdefault(layer, []).append(head)
    return AttentionIntervention(target="self", alpha=0.0, heads=table, name=f"self-mask-top{k}-heads")


def run_demo(out: Path, *, n: int | None = None, backend: str = "hf", progress: bool = True) -> Path:
    from interp.attention_figures import write_attention_figures
    from interp.causal import intervene_run, intervention_section

    out = Path(out)
    loaded: dict = {}
    config = demo_config(n, backend)
    run_dbg(config, out, progress=progress, loaded=loaded)
    write_attention_figures(out)
    results = [
        intervene_run(out, top_heads_spec(out, judge), judges=[judge], out_name=f"demo-top-heads-{judge}", progress=progress, loaded=loaded)
        for judge in config.judge_specs
    ]
    intervention_section(results, out / "figures")
    return build_report(out)
