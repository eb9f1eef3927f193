"""Benchmark: the cost of node interventions over a plain judging pass, side by side in one run.

SmolLM2-135M-Instruct, float32, judge prompts of about `--tokens` tokens, batch `--batch` (left-padded), the hf
backend's forward pass (SDPA, final-position logits). Alternated and repeated; medians:

- `plain_forward_s`: the pass with no edit (no shared prefix, as every edited pass runs);
- `head_ablation_forward_s`: the same pass with a head_output zero ablation at 3 heads of 2 layers, positions
  all (hook functions built per batch, as the engine does) -> `head_ablation_overhead_ratio` (goal <= 1.10);
- `mean_ablation_forward_s`: a head_output mean ablation (means made beforehand) -> `mean_ablation_overhead_ratio`;
- `patch_forward_s`: a head_output patch from the swapped pair (the counterfactual pass that records the 2
  layers' head outputs, then the patched pass) -> `patch_overhead_ratio` (goal <= 2.10).

A control judge of the causal test is an organism of the same base (`smollm2-135m-judge`: LoRA on the top 8 of 30
layers), judged after the others on the same prompts: its lower 22 layers are the shared trunk's
(`interp.core.backends.shared_trunk`), already run for this batch and the counterfactual one. The same patch at
the top layers (L28 H0-2, L29 H6-8, where the attention-routed organisms' readers sit):
- `organism_patch_plain_s`: the organism's plain hf backend (every layer, both passes);
- `organism_patch_trunk_s`: its shared-trunk backend, the trunk's entries already made -> `trunk_patch_speedup_ratio`
  (plain over trunk; the pass before a site edit could use the trunk was always the plain one).

Prints one `name: value` per line. Usage:

    python experiments/bench_interventions.py [--repeat 7] [--tokens 512] [--batch 8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MODEL = "smollm2-135m-instruct"
QUERY = "Explain how a bicycle stays upright while moving, and what the rider does to keep it balanced."
SENTENCE = "The front wheel steers into the direction of any lean, which brings the wheels back under the rider. "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()

    import torch

    from interp.core.backends import left_pad, make_backend
    from interp.core.models import load_model
    from interp.core.spans import tokenized_judge_prompt
    from interp.core.threads import set_torch_threads
    from interp.hooks.node_data import node_edit_builder, reference_means
    from interp.hooks.nodes import node_from_dict

    set_torch_threads(None)
    model = load_model(MODEL, device="cpu")
    backend = make_backend(model, "hf")
    words = max(8, (args.tokens - 200) // 3)  # two answers of about (tokens - 200) / 2 tokens each (1.3 tokens a word)
    prompts = []
    for row in range(args.batch):
        a = " ".join((SENTENCE * 20).split()[row : row + words])
        b = " ".join((SENTENCE * 20).split()[row + 3 : row + 3 + words + row])
        prompts.append(tokenized_judge_prompt(model, "helpfulness", QUERY, a, b))
    batch, offsets = left_pad([p.input_ids for p in prompts], model.tokenizer.pad_token_id)
    heads = {"site": "head_output", "layers": [10, 20], "heads": {10: [1, 4], 20: [3]}, "positions": "all"}
    zero = node_from_dict(heads | {"op": "zero"})
    mean = node_from_dict(heads | {"op": "mean"})
    patch = node_from_dict(heads | {"op": "patch", "counterfactual": "swap"})
    with torch.inference_mode():
        means = {0: reference_means(backend, mean, prompts, own=None, authors=None, batch_size=args.batch)}
    builders = {
        "head_ablation": node_edit_builder([zero], backend, own=None),
        "mean_ablation": node_edit_builder([mean], backend, own=None, means=means),
        "patch": node_edit_builder([patch], backend, own=None),
    }

    def plain():
        return backend.forward(batch)

    def edited(name):
        def run():
            return backend.forward(batch, edits=builders[name](batch, offsets, prompts))

        return run

    from interp.core.backends.hf import HFBackend
    from interp.core.backends.shared_trunk import TrunkPool
    from interp.core.models import ModelCache

    cache = ModelCache(models={MODEL: model})
    organism = cache.get("smollm2-135m-judge")
    top = {"site": "head_output", "layers": [28, 29], "heads": {28: [0, 1, 2], 29: [6, 7, 8]}, "positions": "all"}
    top_patch = node_from_dict(top | {"op": "patch", "counterfactual": "swap"})
    trunk_backend = TrunkPool().backend(organism, [model, organism])
    organism_backends = {"organism_patch_plain": HFBackend(organism), "organism_patch_trunk": trunk_backend}

    def organism_patch(name):
        backend_ = organism_backends[name]
        build = node_edit_builder([top_patch], backend_, own=None)

        def run():
            return backend_.forward(batch, edits=build(batch, offsets, prompts))

        return run

    cases = (
        {"plain": plain}
        | {name: edited(name) for name in builders}
        | {name: organism_patch(name) for name in organism_backends}
    )
    with torch.inference_mode():
        for case in cases.values():  # warm up
            case()
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, case in cases.items():
                start = time.perf_counter()
                case()
                times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"model: {MODEL}")
    print(f"batch: {args.batch}")
    print(f"tokens: {batch.input_ids.shape[1]}")
    print(f"threads: {torch.get_num_threads()}")
    print(f"plain_forward_s: {medians['plain']:.4f}")
    for name in builders:
        print(f"{name}_forward_s: {medians[name]:.4f}")
    print(f"head_ablation_overhead_ratio: {medians['head_ablation'] / medians['plain']:.3f}")
    print(f"mean_ablation_overhead_ratio: {medians['mean_ablation'] / medians['plain']:.3f}")
    print(f"patch_overhead_ratio: {medians['patch'] / medians['plain']:.3f}")
    print(f"organism_patch_plain_s: {medians['organism_patch_plain']:.4f}")
    print(f"organism_patch_trunk_s: {medians['organism_patch_trunk']:.4f}")
    print(f"trunk_layers: {trunk_backend.trunk.layers}")
    print(f"trunk_patch_speedup_ratio: {medians['organism_patch_plain'] / medians['organism_patch_trunk']:.3f}")


if __name__ == "__main__":
    main()
