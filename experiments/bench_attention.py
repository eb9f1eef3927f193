"""Benchmark: the cost of extracting span attention during judging, side by side in one run.

SmolLM2-135M-Instruct, float32, judge prompts of ~512 tokens, batch 8 (left-padded):

  (i)   time of one judging pass with span extraction (`judge_batch(hf backend, readout="final")`: SDPA in
        every layer plus the last query row from the layer's own q/k) vs a plain SDPA forward of the same
        batch (transformers' own "sdpa" attention, no hooks, `logits_to_keep=1`), alternated and repeated;
        medians -> `extraction_vs_sdpa_time_ratio` (target <= 1.10). Beside them, what a user would do
        instead for the same verdict plus every layer's pattern: TransformerLens' TransformerBridge
        `run_with_cache` (its usual call, every activation cached; also with `names_filter` keeping only the
        patterns) and nnsight's trace with every layer's
        `self_attn.output[1].save()` (eager attention, which returns patterns) -> `..._vs_ours_time_ratio`
        (targets >= 2 and >= 1.2), and our own eager reference (`attn_implementation="eager"`).
  (ii)  peak RSS during that pass, extraction vs plain SDPA, each in fresh subprocesses (torch's CPU
        tensors are invisible to tracemalloc) -> `extraction_vs_sdpa_peak_memory_ratio` (target <= 1.10);
  (iii) peak RSS of `run_judging` (attention streamed to disk shard by shard) over 16 vs 64 instructions
        (2 orders each), synthetic responses of fixed length, in subprocesses.

Peak RSS is the kernel's VmHWM, reset (/proc/self/clear_refs) after the model is loaded and one short pass
has made every weight page resident, so it is the peak during the measured step with the model's weights
resident; where the reset is not allowed it falls back to the process's ru_maxrss. Workers run with glibc's
mmap threshold fixed at 1 MiB (see `run_worker`), so the peak is what is alive, not heap fragmentation;
(ii) is repeated with glibc's default adaptive threshold (lines ending `_default_malloc`), where the peak of
the same pass varies by a few hundred MB from process to process. Prints one `name: value` per line.
Usage: python experiments/bench_attention.py [--repeat 5] [--memory-runs 3] [--tokens 512] [--batch 8]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MODEL = "smollm2-135m-instruct"
QUERY = "Explain how a bicycle stays upright while moving, and what the rider does to keep it balanced."
SENTENCES = (
    "The front wheel steers into the direction of any lean, which brings the wheels back under the rider. ",
    "Trail, the distance between the steering axis and the contact patch, makes this correction automatic. ",
    "Gyroscopic effects of the spinning wheels help a little, but they are not the main reason. ",
    "A rider shifts weight and turns the handlebars slightly, usually without noticing it. ",
)


# ---- measurement helpers -------------------------------------------------------------------------------


def _status_kb(field: str) -> int | None:
    try:
        match = re.search(rf"^{field}:\s+(\d+)\s+kB", Path("/proc/self/status").read_text(), re.M)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where not allowed."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_rss_mb(reset_ok: bool) -> float:
    hwm = _status_kb("VmHWM") if reset_ok else None
    if hwm is None:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    return hwm / 1024


def rss_mb() -> float:
    value = _status_kb("VmRSS")
    return value / 1024 if value is not None else float("nan")


# ---- prompts -------------------------------------------------------------------------------------------


def response_text(n_words: int, offset: int = 0) -> str:
    words = []
    i = offset
    while len(words) < n_words:
        words += SENTENCES[i % len(SENTENCES)].split()
        i += 1
    return " ".join(words[:n_words])


def words_for_tokens(model, target: int) -> int:
    """Words per response so that the judge prompt has about `target` tokens."""
    from interp.core.prompts import judge_prompt
    from interp.core.spans import tokenize_prompt

    def length(words: int) -> int:
        text = response_text(words)
        return len(
            tokenize_prompt(
                model.tokenizer, judge_prompt(model.tokenizer, "helpfulness", QUERY, text, text, kind=model.kind)
            )
        )

    low, high = 1, 2000
    while low < high:
        mid = (low + high) // 2
        if length(mid) < target:
            low = mid + 1
        else:
            high = mid
    return low


def batch_prompts(model, target: int, batch: int):
    """`batch` judge prompts of target-16 .. target tokens (rows differ, so the batch is left-padded)."""
    from interp.core.prompts import judge_prompt
    from interp.core.spans import tokenize_prompt

    words = words_for_tokens(model, target)
    prompts = []
    for row in range(batch):
        a, b = response_text(words, row), response_text(max(words - 2 * row, 1), row + 1)
        prompts.append(
            tokenize_prompt(model.tokenizer, judge_prompt(model.tokenizer, "helpfulness", QUERY, a, b, kind=model.kind))
        )
    return prompts


def load():
    import torch

    from interp.core.backends import make_backend
    from interp.core.models import load_model

    torch.manual_seed(0)
    model = load_model(MODEL)
    assert model.hf_model.config._attn_implementation == "eager"
    return model, make_backend(model, "hf")


# ---- workers (run in subprocesses) ---------------------------------------------------------------------


def plain_sdpa_forward(model, batch):
    """What the model costs without us: transformers' own SDPA forward, last position's logits."""
    import torch

    from interp.core.models import attention_implementation

    with torch.inference_mode(), attention_implementation(model.hf_model, "sdpa"):
        out = model.hf_model(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            position_ids=batch.position_ids,
            use_cache=False,
            logits_to_keep=1,
        )
    return out.logits[:, -1].float()


def worker_memory(args) -> dict:
    from interp.core.backends import left_pad
    from interp.core.judge import judge_batch, label_tokens

    model, backend = load()
    prompts = batch_prompts(model, args.tokens, args.batch)
    labels = label_tokens(model.tokenizer)
    batch, _ = left_pad([p.input_ids for p in prompts], model.tokenizer.pad_token_id)
    touch_weights(backend, prompts[0])
    baseline = rss_mb()
    reset_ok = reset_peak()
    if args.readout == "final":
        judge_batch(backend, prompts, labels, readout="final")
    else:
        plain_sdpa_forward(model, batch)
    return {
        "peak_mb": peak_rss_mb(reset_ok),
        "baseline_mb": baseline,
        "reset": reset_ok,
        "tokens": max(len(p) for p in prompts),
    }


def touch_weights(backend, prompt) -> None:
    """One short unhooked pass, so every weight page is resident before the peak is reset."""
    from interp.core.backends import left_pad

    batch, _ = left_pad([prompt.input_ids[:16]], backend.model.tokenizer.pad_token_id)
    backend.forward(batch)


def worker_judging(args) -> dict:
    from interp.data import Item
    from interp.run.judging import JudgingOptions, judge_tasks, run_judging
    from interp.run.store import RunDir

    model, backend = load()
    words = words_for_tokens(model, args.tokens)
    items = [Item(id=f"bench-{i:03d}", task="helpfulness", query=QUERY) for i in range(args.items)]
    responses = {
        "model-x": {item.id: response_text(words, i) for i, item in enumerate(items)},
        "model-y": {item.id: response_text(words, i + 1) for i, item in enumerate(items)},
    }
    tasks = judge_tasks(items, responses, ("model-x", "model-y"))
    from interp.core.prompts import judge_prompt
    from interp.core.spans import tokenize_prompt

    touch_weights(
        backend,
        tokenize_prompt(
            model.tokenizer, judge_prompt(model.tokenizer, "helpfulness", QUERY, "a", "b", kind=model.kind)
        ),
    )
    with tempfile.TemporaryDirectory(prefix="bench-attention-") as tmp:
        paths = RunDir(Path(tmp))
        baseline = rss_mb()
        reset_ok = reset_peak()
        start = time.perf_counter()
        run_judging(
            backend,
            MODEL,
            tasks,
            judgments_path=paths.judgments,
            shard_dir=paths.attention_shards(MODEL),
            options=JudgingOptions(batch_size=args.batch, readout="final", progress=False),
        )
        seconds = time.perf_counter() - start
        shards = len(list(paths.attention_shards(MODEL).glob("*.safetensors")))
    return {
        "peak_mb": peak_rss_mb(reset_ok),
        "baseline_mb": baseline,
        "process_max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "seconds": seconds,
        "judgments": len(tasks),
        "shards": shards,
        "reset": reset_ok,
    }


MMAP_THRESHOLD = 1 << 20


def run_worker(kind: str, default_malloc: bool = False, **options) -> dict:
    """Run a worker in a fresh process; its peak RSS is its own.

    Unless `default_malloc`, glibc's mmap threshold is fixed at 1 MiB (MALLOC_MMAP_THRESHOLD_): by default it
    adapts upwards to the size of freed blocks, so tens-of-MB activations end up on the heap, are not given
    back, and the measured peak then depends on fragmentation more than on what is alive.
    """
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", kind]
    for key, value in options.items():
        command += [f"--{key.replace('_', '-')}", str(value)]
    env = dict(os.environ, TQDM_DISABLE="1", TRANSFORMERS_VERBOSITY="error")
    if not default_malloc:
        env["MALLOC_MMAP_THRESHOLD_"] = str(MMAP_THRESHOLD)
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"worker {kind} {options} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- the benchmark -------------------------------------------------------------------------------------


def their_ways(model, batch):
    """The same verdict plus every layer's full pattern through TransformerLens and nnsight, as their
    documentation shows: one callable per library (booted once, outside the timing)."""
    import torch
    from nnsight import LanguageModel

    from interp.core.backends import make_backend
    from interp.core.backends.layers import attention_modules, shared_weight_copy
    from interp.core.backends.nnsight_trace import traced_forward

    bridge = make_backend(model, "transformer_lens").bridge
    n_layers = model.n_layers

    def transformer_lens(names_filter=None):
        with torch.inference_mode():
            logits, cache = bridge.run_with_cache(
                batch.input_ids, attention_mask=batch.attention_mask, names_filter=names_filter
            )
        patterns = [cache[f"blocks.{layer}.attn.hook_pattern"] for layer in range(n_layers)]
        return logits[:, -1].float(), patterns

    def transformer_lens_patterns_only():
        return transformer_lens(lambda name: name.endswith("hook_pattern"))

    traced = shared_weight_copy(model.hf_model)  # eager attention: output[1] is the whole pattern
    lm = LanguageModel(traced, tokenizer=model.tokenizer, device=model.device)
    paths = [path for path, _ in attention_modules(traced)]

    def nnsight():
        saved = []  # every layer's `self_attn.output[1].save()` inside one trace (nnsight reads a trace's
        # source, so the trace body is the toolkit's own `traced_forward`, which calls this hook per layer)
        with torch.inference_mode():
            logits = traced_forward(lm, batch, lambda layer, pattern: saved.append(pattern.save()), paths)
        return logits, saved

    return {
        "transformer_lens": transformer_lens,
        "transformer_lens_patterns_only": transformer_lens_patterns_only,
        "nnsight": nnsight,
    }


def bench_time(args) -> dict:
    from interp.core.backends import left_pad, make_backend
    from interp.core.judge import judge_batch, label_tokens

    model, backend = load()
    eager = make_backend(model, "hf", attn_implementation="eager")
    prompts = batch_prompts(model, args.tokens, args.batch)
    labels = label_tokens(model.tokenizer)
    batch, _ = left_pad([p.input_ids for p in prompts], model.tokenizer.pad_token_id)
    modes = {
        "ours": lambda: judge_batch(backend, prompts, labels, readout="final"),
        "sdpa": lambda: plain_sdpa_forward(model, batch),
        "eager": lambda: judge_batch(eager, prompts, labels, readout="final"),
    }
    if not args.skip_libraries:
        modes |= their_ways(model, batch)
    outputs = {name: run() for name, run in modes.items()}  # warm-up, and the outputs to compare
    times: dict[str, list[float]] = {name: [] for name in modes}
    names = list(modes)
    for rep in range(args.repeat):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            start = time.perf_counter()
            modes[name]()
            times[name].append(time.perf_counter() - start)
    ours_mass = outputs["ours"][0].mass
    eager_mass = outputs["eager"][0].mass
    return {
        "tokens": max(len(p) for p in prompts),
        "min_tokens": min(len(p) for p in prompts),
        "seconds": {name: statistics.median(t) for name, t in times.items()},
        "ours_vs_eager_max_mass_difference": float((ours_mass - eager_mass).abs().max()),
        "n_layers": model.n_layers,
        "n_heads": model.n_heads,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed passes per mode (median)")
    parser.add_argument("--memory-runs", type=int, default=3, help="subprocesses per mode for peak memory (median)")
    parser.add_argument("--tokens", type=int, default=512, help="judge prompt length (tokens)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--small", type=int, default=16, help="instructions in the small judging run")
    parser.add_argument("--large", type=int, default=64, help="instructions in the large judging run")
    parser.add_argument(
        "--default-malloc", action="store_true", help="measure memory with glibc's adaptive mmap threshold"
    )
    parser.add_argument(
        "--also-default-malloc",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="repeat (ii) with glibc's adaptive mmap threshold (lines suffixed _default_malloc)",
    )
    parser.add_argument("--skip-time", action="store_true", help="skip (i)")
    parser.add_argument("--skip-libraries", action="store_true", help="in (i), leave out TransformerLens and nnsight")
    parser.add_argument("--skip-memory", action="store_true", help="skip (ii)")
    parser.add_argument("--skip-judging", action="store_true", help="skip (iii)")
    parser.add_argument("--worker", choices=["memory", "judging"], help=argparse.SUPPRESS)
    parser.add_argument("--readout", default="final", help=argparse.SUPPRESS)
    parser.add_argument("--items", type=int, default=16, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        from interp.core.threads import set_torch_threads

        set_torch_threads(int(os.environ["BENCH_THREADS"]) if "BENCH_THREADS" in os.environ else None)
        result = worker_memory(args) if args.worker == "memory" else worker_judging(args)
        print(json.dumps(result))
        return 0

    import torch

    print(f"model: {MODEL}")
    print(f"batch_size: {args.batch}")
    print(f"torch_threads: {torch.get_num_threads()}")
    if not args.skip_time:
        timing = bench_time(args)
        seconds = timing["seconds"]
        print(f"prompt_tokens: {timing['tokens']}")
        print(f"prompt_tokens_min: {timing['min_tokens']}")
        for name, value in seconds.items():
            print(f"pass_seconds_{name}: {value:.3f}")
        print(f"extraction_vs_sdpa_time_ratio: {seconds['ours'] / seconds['sdpa']:.3f}")
        print(f"eager_reference_vs_ours_time_ratio: {seconds['eager'] / seconds['ours']:.3f}")
        if "transformer_lens" in seconds:
            print(
                "transformer_lens_run_with_cache_vs_ours_time_ratio: "
                f"{seconds['transformer_lens'] / seconds['ours']:.3f}"
            )
            print(
                "transformer_lens_run_with_cache_patterns_only_vs_ours_time_ratio: "
                f"{seconds['transformer_lens_patterns_only'] / seconds['ours']:.3f}"
            )
            print(f"nnsight_saved_patterns_vs_ours_time_ratio: {seconds['nnsight'] / seconds['ours']:.3f}")
        print(f"ours_vs_eager_max_span_mass_difference: {timing['ours_vs_eager_max_mass_difference']:.2e}")

    if not args.skip_memory:
        bench_memory(args, args.default_malloc)
        if args.also_default_malloc and not args.default_malloc:
            bench_memory(args, True, "_default_malloc")
    if not args.skip_judging:
        bench_judging(args)
    return 0


def bench_memory(args, default_malloc: bool, suffix: str = "") -> None:
    """Peak RSS of one judging pass with extraction vs a plain SDPA forward, fresh processes, alternated."""
    peaks: dict[str, list[dict]] = {"final": [], "none": []}
    for rep in range(args.memory_runs):
        for readout in ("final", "none") if rep % 2 == 0 else ("none", "final"):
            peaks[readout].append(
                run_worker("memory", default_malloc, readout=readout, tokens=args.tokens, batch=args.batch)
            )
    # Peak = RSS before the pass (model, tokenizer, prompts: the same in both modes) + growth during the
    # pass. The RSS before the pass varies between processes by more than the effect measured, so the ratio
    # uses the median of it over all runs plus each mode's median growth.
    baseline = statistics.median(r["baseline_mb"] for v in peaks.values() for r in v)
    growth = {k: statistics.median(r["peak_mb"] - r["baseline_mb"] for r in v) for k, v in peaks.items()}
    peak = {k: baseline + g for k, g in growth.items()}
    print(f"peak_rss_reset_supported{suffix}: {all(r['reset'] for v in peaks.values() for r in v)}")
    print(f"malloc_mmap_threshold{suffix}: {'glibc default (adaptive)' if default_malloc else MMAP_THRESHOLD}")
    print(f"rss_before_pass_mb{suffix}: {baseline:.1f}")
    print(f"pass_rss_growth_mb_plain_sdpa{suffix}: {growth['none']:.1f}")
    print(f"pass_rss_growth_mb_with_extraction{suffix}: {growth['final']:.1f}")
    print(f"pass_peak_rss_mb_plain_sdpa{suffix}: {peak['none']:.1f}")
    print(f"pass_peak_rss_mb_with_extraction{suffix}: {peak['final']:.1f}")
    print(f"extraction_vs_sdpa_peak_memory_ratio{suffix}: {peak['final'] / peak['none']:.3f}")
    if growth["none"] > 0:
        print(f"extraction_vs_sdpa_pass_growth_ratio{suffix}: {growth['final'] / growth['none']:.3f}")
    for k, name in (("none", "plain_sdpa"), ("final", "with_extraction")):
        print(
            f"pass_rss_growth_mb_runs_{name}{suffix}: {[round(r['peak_mb'] - r['baseline_mb'], 1) for r in peaks[k]]}"
        )


def bench_judging(args) -> None:
    small = run_worker("judging", args.default_malloc, items=args.small, tokens=args.tokens, batch=args.batch)
    large = run_worker("judging", args.default_malloc, items=args.large, tokens=args.tokens, batch=args.batch)
    print(f"judging_peak_rss_{args.small}_items_mb: {small['peak_mb']:.1f}")
    print(f"judging_peak_rss_{args.large}_items_mb: {large['peak_mb']:.1f}")
    print(f"judging_peak_rss_{args.large}_vs_{args.small}_ratio: {large['peak_mb'] / small['peak_mb']:.3f}")
    print(f"judging_process_max_rss_{args.small}_items_mb: {small['process_max_rss_mb']:.1f}")
    print(f"judging_process_max_rss_{args.large}_items_mb: {large['process_max_rss_mb']:.1f}")
    print(f"judging_seconds_{args.small}_items: {small['seconds']:.1f}")
    print(f"judging_seconds_{args.large}_items: {large['seconds']:.1f}")
    print(f"judging_shards_{args.large}_items: {large['shards']}")


if __name__ == "__main__":
    sys.exit(main())
