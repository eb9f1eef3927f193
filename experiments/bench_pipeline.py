"""Pipeline figures, measured side by side in one run; one `name: value` per line.

- judging throughput, batched (8) vs one at a time, with span-attention extraction as in a run, for both
  default judges: batched as in a run (the batch's common prefix, the judge instructions, run once and its
  keys/values shared by the rows) and batched without prefix sharing (padding only);
- judging throughput under an intervention (self-span mask, all layers and heads) vs plain judging;
- wall time of `interp demo --n 12` and of the full default demo, each from an empty response cache
  (the dequantised models are linked in: "after set-up");
- responses/s generated through llama-cpp-python's OpenAI-compatible server (the packaged SmolLM2 GGUF,
  4 requests at a time) vs in-process HF generation of the same GGUF (dequantised, batch 4), the same
  built-in instructions and greedy decoding, each from an empty response cache.

Usage: python experiments/bench_pipeline.py [--skip-demo] [--full] [--skip-server]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]


def judging_prompts(model, n: int):
    from interp.core.spans import build_judge_prompt
    from interp.data import builtin_items

    items = [i for i in builtin_items() if i.task == "helpfulness"][: n // 2]
    prompts = []
    for index, item in enumerate(items):  # both orders of each pair, as a run judges them
        other = items[(index + 1) % len(items)].reference
        prompts.append(build_judge_prompt(model, item.task, item.query, item.reference, other))
        prompts.append(build_judge_prompt(model, item.task, item.query, other, item.reference))
    return sorted(prompts, key=len)  # a run batches similar lengths together (runs.run_judging)


def time_judging(backend, prompts, labels, batch_size: int, repeats: int, bias_for=None) -> float:
    from interp.core.judge import judge_batch

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for offset in range(0, len(prompts), batch_size):
            chunk = prompts[offset : offset + batch_size]
            judge_batch(backend, chunk, labels, queries="final", bias=bias_for(chunk) if bias_for else None)
        times.append(time.perf_counter() - start)
    return len(prompts) / statistics.median(times)


def forward_cost_figures(model, short: str) -> None:
    """Cost of one eager forward per sequence at batch 1 and 8, equal lengths (no padding): on a CPU the
    compute is the bottleneck, so batching alone cannot multiply throughput."""
    hf_model = model.hf_model
    ids = torch.randint(100, 1000, (8, 360))
    costs = {}
    with torch.inference_mode():
        for rows in (1, 8):
            hf_model(input_ids=ids[:rows], use_cache=False, logits_to_keep=1)
            start = time.perf_counter()
            for _ in range(2):
                hf_model(input_ids=ids[:rows], use_cache=False, logits_to_keep=1)
            costs[rows] = (time.perf_counter() - start) / 2 / rows
    print(f"{short}_forward_360_tokens_ms_per_sequence_batch1: {1000 * costs[1]:.0f}")
    print(f"{short}_forward_360_tokens_ms_per_sequence_batch8: {1000 * costs[8]:.0f}")
    print(f"{short}_forward_batch8_per_sequence_speedup_ratio: {costs[1] / costs[8]:.2f}")


def judging_figures(repeats: int) -> None:
    from interp.hooks.compile import bias_builder
    from interp.hooks.spec import AttentionIntervention
    from interp.core.backends.hf import HFBackend
    from interp.core.judge import label_tokens
    from interp.core.models import load_model

    for alias, short in (("smollm2-135m-instruct", "smollm2"), ("gemma3-270m", "gemma3")):
        model = load_model(alias)
        backend, padding_only = HFBackend(model), HFBackend(model, shares_prefix=False)
        labels = label_tokens(model.tokenizer)
        prompts = judging_prompts(model, 16)
        print(f"{short}_judge_prompt_tokens_mean: {sum(len(p) for p in prompts) / len(prompts):.0f}")
        forward_cost_figures(model, short)
        time_judging(backend, prompts[:2], labels, 2, 1)  # warm-up
        single = time_judging(backend, prompts, labels, 1, repeats)
        unshared = time_judging(padding_only, prompts, labels, 8, repeats)
        batched = time_judging(backend, prompts, labels, 8, repeats)
        spec = AttentionIntervention(target="a", alpha=0.0)
        intervened = time_judging(backend, prompts, labels, 8, repeats, bias_for=lambda chunk: bias_builder(spec, model))
        print(f"{short}_judging_one_at_a_time_per_second: {single:.2f}")
        print(f"{short}_judging_batched8_padding_only_per_second: {unshared:.2f}")
        print(f"{short}_judging_batched8_per_second: {batched:.2f}")
        print(f"{short}_batched_padding_only_speedup_ratio: {unshared / single:.2f}")
        print(f"{short}_batched_judging_speedup_ratio: {batched / single:.2f}")
        print(f"{short}_judging_under_intervention_per_second: {intervened:.2f}")
        print(f"{short}_intervention_throughput_ratio: {intervened / batched:.2f}")
        del model, backend, padding_only


def demo_seconds(n: int | None) -> float:
    """`interp demo` from an empty response cache, with the dequantised models linked in."""
    from interp.core.models import cache_root

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir()
        for sub in ("dequantized", "gguf"):
            if (cache_root() / sub).exists():
                os.symlink(cache_root() / sub, cache / sub)
        args = [sys.executable, "-m", "interp.cli", "demo", "--out", str(Path(tmp) / "demo")]
        if n is not None:
            args += ["--n", str(n)]
        env = dict(os.environ, INTERP_CACHE=str(cache), TQDM_DISABLE="1")
        start = time.perf_counter()
        subprocess.run(args, check=True, env=env, cwd=REPO, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start


def server_figures(n_items: int = 8, max_new_tokens: int = 64) -> None:
    sys.path.insert(0, str(REPO))
    from interp.config import HTTPJudgeConfig
    from interp.core.models import load_model
    from interp.data import builtin_items, sample_items
    from interp.run.responses import Decoding, generate_responses
    from interp.run.server_responses import server_responses
    from tests.helpers.servers import llama_server

    items = sample_items(builtin_items(), n=n_items, seed=1)
    decoding = Decoding(max_words=200, max_new_tokens=max_new_tokens, batch_size=4)
    model = load_model("smollm2-135m-instruct")
    seconds = {}
    with tempfile.TemporaryDirectory(prefix="bench-server-") as tmp:
        previous = os.environ.get("INTERP_CACHE")
        try:
            with llama_server(Path(tmp), n_ctx=2048) as base_url:
                endpoint = HTTPJudgeConfig(name="smollm2-server", base_url=base_url, model="smollm2", concurrency=4, timeout=300)
                os.environ["INTERP_CACHE"] = str(Path(tmp) / "server-cache")  # empty: every answer is asked for
                start = time.perf_counter()
                server_responses(endpoint, items, decoding, progress=False)
                seconds["server"] = time.perf_counter() - start
            os.environ["INTERP_CACHE"] = str(Path(tmp) / "local-cache")  # the model is loaded already
            start = time.perf_counter()
            generate_responses(model, items, decoding, progress=False)
            seconds["inprocess"] = time.perf_counter() - start
        finally:
            if previous is None:
                os.environ.pop("INTERP_CACHE", None)
            else:
                os.environ["INTERP_CACHE"] = previous
    print(f"server_generation_responses_per_second: {n_items / seconds['server']:.3f}")
    print(f"inprocess_generation_responses_per_second: {n_items / seconds['inprocess']:.3f}")
    print(f"server_vs_inprocess_generation_ratio: {seconds['inprocess'] / seconds['server']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--full", action="store_true", help="also time the full default demo (all built-in items)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-judging", action="store_true")
    parser.add_argument("--skip-server", action="store_true")
    args = parser.parse_args()
    print(f"torch_threads: {torch.get_num_threads()}")
    if not args.skip_server:
        server_figures()
    if not args.skip_judging:
        judging_figures(args.repeats)
    if not args.skip_demo:
        print(f"demo_n12_seconds: {demo_seconds(12):.1f}")
        if args.full:
            print(f"demo_full_seconds: {demo_seconds(None):.1f}")


if __name__ == "__main__":
    main()
