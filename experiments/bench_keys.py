"""Benchmark: what keying a model by its files' content costs (`interp.core.model_files`).

The packaged SmolLM2-135M's dequantised folder (safetensors, config, tokenizer) is keyed with an empty digest cache
(every file hashed: the first run after a model changes) and again with the cache filled (what every later run, and
every variant key of a judging job, pays), and the packaged GGUF file the same way. A SmolLM2-135M-shaped model held
in memory is keyed by its object's weights (`judge_content_key` of a wrapped model) the first time and again with no
parameter changed (read back from its `meta`).

Prints `name: value` lines: seconds (`..._s`), the folder's size (`folder_mb`) and `cached_over_first_ratio`.
Usage: python experiments/bench_keys.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    """Time the content keys and print them."""
    from interp.core.model_files import file_digest, folder_digest, judge_content_key
    from interp.core.models import ALIASES, alias_gguf_path, load_model, resolve_spec, wrap_model

    folder = Path(resolve_spec("smollm2-135m-instruct")[0])
    gguf = alias_gguf_path(ALIASES["smollm2-135m-instruct"])
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    model = load_model("smollm2-135m-instruct")  # from the cache folder as it is (dequantised once)
    given = os.environ.get("INTERP_CACHE")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["INTERP_CACHE"] = cache  # an empty digest cache: every file hashed once
        first = _seconds(lambda: folder_digest(folder))
        cached = _seconds(lambda: folder_digest(folder))
        gguf_first = _seconds(lambda: file_digest(gguf))
        gguf_cached = _seconds(lambda: file_digest(gguf))
    if given is None:
        del os.environ["INTERP_CACHE"]
    else:
        os.environ["INTERP_CACHE"] = given
    held = wrap_model(model.hf_model, model.tokenizer, name="bench")
    held_first = _seconds(lambda: judge_content_key("bench", held))
    held_cached = _seconds(lambda: judge_content_key("bench", held))
    print(f"folder_mb: {size / 2**20:.0f}")
    print(f"folder_first_s: {first:.3f}")
    print(f"folder_cached_s: {cached:.4f}")
    print(f"gguf_mb: {gguf.stat().st_size / 2**20:.0f}")
    print(f"gguf_first_s: {gguf_first:.3f}")
    print(f"gguf_cached_s: {gguf_cached:.4f}")
    print(f"held_first_s: {held_first:.3f}")
    print(f"held_cached_s: {held_cached:.4f}")
    print(f"cached_over_first_ratio: {cached / first:.4f}")


if __name__ == "__main__":
    main()
