"""Benchmark: one judge prompt re-judged in full against verdict-position variants over its cached keys and values.

    python experiments/bench_final_cached.py [--variants 32] [--repeat 5] [--threads 2]

SmolLM2-135M-Instruct (the packaged GGUF, float32, CPU), one judge prompt of about 450 tokens. Each repeat, in
turn: the full forward (`HFBackend.forward`, the final logits), then the cached path of
`interp.core.backends.final_cached` for `--variants` verdict-position variants (a head's output zeroed at the final
position, a different head each): one clean pass keeping the keys and values, and the variants as rows of ONE
final-token pass over them. Medians. Prints one `name: value` a line:

- `full_forward_s`: one full forward;
- `final_row_1_s` / `final_rows_batched_s`: the final-token pass of one variant, of all of them (over a kept cache);
- `clean_plus_batched_s`: the clean pass and the batched final-token pass, what the engine pays per prompt;
- `seconds_per_variant`: clean_plus_batched_s / variants;
- `final_cached_speedup_ratio`: full_forward_s / seconds_per_variant;
- `clean_logits_max_abs_diff`: the clean pass's final logits against the full forward's.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import torch

    from interp.core.backends import left_pad, make_backend
    from interp.core.backends.final_cached import clean_pass, final_pass
    from interp.core.models import load_model
    from interp.core.spans import tokenized_judge_prompt
    from interp.hooks.final_row import FinalActivations, RowInputs, final_row_edits
    from interp.hooks.nodes import node_from_dict

    torch.set_num_threads(args.threads)
    model = load_model("smollm2-135m-instruct", device="cpu")
    runner = make_backend(model, "hf")
    a = "Boil the egg for eight minutes, then put it in cold water so the shell comes off cleanly. " * 6
    b = "Eggs are a food; you can boil them in water on the stove until they are done, then eat them. " * 6
    prompt = tokenized_judge_prompt(model, "helpfulness", "How do I boil an egg?", a, b)
    batch, offsets = left_pad([prompt.input_ids], model.tokenizer.pad_token_id)
    heads = model.n_heads
    variants = [
        [
            node_from_dict(
                {"site": "head_output", "op": "zero", "heads": {20 + i % 10: [i % heads]}, "positions": "final"}
            )
        ]
        for i in range(args.variants)
    ]
    kept = FinalActivations(runner)

    def edits(n: int) -> list:
        return [final_row_edits(v, kept, batch, offsets, [prompt], RowInputs()) for v in variants[:n]]

    def timed(fn) -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    clean = clean_pass(model, batch)
    runner.forward(batch)  # warm up
    times: dict[str, list[float]] = {"full": [], "one": [], "batched": [], "clean_batched": []}
    for _ in range(args.repeat):
        times["full"].append(timed(lambda: runner.forward(batch)))
        one, many = edits(1), edits(args.variants)
        times["one"].append(timed(lambda one=one: final_pass(model, clean, one)))
        times["batched"].append(timed(lambda many=many: final_pass(model, clean, many)))
        times["clean_batched"].append(timed(lambda many=many: final_pass(model, clean_pass(model, batch), many)))
    median = {name: statistics.median(values) for name, values in times.items()}
    per_variant = median["clean_batched"] / args.variants
    figures = {
        "model": model.name,
        "prompt_tokens": len(prompt),
        "variants": args.variants,
        "threads": torch.get_num_threads(),
        "repeat": args.repeat,
        "full_forward_s": f"{median['full']:.4g}",
        "final_row_1_s": f"{median['one']:.4g}",
        "final_rows_batched_s": f"{median['batched']:.4g}",
        "clean_plus_batched_s": f"{median['clean_batched']:.4g}",
        "seconds_per_variant": f"{per_variant:.4g}",
        "final_cached_speedup_ratio": f"{median['full'] / per_variant:.3f}",
        "clean_logits_max_abs_diff": f"{float((clean.logits - runner.forward(batch)).abs().max()):.3g}",
    }
    print("\n".join(f"{name}: {value}" for name, value in figures.items()))


if __name__ == "__main__":
    main()
