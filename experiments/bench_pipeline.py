"""Pipeline figures, measured side by side in one run; one `name: value` per line.

- judging throughput, batched (8) vs one at a time, with span-attention extraction as in a run, for both
  default judges: batched as in a run (the batch's common prefix, the judge instructions, run once and its
  keys/values shared by the rows) and batched without prefix sharing (padding only);
- judging throughput under an intervention (self-span mask, all layers and heads) vs plain judging;
- wall time of `interp demo --n 12` and of the full default demo, each from an empty response cache
  (the dequantised models are linked in: "after set-up");
- responses/s generated through llama-cpp-python's OpenAI-compatible server (the packaged SmolLM2 GGUF,
  4 requests at a time) vs in-process HF generation of the same GGUF (dequantised, batch 4), the same
  built-in instructions and greedy decoding, each from an empty response cache;
- the demo's breakdown (`interp demo --timings --json`: loading, generation, judging per judge, the causal
  test, figures) and torch's thread count, with `--full` for the full demo from an empty cache;
- the judges that share SmolLM2's lower layers (the base and its organisms) judging the same prompts, each
  its own full pass vs one lower-layer pass per batch (`shared_trunk`): wall and CPU seconds;
- company on the machine (`--company`): `shared_slowdown_ratio`, two small `interp dbg` runs started together
  against one alone (the slower of the two over the lone run; target <= 2.5), and `stream_slowdown_ratio`,
  one small run beside a stream of short-lived CLI processes (`interp models --json`, one after another)
  against alone; and why a crowded machine slows torch: a fixed forward workload at 1 and 2 threads, alone
  and beside one busy process, with OpenMP's default (spinning) and passive wait policy.

- the README's main command as a new user types it (`--readme`): a fresh clone of this repository, `bash setup.sh
  && .venv/bin/interp demo --out runs/demo` in one shell line, an empty interp cache, with the threads the CLI
  chooses: `readme_demo_seconds` (target <= 480 on an idle 2-core machine) and `demo_peak_rss_gb` (the largest
  process's peak resident set; target <= 4);
- the causal test's peak memory with 6 control judges over 3 (`--memory`, `experiments/bench_memory.py` with
  `--memory-layers` layers a model, separate model folders): `causal_peak_memory_ratio` (target <= 1.2);
- the Ray executor (`--ray`): a tiny causal test (two 2-layer Llamas, three control judges) serial, then with
  `--executor ray` on a local Ray of 2 CPUs on the same run directory: `ray_vs_serial_identical` (every file of
  the keyed store and the result the same bytes), `serial_seconds`, `ray_seconds` (Ray's start apart:
  `ray_start_seconds`).

- greedy answers (`--greedy`): the demo's 72 instructions answered by each author (batches of 24, empty response
  caches) with `interp.run.greedy` (finished rows leave the batch) and with transformers' `generate`:
  `greedy_pruned_seconds_*`, `greedy_generate_seconds_*` and `greedy_answers_differing_*` (0: the same answers
  token for token).

Every figure depends on what else runs: the load average before and after is printed with them.

Usage: python experiments/bench_pipeline.py [--skip-demo] [--full] [--skip-server] [--skip-judging]
       [--skip-trunk] [--company] [--threads-only] [--readme] [--memory [--memory-layers N]] [--ray] [--greedy]
       [--api-company] [--only] (`--only`: just the sections asked for with --readme, --memory, --ray, --company,
       --greedy, --api-company)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import torch

REPO = Path(__file__).resolve().parents[1]


def judging_prompts(model, n: int):
    from interp.core.spans import build_judge_prompt
    from interp.data import builtin_items

    items = [i for i in builtin_items() if i.task == "helpfulness"][: n // 2]
    prompts = []
    for index, item in enumerate(items):  # both orders of each pair, as a run judges them
        other = items[(index + 1) % len(items)].reference
        prompts.append(build_judge_prompt(model, item.task, item.query, item.reference, other))
        prompts.append(build_judge_prompt(model, item.task, item.query, other, item.reference))
    return sorted(prompts, key=len)  # a run batches similar lengths together (runs.run_judging)


def time_judging(backend, prompts, labels, batch_size: int, repeats: int, bias_for=None) -> float:
    from interp.core.judge import judge_batch

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for offset in range(0, len(prompts), batch_size):
            chunk = prompts[offset : offset + batch_size]
            judge_batch(backend, chunk, labels, readout="final", bias=bias_for(chunk) if bias_for else None)
        times.append(time.perf_counter() - start)
    return len(prompts) / statistics.median(times)


def forward_cost_figures(model, short: str) -> None:
    """Cost of one eager forward per sequence at batch 1 and 8, equal lengths (no padding): on a CPU the
    compute is the bottleneck, so batching alone cannot multiply throughput."""
    hf_model = model.hf_model
    ids = torch.randint(100, 1000, (8, 360))
    costs = {}
    with torch.inference_mode():
        for rows in (1, 8):
            hf_model(input_ids=ids[:rows], use_cache=False, logits_to_keep=1)
            start = time.perf_counter()
            for _ in range(2):
                hf_model(input_ids=ids[:rows], use_cache=False, logits_to_keep=1)
            costs[rows] = (time.perf_counter() - start) / 2 / rows
    print(f"{short}_forward_360_tokens_ms_per_sequence_batch1: {1000 * costs[1]:.0f}")
    print(f"{short}_forward_360_tokens_ms_per_sequence_batch8: {1000 * costs[8]:.0f}")
    print(f"{short}_forward_batch8_per_sequence_speedup_ratio: {costs[1] / costs[8]:.2f}")


def judging_figures(repeats: int) -> None:
    from interp.core.backends.hf import HFBackend
    from interp.core.judge import label_tokens
    from interp.core.models import load_model
    from interp.hooks.compile import bias_builder
    from interp.hooks.spec import AttentionIntervention

    for alias, short in (("smollm2-135m-instruct", "smollm2"), ("gemma3-270m", "gemma3")):
        model = load_model(alias)
        backend, padding_only = HFBackend(model), HFBackend(model, shares_prefix=False)
        labels = label_tokens(model.tokenizer)
        prompts = judging_prompts(model, 16)
        print(f"{short}_judge_prompt_tokens_mean: {sum(len(p) for p in prompts) / len(prompts):.0f}")
        forward_cost_figures(model, short)
        time_judging(backend, prompts[:2], labels, 2, 1)  # warm-up
        single = time_judging(backend, prompts, labels, 1, repeats)
        unshared = time_judging(padding_only, prompts, labels, 8, repeats)
        batched = time_judging(backend, prompts, labels, 8, repeats)
        spec = AttentionIntervention(target="a", alpha=0.0)
        intervened = time_judging(
            backend,
            prompts,
            labels,
            8,
            repeats,
            bias_for=lambda chunk, model=model, spec=spec: bias_builder(spec, model),
        )
        print(f"{short}_judging_one_at_a_time_per_second: {single:.2f}")
        print(f"{short}_judging_batched8_padding_only_per_second: {unshared:.2f}")
        print(f"{short}_judging_batched8_per_second: {batched:.2f}")
        print(f"{short}_batched_padding_only_speedup_ratio: {unshared / single:.2f}")
        print(f"{short}_batched_judging_speedup_ratio: {batched / single:.2f}")
        print(f"{short}_judging_under_intervention_per_second: {intervened:.2f}")
        print(f"{short}_intervention_throughput_ratio: {intervened / batched:.2f}")
        del model, backend, padding_only


def empty_cache(tmp: Path) -> Path:
    """An INTERP_CACHE with no answers in it, the dequantised models linked in ("after set-up")."""
    from interp.core.models import cache_root

    cache = Path(tmp) / "cache"
    cache.mkdir(parents=True)
    for sub in ("dequantized", "gguf"):
        if (cache_root() / sub).exists():
            os.symlink(cache_root() / sub, cache / sub)
    return cache


def cli_env(cache: Path) -> dict:
    env = dict(os.environ, INTERP_CACHE=str(cache), TQDM_DISABLE="1")
    env.pop("OMP_NUM_THREADS", None)  # the CLI sizes its threads itself (interp.core.threads)
    return env


def demo_run(n: int | None) -> tuple[float, dict]:
    """`interp demo --timings --json` from an empty response cache: wall seconds (process start to exit) and
    the JSON it printed (timings, causal verdicts)."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [sys.executable, "-m", "interp.cli", "demo", "--out", str(Path(tmp) / "demo"), "--timings", "--json"]
        if n is not None:
            args += ["--n", str(n)]
        start = time.perf_counter()
        done = subprocess.run(
            args, check=True, env=cli_env(empty_cache(Path(tmp))), cwd=REPO, capture_output=True, text=True
        )
        return time.perf_counter() - start, json.loads(done.stdout)


def demo_figures(label: str, n: int | None) -> None:
    seconds, payload = demo_run(n)
    timings = payload["timings"]
    print(f"{label}_seconds: {seconds:.1f}")
    for row in payload.get("causal") or []:  # what the demo concluded, beside its time
        print(
            f"{label}_causal_{_name(row['judge'])}: {row.get('causal')} (p {row.get('p_value')}, Holm "
            f"{row.get('p_holm')}, n_test {row.get('n_test')})"
        )
    print(f"{label}_startup_and_other_seconds: {seconds - timings['total_s']:.1f}")
    for step, value in timings["steps"].items():
        print(f"{label}_{_name(step)}_seconds: {value:.1f}")
    print(f"{label}_torch_threads: {timings['torch_threads']}")


def _name(step: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in step).strip("_")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ---- judges sharing their lower layers ----------------------------------------------------------------


def trunk_figures(n_prompts: int = 16) -> None:
    """The base SmolLM2 and every installed organism judging the same prompts: each its own full pass (hf
    backend, shared prefix) vs one lower-layer pass per batch shared by all (`trunk_backends`)."""
    from interp.core.adapters import shipped_adapters
    from interp.core.backends.hf import HFBackend
    from interp.core.backends.shared_trunk import trunk_backends
    from interp.core.judge import label_tokens
    from interp.core.models import ALIASES, load_model

    family = [
        "smollm2-135m-instruct",
        *[
            name
            for name, alias in ALIASES.items()
            if alias.base == "smollm2-135m-instruct" and name in shipped_adapters()
        ],
    ]
    models = {name: load_model(name) for name in family}
    first = models[family[0]]
    prompts = judging_prompts(first, n_prompts)
    labels = label_tokens(first.tokenizer)
    plain = {name: HFBackend(model) for name, model in models.items()}
    shared = trunk_backends(models)
    time_judging(plain[family[0]], prompts[:2], labels, 2, 1)  # warm-up
    results = {}
    for label, backends in (("plain", plain), ("shared", shared)):
        wall, cpu = time.perf_counter(), time.process_time()
        for name in family:
            time_judging(backends[name], prompts, labels, 8, 1)
        results[label] = (time.perf_counter() - wall, time.process_time() - cpu)
    trunk = next(iter(shared.values())).trunk
    print(f"trunk_judges: {len(family)}")
    print(f"trunk_shared_layers: {trunk.layers} of {first.n_layers}")
    for label, (wall, cpu) in results.items():
        print(f"trunk_{label}_judging_seconds: {wall:.1f}")
        print(f"trunk_{label}_judging_cpu_seconds: {cpu:.1f}")
    print(f"trunk_shared_speedup_ratio: {results['plain'][0] / results['shared'][0]:.2f}")
    print(f"trunk_shared_cpu_speedup_ratio: {results['plain'][1] / results['shared'][1]:.2f}")


# ---- company on the machine ---------------------------------------------------------------------------

COMPANY_CONFIG = """name = "bench-company"
data = "builtin"
n = {n}
models = ["smollm2-135m-instruct", "gemma3-270m"]
judges = ["smollm2-135m-instruct"]
max_words = 40
max_new_tokens = 64
n_boot = 200
"""


def dbg_process(tmp: Path, label: str, n: int) -> subprocess.Popen:
    """A small `interp dbg` (n items, SmolLM2 judging, no report) with its own empty answer cache."""
    config = tmp / f"{label}.toml"
    config.write_text(COMPANY_CONFIG.format(n=n))
    args = [sys.executable, "-m", "interp.cli", "dbg", str(config), "--out", str(tmp / label), "--no-report"]
    args += ["--json", "--timings"]
    env = cli_env(empty_cache(tmp / f"{label}-cache"))
    env.pop("INTERP_THREADS", None)  # each run sizes its threads to the free cores: what this figure measures
    return subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def timed(processes: list[subprocess.Popen], start: float, threads: list | None = None) -> list[float]:
    """Each process's wall seconds from `start`; `threads` gets each run's torch thread counts (`--timings`)."""
    seconds = []
    for process in processes:
        out, err = process.communicate()
        if process.returncode != 0:
            raise RuntimeError(
                f"interp dbg failed: {err.strip().splitlines()[-1] if err.strip() else process.returncode}"
            )
        seconds.append(time.perf_counter() - start)
        if threads is not None:
            threads.append(json.loads(out)["timings"]["torch_threads_used"])
    return seconds


API_RUN = """import sys, tomllib
import interp
from interp.core.threads import threads_used
interp.dbg(tomllib.loads(open(sys.argv[1]).read()), sys.argv[2], progress=False)
print(" -> ".join(map(str, threads_used())))
"""


def api_process(tmp: Path, label: str, n: int, pin: int | None) -> subprocess.Popen:
    """`interp.dbg` from Python (as a notebook calls it; no CLI), n items, its own empty answer cache; `pin`
    holds torch at that many threads (INTERP_THREADS), None lets the first batch decide."""
    config = tmp / f"{label}.toml"
    config.write_text(COMPANY_CONFIG.format(n=n))
    env = cli_env(empty_cache(tmp / f"{label}-cache"))
    env.pop("INTERP_THREADS", None)
    if pin is not None:
        env["INTERP_THREADS"] = str(pin)
    args = [sys.executable, "-c", API_RUN, str(config), str(tmp / label)]
    return subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def api_company_figures(n: int = 8) -> None:
    """Two `interp.dbg` calls from Python started together, at torch's own default (one thread per core, what
    the Python API runs on when only the CLI decides the threads) against deciding at the first batch."""
    from interp.core.threads import allowed_cores

    walls = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for label, pin in (("torch_default", allowed_cores()), ("decided", None)):
            start = time.perf_counter()
            pair = [api_process(tmp, f"{label}-{i}", n, pin) for i in (1, 2)]
            used = []
            for process in pair:
                out, err = process.communicate()
                if process.returncode != 0:
                    raise RuntimeError(f"interp.dbg failed: {err.strip().splitlines()[-1] if err.strip() else ''}")
                used.append(out.strip().splitlines()[-1] if out.strip() else "?")
            walls[label] = time.perf_counter() - start
            print(f"api_pair_{label}_n{n}_seconds: {walls[label]:.1f}")
            print(f"api_pair_{label}_torch_threads_used: {' | '.join(used)}")
    print(f"api_pair_decided_speedup_ratio: {walls['torch_default'] / walls['decided']:.2f}")


def company_figures(n: int = 16) -> None:
    """Two `interp dbg` runs of `n` items started together against one alone, each sizing its own threads; the
    thread counts each used are printed, so a lone run that sized itself to one core (load left by a previous
    step) is seen. With few items loading dominates and the ratio says little: the default is 16."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        print(f"company_load_average_before: {load_average()}")
        threads: list = []
        start = time.perf_counter()
        (alone,) = timed([dbg_process(tmp, "alone", n)], start, threads)
        start = time.perf_counter()
        together = timed([dbg_process(tmp, "pair-1", n), dbg_process(tmp, "pair-2", n)], start, threads)
        print(f"company_dbg_n{n}_alone_seconds: {alone:.1f}")
        print(f"company_dbg_n{n}_two_together_seconds: {max(together):.1f}")
        print(f"company_alone_torch_threads_used: {' -> '.join(map(str, threads[0]))}")
        print(f"company_pair_torch_threads_used: {' | '.join(' -> '.join(map(str, t)) for t in threads[1:])}")
        print(f"shared_slowdown_ratio: {max(together) / alone:.2f}")
        start = time.perf_counter()
        run = dbg_process(tmp, "beside-stream", n)
        started = 0
        while run.poll() is None:  # short-lived CLI processes, one after another, while the run lasts
            subprocess.run(
                [sys.executable, "-m", "interp.cli", "models", "--json"],
                env=cli_env(tmp / "stream-cache"),
                cwd=REPO,
                capture_output=True,
            )
            started += 1
        (beside,) = timed([run], start)
        print(f"company_dbg_n{n}_beside_stream_seconds: {beside:.1f}")
        print(f"company_stream_processes_started: {started}")
        print(f"stream_slowdown_ratio: {beside / alone:.2f}")
        print(f"company_load_average_after: {load_average()}")


THREAD_WORKLOAD = """
import json, os, sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
config = LlamaConfig(
    hidden_size=576, intermediate_size=1536, num_hidden_layers=6, num_attention_heads=9, num_key_value_heads=3,
    vocab_size=49152,
)
model = LlamaForCausalLM(config).eval()
ids = torch.randint(0, 1000, (8, 256))
with torch.inference_mode():
    model(ids, logits_to_keep=1)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(3):
        model(ids, logits_to_keep=1)
    print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}))
"""

BUSY = "import time\nend = time.time() + 600\nwhile time.time() < end:\n    pass\n"


def thread_workload(threads: int, wait_policy: str | None = None) -> dict:
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    if wait_policy:
        env["OMP_WAIT_POLICY"] = wait_policy
    done = subprocess.run(
        [sys.executable, "-c", THREAD_WORKLOAD, str(threads)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def thread_figures() -> None:
    """A SmolLM2-sized forward workload (6 layers, batch 8 x 256 tokens, 3 passes) at 1 and 2 threads, alone and
    beside one busy process (a Python loop), OpenMP's default wait policy and PASSIVE."""
    print(f"threads_load_average_before: {load_average()}")
    cases = {"alone_1": (1, None), "alone_2": (2, None)}
    results = {name: thread_workload(*case) for name, case in cases.items()}
    busy = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        time.sleep(1.0)
        for name, case in {
            "beside_busy_1": (1, None),
            "beside_busy_2": (2, None),
            "beside_busy_2_passive": (2, "PASSIVE"),
        }.items():
            results[name] = thread_workload(*case)
    finally:
        busy.kill()
        busy.wait()
    for name, r in results.items():
        print(f"threads_{name}_wall_seconds: {r['wall']:.2f}")
        print(f"threads_{name}_cpu_seconds: {r['cpu']:.2f}")
    print(
        "threads_two_vs_one_beside_busy_wall_ratio: "
        f"{results['beside_busy_2']['wall'] / results['beside_busy_1']['wall']:.2f}"
    )
    print(f"threads_two_vs_one_alone_wall_ratio: {results['alone_2']['wall'] / results['alone_1']['wall']:.2f}")
    print(
        "threads_two_passive_vs_one_beside_busy_wall_ratio: "
        f"{results['beside_busy_2_passive']['wall'] / results['beside_busy_1']['wall']:.2f}"
    )
    print(f"threads_load_average_after: {load_average()}")


@contextlib.contextmanager
def interp_cache(path: Path | str) -> Iterator[None]:
    """INTERP_CACHE set to `path` inside the block, as it was before after it."""
    previous = os.environ.get("INTERP_CACHE")
    os.environ["INTERP_CACHE"] = str(path)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("INTERP_CACHE", None)
        else:
            os.environ["INTERP_CACHE"] = previous


def server_figures(n_items: int = 8, max_new_tokens: int = 64) -> None:
    sys.path.insert(0, str(REPO))
    from interp.config import HTTPJudgeConfig
    from interp.core.models import load_model
    from interp.data import builtin_items, sample_items
    from interp.run.responses import Decoding, generate_responses
    from interp.run.server_responses import server_responses
    from tests.helpers.servers import llama_server

    items = sample_items(builtin_items(), n=n_items, seed=1)
    decoding = Decoding(max_words=200, max_new_tokens=max_new_tokens, batch_size=4)
    model = load_model("smollm2-135m-instruct")
    seconds = {}
    with tempfile.TemporaryDirectory(prefix="bench-server-") as tmp:
        with llama_server(Path(tmp), n_ctx=2048) as base_url:
            endpoint = HTTPJudgeConfig(
                name="smollm2-server", base_url=base_url, model="smollm2", concurrency=4, timeout=300
            )
            with interp_cache(Path(tmp) / "server-cache"):  # empty: every answer is asked for
                start = time.perf_counter()
                server_responses(endpoint, items, decoding, progress=False)
                seconds["server"] = time.perf_counter() - start
        with interp_cache(Path(tmp) / "local-cache"):  # the model is loaded already
            start = time.perf_counter()
            generate_responses(model, items, decoding, progress=False)
            seconds["inprocess"] = time.perf_counter() - start
    print(f"server_generation_responses_per_second: {n_items / seconds['server']:.3f}")
    print(f"inprocess_generation_responses_per_second: {n_items / seconds['inprocess']:.3f}")
    print(f"server_vs_inprocess_generation_ratio: {seconds['inprocess'] / seconds['server']:.2f}")


def readme_figures() -> None:
    """The README's two commands in one shell line on a fresh clone (committed HEAD), empty interp cache, pip's
    cache as it is; wall seconds from the shell's start, and the largest process's peak RSS (ru_maxrss of the
    children, read in a wrapper process so this one's other children do not count)."""
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("INTERP_THREADS", "OMP_NUM_THREADS", "VIRTUAL_ENV", "PYTHONPATH")
        }
        env |= {"INTERP_CACHE": str(Path(tmp) / "cache"), "TQDM_DISABLE": "1"}
        line = "bash setup.sh && .venv/bin/interp demo --out runs/demo --timings --json > demo.json"
        probe = (
            "import json, resource, subprocess, sys, time\n"
            f"start = time.perf_counter()\ndone = subprocess.run(['bash', '-c', {line!r}])\n"
            "print(json.dumps([time.perf_counter() - start, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode]))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe], cwd=clone, env=env, capture_output=True, text=True, check=True
        )
        seconds, peak_kb, code = json.loads(done.stdout.strip().splitlines()[-1])
        if code:
            sys.exit(f"the README's command failed (exit {code}): {done.stderr[-2000:]}")
        timings = json.loads((clone / "demo.json").read_text())["timings"]
    print(f"readme_demo_seconds: {seconds:.1f}")
    print(f"demo_peak_rss_gb: {peak_kb / 2**20:.2f}")
    print(f"readme_demo_steps_seconds: {timings['total_s']}")
    print(f"readme_demo_torch_threads_used: {' -> '.join(map(str, timings['torch_threads_used']))}")


def memory_figures(layers: int) -> None:
    """`experiments/bench_memory.py`'s lines (the causal test's peak, 6 controls against 3)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "experiments" / "bench_memory.py"), "--layers", str(layers)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"bench_memory failed: {done.stderr[-2000:]}")
    print(done.stdout.strip())


def ray_figures(n_items: int = 6) -> None:
    """The tiny causal test, serial and on a local Ray (2 CPUs), on the same run directory."""
    import shutil

    import ray
    from transformers import LlamaForCausalLM

    sys.path.insert(0, str(REPO))
    from interp.causal.design import TestDesign
    from interp.causal.intervene import intervene_run
    from interp.engine.executor import Execution
    from interp.run.store import read_run
    from tests.causal.test_intervene import tiny_controls, tiny_pair_run
    from tests.engine.test_executor import files_under
    from tests.helpers.models import packaged_tokenizer, save_tiny, tiny_llama_config

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tokenizer = packaged_tokenizer("smollm2-135m-instruct")
        judge_dir = save_tiny(root / "judge", tiny_llama_config(tokenizer), LlamaForCausalLM, tokenizer, seed=0)
        run = tiny_pair_run(root, judge_dir, tokenizer, n=n_items, attention="none")
        design = TestDesign(heads="all-layers", control_judges=tuple(tiny_controls(root, tokenizer)))
        judge = read_run(run).config.models[0]
        # float32 judgments on 1 and 2 torch threads differ in the 7th digit; a Ray task has 1 CPU, so 1 thread:
        # the serial run is pinned to the same count, as docs/cluster.md asks of users who compare the two
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        start = time.perf_counter()
        try:
            serial = intervene_run(run, design=design, judges=[judge], execution=Execution(progress=False))
        finally:
            torch.set_num_threads(threads)
        serial_seconds = time.perf_counter() - start
        serial_files = files_under(run)
        for folder in ("variants", "interventions"):
            shutil.rmtree(run / folder)
        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        ray_start = time.perf_counter() - start
        start = time.perf_counter()
        on_ray = intervene_run(run, design=design, judges=[judge], execution=Execution(progress=False, executor="ray"))
        ray_seconds = time.perf_counter() - start
        identical = files_under(run) == serial_files and on_ray == serial
        ray.shutdown()
    print(f"ray_vs_serial_identical: {str(identical).lower()}")
    print(f"ray_tasks_files_compared: {len(serial_files)}")
    print(f"serial_seconds: {serial_seconds:.1f}")
    print(f"ray_seconds: {ray_seconds:.1f}")
    print(f"ray_start_seconds: {ray_start:.1f}")


def greedy_figures() -> None:
    """The demo's answers of each author: finished rows let go (`interp.run.greedy`) vs `generate`, same batches."""
    import interp.run.responses as responses
    from interp.core.models import ModelCache
    from interp.core.placement import placement_of
    from interp.data import builtin_items
    from interp.studies.demo import demo_config

    config = demo_config(None)
    models, items, decoding = ModelCache(placement_of(config)), builtin_items(), responses.decoding_of(config)
    supports = responses.supports_greedy_pruning
    try:
        for name in config.models:
            model, answers = models.get(name), {}
            for way, rule in (("pruned", supports), ("generate", lambda hf_model: False)):
                responses.supports_greedy_pruning = rule
                with tempfile.TemporaryDirectory() as tmp, interp_cache(tmp):  # empty: every answer is generated
                    start = time.perf_counter()
                    answers[way] = responses.generate_responses(model, items, decoding, progress=False)
                    print(f"greedy_{way}_seconds_{name}: {time.perf_counter() - start:.1f}")
            differing = sum(
                (a.text, a.n_new_tokens) != (b.text, b.n_new_tokens)
                for a, b in zip(answers["pruned"], answers["generate"], strict=False)
            )
            print(f"greedy_answers_differing_{name}: {differing}")
    finally:
        responses.supports_greedy_pruning = supports


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--full", action="store_true", help="also time the full default demo (all built-in items)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-judging", action="store_true")
    parser.add_argument("--skip-server", action="store_true")
    parser.add_argument("--skip-trunk", action="store_true")
    parser.add_argument(
        "--company", action="store_true", help="also the slowdowns beside other runs and a stream of CLI processes"
    )
    parser.add_argument("--company-n", type=int, default=16, help="items of each run in --company (default 16)")
    parser.add_argument("--threads-only", action="store_true", help="only the thread/wait-policy workload")
    parser.add_argument(
        "--readme",
        action="store_true",
        help="also the README's setup.sh + demo on a fresh clone (~10 min of CPU; run it alone)",
    )
    parser.add_argument("--memory", action="store_true", help="also the causal test's peak memory, 6 controls over 3")
    parser.add_argument(
        "--memory-layers", type=int, default=30, help="layers of each model in --memory (SmolLM2's 30; 8 is cheaper)"
    )
    parser.add_argument(
        "--ray", action="store_true", help="also the Ray executor against the serial run (needs pip install .[ray])"
    )
    parser.add_argument("--greedy", action="store_true", help="also greedy answers: finished rows let go vs generate")
    parser.add_argument(
        "--api-company",
        action="store_true",
        help="also two interp.dbg calls from Python side by side: torch's default threads vs decided (~10 min)",
    )
    parser.add_argument(
        "--only",
        action="store_true",
        help="only the sections asked for with --readme, --memory, --ray, --company, --greedy, --api-company",
    )
    args = parser.parse_args()
    if args.only:
        args.skip_server = args.skip_judging = args.skip_trunk = args.skip_demo = True
    from interp.core.threads import set_torch_threads

    print(f"load_average: {load_average()}")
    print(f"torch_threads: {set_torch_threads()}")
    if args.threads_only:
        thread_figures()
        return
    if not args.skip_server:
        server_figures()
    if not args.skip_judging:
        judging_figures(args.repeats)
    if not args.skip_trunk:
        trunk_figures()
    if not args.skip_demo:
        demo_figures("demo_n12", 12)
        if args.full:
            demo_figures("demo_full", None)
    if args.company:
        thread_figures()
        company_figures(args.company_n)
    if args.memory:
        memory_figures(args.memory_layers)
    if args.ray:
        ray_figures()
    if args.greedy:
        greedy_figures()
    if args.api_company:
        api_company_figures()
    if args.readme:
        readme_figures()
    print(f"load_average_after: {load_average()}")


if __name__ == "__main__":
    main()
