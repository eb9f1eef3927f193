"""Benchmark: judging throughput under steering edits relative to plain judging (same prompts, same batches).

Prints `name: value` lines: judgments per second for plain judging, direction steering (add at every
position), direction removal (project_out) and other-span emphasis (score bias), and each ratio to plain
(target >= 0.8, as for the attention interventions). A random unit direction is used: the cost of an edit
does not depend on which direction it is. Usage:

    python experiments/bench_steering.py [--model smollm2-135m-instruct] [--backend hf] [--items 8] [--repeat 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from interp.core.backends import make_backend  # noqa: E402
from interp.core.judge import judge_batch, label_tokens  # noqa: E402
from interp.core.models import load_model  # noqa: E402
from interp.core.spans import build_judge_prompt  # noqa: E402
from interp.data import builtin_items  # noqa: E402
from interp.hooks.compile import bias_builder  # noqa: E402
from interp.hooks.emphasis import emphasis_spec  # noqa: E402
from interp.hooks.steering import steer  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--backend", default="hf")
    parser.add_argument("--items", type=int, default=8)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2, help="runs per setting; the best is reported")
    args = parser.parse_args()

    model = load_model(args.model)
    backend = make_backend(model, args.backend)
    labels = label_tokens(model.tokenizer)
    items = builtin_items()[: args.items]
    prompts = [
        build_judge_prompt(model, item.task, item.query, item.reference or "-", "I do not know.") for item in items
    ]
    batches = [prompts[i : i + args.batch] for i in range(0, len(prompts), args.batch)]
    direction = torch.randn(
        model.hf_model.config.get_text_config().hidden_size, generator=torch.Generator().manual_seed(0)
    )
    layer = model.n_layers // 2
    settings = {
        "plain": {},
        "steer_add": {"edit": steer(direction, layer, -4.0, "add", "all")},
        "steer_project_out": {"edit": steer(direction, layer, 1.0, "project_out", "all")},
        "emphasis": {"bias": "emphasis"},
    }
    rates = {}
    for name, kwargs in settings.items():
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            for chunk in batches:
                extra = dict(kwargs)
                if extra.get("bias") == "emphasis":
                    authors = [(model.name, "other")] * len(chunk)
                    extra["bias"] = bias_builder(emphasis_spec(4.0), model, authors=authors)
                judge_batch(backend, chunk, labels, readout=None, **extra)
            best = min(best, time.perf_counter() - start)
        rates[name] = len(prompts) / best
        print(f"{name}_judgments_per_second: {rates[name]:.3f}")
    for name in settings:
        if name != "plain":
            print(f"{name}_ratio_to_plain: {rates[name] / rates['plain']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
