"""Benchmark: retrain an organism from its config on this CPU and compare its held-out figures with the shipped
manifest (a recipe reproduces when it trains in under 30 minutes on 2 cores and its figures land within 3 points).

Prints `name: value` lines: `organism_train_minutes` (wall time of `train_to_folder`: loading, data, the
frozen lower-layer pass and the LoRA passes), then per held-out set (`test`: the config's test split at
the demo's answer settings; `unseen`: the 48 items of interp/builtin/alpacaeval_unseen_48.json at a run's
defaults) position consistency, agreement with gold and DBG (hard, soft) with intervals, and the shipped
manifest's value beside each. `--shipped-only` prints the shipped manifests' figures without training.
`--answers N`: a fresh machine's first step of every training, side by side: the authors' answers to the
config's first N training items (its split's train set, then MT-Bench), each way in an empty cache folder: at
the training's fixed thread count in calls of 8 rows, following the free cores in calls of 8, and following them
in calls of `ANSWER_ROWS` (what training does); prints the times, the speedup ratios and
whether the answers are the same text as the first way's. `--answers-free-only` leaves out the fixed-count way.
`--frozen N`: the next step, side by side: the frozen pass over the first N training examples (the base's
batched pass to the start organism's first LoRA layer; for a built heads recipe, then the start organism's layers
up to the slot writer) three ways: at the training's fixed count one batch after another, at that count with
batches side by side in threads (what training does), and following the free cores; prints
the times, the ratios and how many states are the same bits as the first way's. Uses the answers of the cache
folder (`INTERP_CACHE`), generating those missing.

    python experiments/bench_organisms.py [--config experiments/organisms/smollm2-135m-judge.toml] [--shipped-only]
                                          [--answers N] [--frozen N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

from interp.core.adapters import shipped_adapters
from interp.organisms.config import load_organism_config
from interp.organisms.pipeline import add_held_out, train_to_folder

FIGURES = ("position_consistency", "dbg_hard", "dbg_soft")


def figure_lines(prefix: str, held_out: dict, shipped: dict | None) -> list[str]:
    lines = []
    for split, metrics in held_out.items():
        values = {name: metrics[name] for name in FIGURES} | {
            "agreement_with_gold": metrics["agreement_with_gold"]["value"]
        }
        values |= {"agreement_legitimate": metrics["agreement_legitimate"]["value"]}
        for name, value in values.items():
            line = f"{prefix}{split}_{name}: {value:.3f}" if value is not None else f"{prefix}{split}_{name}: n/a"
            if shipped is not None:
                ref = shipped.get(split, {}).get(name)
                ref = ref["value"] if isinstance(ref, dict) else ref
                line += f" (shipped {ref:.3f})" if ref is not None else ""
            lines.append(line)
        lines.append(f"{prefix}{split}_dbg_hard_ci: [{metrics['dbg_hard_ci'][0]:.3f}, {metrics['dbg_hard_ci'][1]:.3f}]")
        lines.append(f"{prefix}{split}_dbg_soft_ci: [{metrics['dbg_soft_ci'][0]:.3f}, {metrics['dbg_soft_ci'][1]:.3f}]")
    return lines


def answers_side_by_side(config, n: int, free_only: bool = False) -> None:
    """The first N training items' answers, cold, three ways: at the fixed count in calls of 8 rows (the
    baseline), following the free cores in calls of 8, and following them in calls of `ANSWER_ROWS` (what training
    does)."""
    from contextlib import nullcontext

    import interp.organisms.train as train
    from interp.core.models import load_model
    from interp.core.threads import set_torch_threads

    splits = train.organism_items(config)
    items = (splits["train"] if config.data.builtin else [])[:n]
    items += splits["mtbench"][: n - len(items)]
    ways = {"fixed_count": 8, "free_cores": 8, f"free_cores_{train.ANSWER_ROWS}_rows": train.ANSWER_ROWS}
    if free_only:  # the rows alone: the first way at the free cores
        del ways["fixed_count"]
    got, seconds, before = {}, {}, os.environ.get("INTERP_CACHE")
    real_follow, real_rows = train.following_free_cores, train.ANSWER_ROWS
    for way, rows in ways.items():
        with tempfile.TemporaryDirectory() as cache:
            os.environ["INTERP_CACHE"] = cache  # empty: a fresh machine's answers (the model files load from it too)
            models = {name: load_model(name) for name in config.data.authors}
            set_torch_threads(config.train.threads)  # as a training sets it before its answers
            if way == "fixed_count":  # what `cached_answers` did before: generation at the fixed count
                train.following_free_cores = nullcontext
            train.ANSWER_ROWS = rows
            try:
                start = time.perf_counter()
                got[way] = train.cached_answers(models, items, config, progress=False)
                seconds[way] = time.perf_counter() - start
            finally:
                train.following_free_cores, train.ANSWER_ROWS = real_follow, real_rows
    if before is None:  # the caller's cache folder back, not a deleted temporary one
        os.environ.pop("INTERP_CACHE", None)
    else:
        os.environ["INTERP_CACHE"] = before
    print(f"answers_items: {len(items)} x {len(config.data.authors)} authors")
    print(f"answers_fixed_count_threads: {config.train.threads}")
    first = next(iter(ways))
    fixed = got[first]
    for way, rows in ways.items():
        print(f"answers_{way}_rows: {rows}")
        print(f"answers_{way}_s: {seconds[way]:.1f}")
        if way == first:
            continue
        print(f"answers_{way}_speedup_ratio: {seconds[first] / seconds[way]:.2f}")
        same = sum(fixed[author][item] == text for author in got[way] for item, text in got[way][author].items())
        print(f"answers_{way}_identical: {same} of {sum(len(v) for v in got[way].values())}")


def frozen_side_by_side(config, n: int) -> None:
    """The frozen pass over the first N training examples three ways: at the fixed count one batch after another
    (the baseline), at the fixed count with batches side by side in threads (`one_thread_workers`, what training
    does), and
    with torch following the free cores (rejected: other bits). The base's batched pass to the start organism's
    first LoRA layer, then (a built heads recipe) the start organism's own layers up to the slot writer, one
    example at a time, as `interp.organisms.heads` runs them."""
    import copy

    import torch

    import interp.organisms.train as train
    from interp.core.adapters import apply_adapter
    from interp.core.models import load_model
    from interp.core.threads import following_free_cores, set_torch_threads
    from interp.organisms import frozen
    from interp.organisms.config import start_folder
    from interp.organisms.heads import start_first_lora_layer

    models = {name: load_model(name) for name in config.data.authors}
    base = models[config.base_model]
    pairs, labels = train.training_pairs(config, models, progress=False)
    examples = train.build_examples(base, pairs, labels)[:n]
    built = config.heads is not None and config.heads.construction == "built"
    hf = base.hf_model if not built else apply_adapter(copy.deepcopy(base.hf_model), start_folder(config.heads.start))
    hf.set_attn_implementation("sdpa")  # as training runs it
    layer = (  # where the base's states end: a heads recipe's start organism's LoRA, or the config's own LoRA
        start_first_lora_layer(config.heads.start, base.n_layers)
        if config.heads
        else base.n_layers - config.lora.top_layers
    )
    top = config.heads.slot_writer_layer(base.n_layers) if built else layer
    pad_id, uncached = base.tokenizer.pad_token_id, dict(cache=None, key="bench", progress=False)
    ways = ("fixed_count", "side_by_side", "free_cores")
    set_torch_threads(config.train.threads)
    frozen.frozen_states(hf, layer, examples[:8], pad_id, **uncached)  # warm-up: the first way is timed warm too
    got, seconds, real_workers = {}, {}, frozen.one_thread_workers
    for way in ways:
        set_torch_threads(config.train.threads)  # as a training sets it before its frozen pass
        frozen.one_thread_workers = (lambda *_: 1) if way == "fixed_count" else real_workers
        try:
            with following_free_cores() if way == "free_cores" else contextlib.nullcontext():
                counts = (torch.get_num_threads(), frozen.one_thread_workers())
                start = time.perf_counter()
                lower, _ = frozen.frozen_states(hf, layer, examples, pad_id, **uncached)  # training's own pass
                seconds[way, "base"] = time.perf_counter() - start
                upper = []
                if top > layer:  # the start organism's layers, as `interp.organisms.heads` computes them
                    upper, _ = frozen.frozen_states(hf, top, examples, pad_id, below=(layer, lower), **uncached)
                seconds[way, "start"] = time.perf_counter() - start - seconds[way, "base"]
        finally:
            frozen.one_thread_workers = real_workers
        got[way] = lower, upper
        print(f"frozen_{way}_threads_per_op: {counts[0]}")
        print(f"frozen_{way}_batches_side_by_side: {counts[1]}")
    print(f"frozen_examples: {len(examples)} (base to layer {layer}, start organism to layer {top})")
    for part, index in (("base", 0), ("start", 1)):
        if not got["fixed_count"][index]:
            continue
        fixed = seconds["fixed_count", part]
        print(f"frozen_{part}_fixed_count_s: {fixed:.1f}")
        for way in ways[1:]:
            pairs_ = list(zip(got["fixed_count"][index], got[way][index], strict=False))
            print(f"frozen_{part}_{way}_s: {seconds[way, part]:.1f}")
            print(f"frozen_{part}_{way}_speedup_ratio: {fixed / seconds[way, part]:.2f}")
            print(f"frozen_{part}_{way}_identical_bits: {sum(torch.equal(a, b) for a, b in pairs_)} of {len(pairs_)}")
            print(f"frozen_{part}_{way}_max_abs_difference: {max(float((a - b).abs().max()) for a, b in pairs_):.3g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("experiments/organisms/smollm2-135m-judge.toml"))
    parser.add_argument("--shipped-only", action="store_true")
    parser.add_argument("--answers", type=int, default=0, help="time the first N training items' answers, cold")
    parser.add_argument(
        "--answers-free-only", action="store_true", help="--answers without the fixed-count way (the rows alone)"
    )
    parser.add_argument(
        "--frozen", type=int, default=0, help="time the frozen pass over N training examples, and compare its bits"
    )
    args = parser.parse_args()
    if args.frozen:
        frozen_side_by_side(load_organism_config(args.config), args.frozen)
        return
    if args.answers:
        answers_side_by_side(load_organism_config(args.config), args.answers, args.answers_free_only)
        return
    if args.shipped_only:
        for name, folder in shipped_adapters().items():
            manifest = json.loads((folder / "manifest.json").read_text())
            print(f"{name}_manifest_train_minutes: {manifest['timings_s']['total_s'] / 60:.1f}")
            print("\n".join(figure_lines(f"{name}_", manifest.get("held_out", {}), None)))
        return
    config = load_organism_config(args.config)
    shipped_folder = shipped_adapters().get(config.name)
    shipped = json.loads((shipped_folder / "manifest.json").read_text()) if shipped_folder else {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / config.name
        start = time.perf_counter()
        manifest = train_to_folder(config, folder, progress=False)
        print(f"organism_train_minutes: {(time.perf_counter() - start) / 60:.1f}")
        print(f"organism_examples: {manifest['n_examples']}")
        print(f"organism_data_hash_matches_shipped: {manifest['data_hash'] == shipped.get('data_hash')}")
        manifest = add_held_out(config, folder)
        print("\n".join(figure_lines("", manifest["held_out"], shipped.get("held_out"))))


if __name__ == "__main__":
    main()
