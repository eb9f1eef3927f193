"""Benchmark on a GPU: judging N pairs with span extraction on any HF model, in bfloat16.

Loads MODEL (`--model`, an HF id in the local cache, a local folder or an alias) with `device="cuda"` and
`dtype="bfloat16"` (or `--device-map auto` to shard it over every visible GPU), judges N synthetic pairs
(both orders, batch `--batch`) with span extraction ("final"), and times the same batches as plain SDPA
forwards. `--architecture NAME` instead builds one of ARCHITECTURES (the published shapes of judges the DBG
paper and "Breaking the Mirror" study) with random weights straight on the GPU, with the tokenizer in
`--tokenizer`: for a machine that has the GPU but not the weights. Speed and memory do not depend on the
weights' values; the verdicts of such a model mean nothing and none is printed.

Prints one `name: value` per line: judgments_per_s, extraction_vs_sdpa_time_ratio, the peak GPU memory of
each, and the largest span-mass difference between the fast path and eager attention on the first batch. On a
machine without a CUDA GPU it says so and exits 0.
Usage: python experiments/bench_gpu.py --model meta-llama/Llama-3.1-8B-Instruct [--pairs 64] [--batch 8]
       python experiments/bench_gpu.py --architecture qwen2.5-32b --tokenizer FOLDER
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Shapes from the models' published config.json files (vocabulary sizes included: the unembedding is a large
# share of a judge pass). Everything not named keeps transformers' default for the model type.
ARCHITECTURES: dict[str, dict] = {
    "llama-3.1-8b": dict(
        model_type="llama",
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=128256,
        rope_theta=500000.0,
        max_position_embeddings=131072,
        rms_norm_eps=1e-5,
    ),
    "qwen2.5-32b": dict(
        model_type="qwen2",
        hidden_size=5120,
        intermediate_size=27648,
        num_hidden_layers=64,
        num_attention_heads=40,
        num_key_value_heads=8,
        vocab_size=152064,
        rope_theta=1000000.0,
        max_position_embeddings=32768,
        rms_norm_eps=1e-6,
    ),
    "gemma-3-27b": dict(  # five sliding-window layers to one global layer
        model_type="gemma3_text",
        hidden_size=5376,
        intermediate_size=21504,
        num_hidden_layers=62,
        num_attention_heads=32,
        num_key_value_heads=16,
        head_dim=128,
        vocab_size=262208,
        query_pre_attn_scalar=168,
        sliding_window=1024,
        rope_theta=1000000.0,
    ),
}


def random_model(name: str, tokenizer_folder: str, dtype: str):
    """ARCHITECTURES[name] with random weights, built on the GPU (no CPU copy), eager as `load_model`'s are."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from interp.core.models import wrap_model
    from interp.core.placement import DTYPES, Placement

    shape = dict(ARCHITECTURES[name])
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
    config = AutoConfig.for_model(shape.pop("model_type"), **shape)
    if config.vocab_size < len(tokenizer):
        raise SystemExit(f"--tokenizer has {len(tokenizer)} tokens, more than {name}'s {config.vocab_size}")
    torch.manual_seed(0)
    with torch.device("cuda"):
        hf_model = AutoModelForCausalLM.from_config(config, dtype=DTYPES[dtype], attn_implementation="eager")
    return wrap_model(
        hf_model,
        tokenizer,
        name=f"{name} (random weights)",
        kind="post",
        source=f"random:{name}",
        placement=Placement(device="cuda:0", dtype=dtype),
    )


def p_a_of(logits, labels):
    """P(A) renormalised over the labels, as `judge_batch` reads it, from last-position logits."""
    from interp.core.judge import label_probabilities

    return label_probabilities(logits, labels)[1][:, labels.labels.index("A")].cpu()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument(
        "--architecture", choices=sorted(ARCHITECTURES), help="random weights of this shape instead of --model"
    )
    parser.add_argument("--tokenizer", help="tokenizer folder for --architecture")
    parser.add_argument("--pairs", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=512, help="judge prompt length (tokens)")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--profile", help="also write a torch.profiler table of one extraction batch to this file")
    parser.add_argument("--device-map", default=None, help='"auto": shard over every visible GPU')
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("gpu: none (torch sees no CUDA device); nothing measured")
        return 0
    if args.architecture and not args.tokenizer:
        parser.error("--architecture needs --tokenizer (a folder with tokenizer files)")

    from bench_attention import batch_prompts, plain_sdpa_forward

    from interp.core.backends import left_pad, make_backend
    from interp.core.judge import judge_batch, label_tokens
    from interp.core.models import load_model

    start = time.perf_counter()
    if args.architecture:
        model = random_model(args.architecture, args.tokenizer, args.dtype)
    else:
        model = load_model(args.model, device="cuda", dtype=args.dtype, device_map=args.device_map)
    load_s = time.perf_counter() - start
    weights_gb = torch.cuda.memory_allocated() / 2**30
    backend = make_backend(model, "hf")
    labels = label_tokens(model.tokenizer)
    batches = []
    for first in range(0, 2 * args.pairs, args.batch):  # both orders of each pair: 2N judgments
        prompts = batch_prompts(model, args.tokens, min(args.batch, 2 * args.pairs - first))
        batches.append((prompts, left_pad([p.input_ids for p in prompts], model.tokenizer.pad_token_id)[0]))

    # The prompts of a batch share their opening (template and question): on the CPU one prefix pass saves
    # compute; on a GPU it is one more (small, launch-bound) forward. Both are timed.
    unshared = dataclasses.replace(backend, shares_prefix=False)

    def judged(with_backend=backend):
        return [judge_batch(with_backend, prompts, labels, readout="final") for prompts, _ in batches]

    def plain():
        return [plain_sdpa_forward(model, batch.to(model.device)) for _, batch in batches]

    fast = judged()[0]  # warm-up (kernels, allocator); the first batch's results to compare with eager
    judged(unshared)
    plain_p_a = p_a_of(plain()[0], labels)
    eager = judge_batch(make_backend(model, "hf", attn_implementation="eager"), batches[0][0], labels, readout="final")
    mass_difference = max(float((f.mass - e.mass).abs().max()) for f, e in zip(fast, eager, strict=False))
    p_a_difference = max(abs(f.probs["A"] - e.probs["A"]) for f, e in zip(fast, eager, strict=False))
    sdpa_p_a_difference = max(abs(float(p) - e.probs["A"]) for p, e in zip(plain_p_a, eager, strict=False))
    times, peaks = {}, {}

    def plain_read_back():  # the least any judge does per batch: bring its P(A) back to the CPU
        return [p_a_of(plain_sdpa_forward(model, batch.to(model.device)), labels) for _, batch in batches]

    runs = (
        ("extraction", judged),
        ("sdpa", plain),
        ("extraction_unshared", lambda: judged(unshared)),
        ("sdpa_read_back", plain_read_back),
    )
    for name, run in runs + tuple((f"{name}_again", run) for name, run in runs):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        run()
        torch.cuda.synchronize()
        times[name] = time.perf_counter() - start
        key = name.removesuffix("_again")
        peaks[key] = max(peaks.get(key, 0.0), torch.cuda.max_memory_allocated() / 2**30)
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            judge_batch(backend, batches[0][0], labels, readout="final")
            torch.cuda.synchronize()
        table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=40)
        Path(args.profile).write_text(table + "\n" + prof.key_averages().table(sort_by="cuda_time_total", row_limit=25))
    extraction = min(times["extraction"], times["extraction_again"])
    sdpa = min(times["sdpa"], times["sdpa_again"])
    unshared_time = min(times["extraction_unshared"], times["extraction_unshared_again"])
    read_back = min(times["sdpa_read_back"], times["sdpa_read_back_again"])
    print(f"gpu: {torch.cuda.get_device_name(0)} x {torch.cuda.device_count()}")
    print(f"model: {model.name}")
    print(f"dtype: {model.placement.dtype}")
    print(f"device_map: {model.placement.device_map}")
    print(f"layers: {model.n_layers}")
    print(f"parameters_billion: {sum(p.numel() for p in model.hf_model.parameters()) / 1e9:.2f}")
    print(f"load_s: {load_s:.1f}")
    print(f"judgments: {2 * args.pairs}")
    print(f"batch: {args.batch}")
    print(f"prompt_tokens: {max(len(p) for prompts, _ in batches for p in prompts)}")
    print(f"judgments_per_s: {2 * args.pairs / extraction:.2f}")
    print(f"sdpa_forwards_per_s: {2 * args.pairs / sdpa:.2f}")
    print(f"extraction_vs_sdpa_time_ratio: {extraction / sdpa:.3f}")
    print(f"extraction_without_shared_prefix_vs_sdpa_time_ratio: {unshared_time / sdpa:.3f}")
    print(f"extraction_vs_sdpa_with_read_back_time_ratio: {extraction / read_back:.3f}")
    print(f"weights_gpu_memory_gb: {weights_gb:.2f}")
    print(f"peak_gpu_memory_gb: {peaks['extraction']:.2f}")
    print(f"sdpa_peak_gpu_memory_gb: {peaks['sdpa']:.2f}")
    print(f"extraction_vs_sdpa_peak_memory_ratio: {peaks['extraction'] / peaks['sdpa']:.3f}")
    print(f"fast_vs_eager_max_span_mass_difference: {mass_difference:.2e}")
    print(f"fast_vs_eager_max_p_a_difference: {p_a_difference:.2e}")
    print(f"plain_sdpa_vs_eager_max_p_a_difference: {sdpa_p_a_difference:.2e}")  # the dtype's own noise
    return 0


if __name__ == "__main__":
    sys.exit(main())
