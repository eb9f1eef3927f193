"""Benchmark: first load of a packaged model (GGUF -> dequantise -> safetensors cache) vs the cached load.

For each built-in alias, in one run and side by side:

1. a fresh, empty temporary INTERP_CACHE, and a new Python process that calls `interp.core.models.load_model`
   (this assembles the GGUF where needed, dequantises it and writes the safetensors cache);
2. a second new process on the same cache directory (memory-maps the cached safetensors folder).

Each child imports torch/transformers before starting its clock, so only `load_model` is timed. The ratio
first / cached is the speed-up the cache buys (target for gemma3-270m: at least 5). The temporary cache is
deleted at the end, whatever happens.

    python experiments/bench_models.py [--models gemma3-270m smollm2-135m-instruct]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
import torch, transformers  # imported before the clock starts: both loads pay the same import cost
from transformers import AutoModelForCausalLM, AutoTokenizer
from interp.core.models import cache_root, load_model

start, cpu = time.perf_counter(), time.process_time()
model = load_model(sys.argv[1])
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
with torch.no_grad():  # a forward pass proves the model really loaded
    logits = model.hf_model(torch.tensor([[model.tokenizer.bos_token_id or 1, 42, 43]])).logits
print(json.dumps({
    "seconds": seconds,
    "cpu_seconds": cpu,
    "layers": model.n_layers,
    "heads": model.n_heads,
    "kind": model.kind,
    "cache": str(cache_root()),
    "logit0": float(logits[0, -1, 0]),
}))
"""

SHORT = {"gemma3-270m": "gemma3", "smollm2-135m-instruct": "smollm2"}


def timed_load(alias: str, cache: Path) -> dict:
    env = {**os.environ, "INTERP_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    wall = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", CHILD, alias], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - wall
    if result.returncode != 0:
        raise SystemExit(f"loading {alias} failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
    record = json.loads(result.stdout.strip().splitlines()[-1])
    record["process_seconds"] = wall
    return record


def cache_size(cache: Path) -> int:
    return sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["gemma3-270m", "smollm2-135m-instruct"], choices=sorted(SHORT))
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="interp-bench-cache-"))
    try:
        for alias in args.models:
            cache = root / SHORT[alias]
            cache.mkdir()
            first = timed_load(alias, cache)
            assert (cache / "dequantized").is_dir(), "the first load did not write the safetensors cache"
            size = cache_size(cache)
            cached = timed_load(alias, cache)
            assert cached["logit0"] == first["logit0"], "the cached model differs from the converted one"
            assert cache_size(cache) == size, "the second load should not write to the cache"
            key = SHORT[alias]
            print(
                f"# {alias}: {first['layers']} layers, {first['heads']} heads, kind={first['kind']}, cache "
                f"{size / 1e6:.0f} MB"
            )
            print(f"{key}_first_load_seconds: {first['seconds']:.2f}")
            print(f"{key}_cached_load_seconds: {cached['seconds']:.2f}")
            print(f"{key}_cached_load_speedup_ratio: {first['seconds'] / cached['seconds']:.1f}")
            print(
                f"# {alias} CPU seconds of load_model (all threads; robust to other load on the machine): "
                f"first {first['cpu_seconds']:.1f}, cached {cached['cpu_seconds']:.1f}, "
                f"ratio {first['cpu_seconds'] / cached['cpu_seconds']:.1f}"
            )
            print(
                f"# {alias} whole processes (with interpreter start and imports): "
                f"first {first['process_seconds']:.1f} s, cached {cached['process_seconds']:.1f} s"
            )
            sys.stdout.flush()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"# temporary cache {root} removed: {not root.exists()}")


if __name__ == "__main__":
    main()
