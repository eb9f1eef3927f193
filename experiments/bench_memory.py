"""Benchmark: the causal test's peak memory with 6 control judges against 3, judges that share no weights.

Seven SmolLM2-135M-shaped models with random weights (seeded; 0.5 GB each in float32) are saved to separate
folders: one judge and six controls. A run of the judge (its answers against imported ones, 6 items) is made
once; then `interp intervene --all-layers` with 3 controls and with 6, each in a fresh process, under
`--max-memory 0` (every control let go once judged) and, for contrast, a budget that holds everything (what
the default does on a machine with room for all seven). Peak RSS is the process's ru_maxrss (the children's, read by the
parent).

Prints `name: value` lines, among them `causal_peak_memory_ratio` (6 controls over 3, the budget at 0; the
goal is at most 1.2) and `causal_peak_memory_ratio_unbounded` (every model kept: the old behaviour).
`--layers N`: fewer layers than SmolLM2's 30, for a cheaper run (8 layers: 0.2 GB a model).

`--organisms`: instead, SmolLM2 and the demo's two organisms loaded into one job's `ModelCache` and each run once
on a prompt, in a fresh process each way: the organisms adopting the base's weights (what the cache does) against
loading their own copy and sharing it after comparing values, and that with the LoRA merged into the mapped
file's pages as well (the older way: the mapping then stays whole). Prints the resident size after
and the peak (`organisms_rss_gb_*`, `organisms_peak_rss_gb_*`) and `organisms_peak_rss_ratio` (adopted over
compared).
Usage: python experiments/bench_memory.py [--root /tmp/bench-memory] [--layers 30] [--organisms]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ITEMS = [
    (
        f"q{k}",
        f"Give one practical tip about topic number {k} for a beginner.",
        f"A short reference answer about topic {k}.",
    )
    for k in range(6)
]


def build(root: Path, layers: int = 30) -> tuple[Path, list[str]]:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from interp.config import RunConfig
    from interp.run.pipeline import run_dbg
    from tests.helpers.models import packaged_tokenizer

    tokenizer = packaged_tokenizer("smollm2-135m-instruct")
    shape = dict(
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=layers,
        num_attention_heads=9,
        num_key_value_heads=3,
        vocab_size=len(tokenizer),
    )
    folders = []
    for seed in range(7):
        folder = root / f"model-{layers}-{seed}"
        if not (folder / "config.json").is_file():
            torch.manual_seed(seed)
            model = LlamaForCausalLM(
                LlamaConfig(
                    **shape, max_position_embeddings=2048, pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True
                )
            )
            model.save_pretrained(folder)
            tokenizer.save_pretrained(folder)
        folders.append(str(folder))
    AutoTokenizer.from_pretrained(folders[0])
    run = root / f"run-{layers}"
    if not (run / "summary.json").is_file():
        (root / "items.jsonl").write_text(
            "".join(
                json.dumps({"id": i, "task": "helpfulness", "query": q, "reference": r}) + "\n" for i, q, r in ITEMS
            )
        )
        (root / "other.jsonl").write_text(
            "".join(json.dumps({"item_id": i, "text": f"Another answer, number {i}."}) + "\n" for i, _, _ in ITEMS)
        )
        config = RunConfig(
            n=len(ITEMS),
            data=str(root / "items.jsonl"),
            models=(folders[0], "writer"),
            imports={"writer": str(root / "other.jsonl")},
            judges=[folders[0]],
            max_new_tokens=24,
            n_boot=20,
            attention="none",
            empty_answers="judge",
        )
        run_dbg(config, run, progress=False)
    return run, folders


def peak_gb(run: Path, judge: str, controls: list[str], budget: str | None) -> float:
    """Peak RSS (GB) of one `interp intervene` in a fresh process."""
    import shutil

    copy = run.parent / f"run-{len(controls)}-{budget}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(run, copy)
    command = [
        sys.executable,
        "-m",
        "interp.cli",
        "intervene",
        str(copy),
        "--all-layers",
        "--judge",
        judge,
        "--control-judge",
        ",".join(controls),
        "--json",
    ]
    if budget is not None:
        command += ["--max-memory", budget]
    probe = (
        "import resource, subprocess, sys\n"
        f"done = subprocess.run({command!r}, capture_output=True, text=True)\n"
        "sys.stderr.write(done.stderr[-2000:]) if done.returncode else None\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(done.returncode)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"intervene failed: {done.stderr[-2000:]}")
    return int(done.stdout.strip().splitlines()[-1]) / 2**20


ORGANISMS_PROBE = """
import sys, torch
from interp.core.models import ModelCache
if sys.argv[1] in ("compared", "merged_in_file"):
    ModelCache._loaded_base = lambda self, spec: None  # the organism reads its own copy; sharing compares values
if sys.argv[1] == "merged_in_file":  # and its LoRA merged into the mapped file's pages, which keeps the mapping
    import interp.core.adapters
    interp.core.adapters._privatise_lora_targets = lambda wrapped: None
cache = ModelCache()
for name in ("smollm2-135m-instruct", "smollm2-135m-judge", "smollm2-135m-selfpref"):
    model = cache.get(name)
    with torch.inference_mode():
        model.hf_model(torch.tensor([[1, 2, 3, 4]]))
import resource
now = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 2**20
print(now, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
"""


def organism_figures() -> None:
    """Resident size with SmolLM2 and its two demo organisms loaded and run: adopted weights vs compared copies."""
    figures = {}
    for way in ("adopted", "compared", "merged_in_file"):
        done = subprocess.run(
            [sys.executable, "-c", ORGANISMS_PROBE, way], cwd=REPO, capture_output=True, text=True, check=True
        )
        now, peak = map(float, done.stdout.strip().splitlines()[-1].split())
        figures[way] = peak
        print(f"organisms_rss_gb_{way}: {now:.2f}")
        print(f"organisms_peak_rss_gb_{way}: {peak:.2f}")
    print(f"organisms_peak_rss_ratio: {figures['adopted'] / figures['compared']:.3f}")
    print(f"organisms_peak_rss_ratio_vs_merged_in_file: {figures['adopted'] / figures['merged_in_file']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/bench-memory"))
    parser.add_argument("--layers", type=int, default=30)
    parser.add_argument("--organisms", action="store_true", help="the organisms' weights beside their base")
    args = parser.parse_args()
    if args.organisms:
        organism_figures()
        return
    args.root.mkdir(parents=True, exist_ok=True)
    run, folders = build(args.root, args.layers)
    print(f"causal_memory_model_layers: {args.layers}")
    judge, controls = folders[0], folders[1:]
    figures = {}
    for budget, name in (("0", "budget0"), ("1000", "unbounded")):
        three = peak_gb(run, judge, controls[:3], budget)
        six = peak_gb(run, judge, controls, budget)
        figures[name] = (three, six)
        print(f"causal_peak_gb_3_controls_{name}: {three:.2f}")
        print(f"causal_peak_gb_6_controls_{name}: {six:.2f}")
    print(f"causal_peak_memory_ratio: {figures['budget0'][1] / figures['budget0'][0]:.3f}")
    print(f"causal_peak_memory_ratio_unbounded: {figures['unbounded'][1] / figures['unbounded'][0]:.3f}")


if __name__ == "__main__":
    main()
