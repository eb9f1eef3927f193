"""Benchmark on a GPU: judging N pairs with span extraction on any HF model, in bfloat16.

Loads MODEL (`--model`, an HF id in the local cache, a local folder or an alias) with `device="cuda"` and
`dtype="bfloat16"` (or `--device-map auto` to shard it over every visible GPU), judges N synthetic pairs
(both orders, batch `--batch`) with span extraction ("final"), and times the same batches as plain SDPA
forwards. Prints one `name: value` per line: judgments_per_s, extraction_vs_sdpa_time_ratio and the peak GPU
memory. On a machine without a CUDA GPU it says so and exits 0.
Usage: python experiments/bench_gpu.py --model meta-llama/Llama-3.1-8B-Instruct [--pairs 64] [--batch 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--pairs", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=512, help="judge prompt length (tokens)")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--device-map", default=None, help='"auto": shard over every visible GPU')
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("gpu: none (torch sees no CUDA device); nothing measured")
        return 0

    from bench_attention import batch_prompts, plain_sdpa_forward

    from interp.core.backends import left_pad, make_backend
    from interp.core.judge import judge_batch, label_tokens
    from interp.core.models import load_model

    model = load_model(args.model, device="cuda", dtype=args.dtype, device_map=args.device_map)
    backend = make_backend(model, "hf")
    labels = label_tokens(model.tokenizer)
    batches = []
    for start in range(0, 2 * args.pairs, args.batch):  # both orders of each pair: 2N judgments
        prompts = batch_prompts(model, args.tokens, min(args.batch, 2 * args.pairs - start))
        batches.append((prompts, left_pad([p.input_ids for p in prompts], model.tokenizer.pad_token_id)[0]))

    def judged():
        for prompts, _ in batches:
            judge_batch(backend, prompts, labels, queries="final")

    def plain():
        for _, batch in batches:
            plain_sdpa_forward(model, batch.to(model.device))

    judged(), plain()  # warm-up (kernels, allocator)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = {}
    for name, run in (("extraction", judged), ("sdpa", plain), ("extraction_again", judged), ("sdpa_again", plain)):
        torch.cuda.synchronize()
        start = time.perf_counter()
        run()
        torch.cuda.synchronize()
        times[name] = time.perf_counter() - start
    extraction = min(times["extraction"], times["extraction_again"])
    sdpa = min(times["sdpa"], times["sdpa_again"])
    print(f"gpu: {torch.cuda.get_device_name(0)} x {torch.cuda.device_count()}")
    print(f"model: {args.model}")
    print(f"dtype: {model.placement.dtype}")
    print(f"device_map: {model.placement.device_map}")
    print(f"layers: {model.n_layers}")
    print(f"judgments: {2 * args.pairs}")
    print(f"prompt_tokens: {max(len(p) for prompts, _ in batches for p in prompts)}")
    print(f"judgments_per_s: {2 * args.pairs / extraction:.2f}")
    print(f"extraction_vs_sdpa_time_ratio: {extraction / sdpa:.3f}")
    print(f"peak_gpu_memory_gb: {torch.cuda.max_memory_allocated() / 2**30:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
