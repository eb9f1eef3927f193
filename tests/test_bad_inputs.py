"""The bad-input catalogue: every command, fed a bad input, prints one `error:` line, exits 2, and leaves
every file where it was (same names, same bytes).

Each case runs `interp.cli.main` in a process of its own (forked from one interpreter that imported the CLI
once, `tests.helpers.forked_cli`) against its own copy of one prepared tiny run (module-scoped), so most
cases fail in validation before any model loads. A case is a row of `CASES`:
(id, command-line arguments with {run} / {root} placeholders, a setup that writes the bad input, the
text the error line must contain).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
import tomli_w

from tests.helpers import REPO

GOOD_SPEC = 'target = "self"\nalpha = 0.0\n'
LONG_ITEM = '{"id": "very-long-1", "task": "helpfulness", "query": "%s"}\n' % ("word " * 5000)


def nothing(root: Path) -> None:
    pass


def write(name: str, text: str | bytes) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())

    return setup


def both(*setups: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        for step in setups:
            step(root)

    return setup


def corrupt_middle_line(name: str) -> Callable[[Path], None]:
    """Replace a middle line of run/<name> with half a JSON object (not a torn tail: a corrupt record)."""

    def setup(root: Path) -> None:
        path = root / "run" / name
        lines = path.read_bytes().splitlines(keepends=True)
        middle = len(lines) // 2
        lines[middle] = lines[middle][: len(lines[middle]) // 2] + b"\n"
        path.write_bytes(b"".join(lines))

    return setup


def read_only_dir(root: Path) -> None:
    """A directory this process cannot write to. Root ignores permission bits, so as root the directory is
    made immutable (chattr +i), which root cannot write into either; the case fails if neither works."""
    folder = root / "locked"
    folder.mkdir()
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=True, capture_output=True)
    else:
        folder.chmod(0o555)
    assert not os.access(folder, os.W_OK), "could not make a read-only directory here"


def unlock(root: Path) -> None:
    folder = root / "locked"
    if folder.exists() and os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
    elif folder.exists():
        folder.chmod(0o755)


def run_config(root: Path, **changes) -> str:
    """The prepared run's config.toml with some keys changed (a callable value gets the whole old config)."""
    data = tomllib.loads((root / "run" / "config.toml").read_text())
    for key, value in changes.items():
        data[key] = value(data) if callable(value) else value
    return tomli_w.dumps(data)


def config_from_run(name: str, **changes) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        (root / name).write_text(run_config(root, **changes))

    return setup


def config_with_data(name: str, data_file: str, **changes) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        (root / name).write_text(run_config(root, data=str(root / data_file), **changes))

    return setup


def sweep_toml(name: str, body: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        (root / name).write_text(f'run = "{root / "run"}"\n' + body)

    return setup


def run_models(root: Path) -> list[str]:
    return tomllib.loads((root / "run" / "config.toml").read_text())["models"]


def user_folder(name: str) -> Callable[[Path], None]:
    """A folder of the user's own files, named like files a run writes."""
    return both(
        write(f"{name}/report.html", "<p>mine</p>"),
        write(f"{name}/summary.json", '{"mine": 1}'),
        write(f"{name}/figures/figure2_grid.png", b"\x89PNG mine"),
    )


def model_copy(name: str, change: Callable[[Path], None]) -> Callable[[Path], None]:
    """root/<name>: a copy of the run's first model folder, then `change(folder)`."""

    def setup(root: Path) -> None:
        folder = root / name
        shutil.copytree(run_models(root)[0], folder)
        change(folder)

    return setup


def drop_tokenizer(folder: Path) -> None:
    for path in folder.iterdir():
        if path.name.startswith(("tokenizer", "vocab", "special_tokens", "merges", "chat_template")):
            path.unlink()


def nan_weights(folder: Path) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    save_file(
        {k: v.clone().fill_(float("nan")) for k, v in tensors.items()},
        folder / "model.safetensors",
        metadata={"format": "pt"},
    )


def as_gpt2(folder: Path) -> None:
    """The folder's tokenizer with a tiny GPT-2 (no `self_attn` modules to hook) instead of its Llama."""
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(folder)
    for path in folder.iterdir():
        if path.name in ("config.json", "model.safetensors", "generation_config.json"):
            path.unlink()
    GPT2LMHeadModel(
        GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=len(tokenizer), n_positions=2048)
    ).save_pretrained(folder)


def bad_adapter_config(root: Path) -> None:
    from interp.core.adapters import ADAPTERS_DIR

    shutil.copytree(ADAPTERS_DIR / "smollm2-135m-judge", root / "adapter")
    (root / "adapter" / "adapter_config.json").write_text('{"r": 8, ')


def nan_adapter(root: Path) -> None:
    """The null organism's adapter with the first 4 KiB of its tensor bytes set to 0xFF (NaN in float32)."""
    import struct

    from interp.core.adapters import ADAPTERS_DIR

    shutil.copytree(ADAPTERS_DIR / "smollm2-135m-judge", root / "adapter")
    path = root / "adapter" / "adapter_model.safetensors"
    data = bytearray(path.read_bytes())
    start = 8 + struct.unpack("<Q", data[:8])[0]
    data[start : start + 4096] = b"\xff" * 4096
    path.write_bytes(bytes(data))


def answers_file(name: str, text: str) -> Callable[[Path], None]:
    """An answers JSONL with `text` as the answer to every item of the run."""

    def setup(root: Path) -> None:
        ids = [json.loads(line)["id"] for line in (root / "run" / "items.jsonl").read_text().splitlines()]
        (root / name).write_text("".join(json.dumps({"item_id": i, "text": text}) + "\n" for i in ids))

    return setup


def small_organism(name: str, **planting) -> Callable[[Path], None]:
    """An organism config that trains in about a minute (one item, no MT-Bench), with `planting`."""
    data = {
        "name": "bad-organism",
        "data": {"max_items": 1, "mtbench": False},
        "train": {"epochs": 0.1},
        "planting": planting,
    }
    return write(name, tomli_w.dumps(data))


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    setup: Callable[[Path], None]
    expected: str


def case(id: str, args: str | list[str], setup: Callable[[Path], None] = nothing, expected: str = "") -> Case:
    return Case(id, tuple(args.split() if isinstance(args, str) else args), setup, expected)


CASES = [
    # ---- dbg: output location -----------------------------------------------------------------------
    case(
        "dbg human labels missing",
        "dbg {root}/h.toml --out {root}/new",
        config_from_run("h.toml", gold={"human": "/nonexistent/human.jsonl"}),
        "no such file of human labels",
    ),
    case(
        "dbg out is a file",
        "dbg {root}/good.toml --out {root}/afile",
        both(config_from_run("good.toml"), write("afile", "x")),
        "is a file",
    ),
    case(
        "dbg out under a file",
        "dbg {root}/good.toml --out {root}/afile/run",
        both(config_from_run("good.toml"), write("afile", "x")),
        "which is a file",
    ),
    case(
        "dbg out read-only",
        "dbg {root}/good.toml --out {root}/locked/run",
        both(config_from_run("good.toml"), read_only_dir),
        "not writable",
    ),
    case(
        "dbg out is read-only itself",
        "dbg {root}/good.toml --out {root}/locked",
        both(config_from_run("good.toml"), read_only_dir),
        "not writable",
    ),
    # ---- dbg: the config ----------------------------------------------------------------------------
    case(
        "dbg config not UTF-8",
        "dbg {root}/latin1.toml --out {root}/new",
        write("latin1.toml", 'name = "d\xe9j\xe0"\n'.encode("latin-1")),
        "not UTF-8",
    ),
    case(
        "dbg config bad TOML",
        "dbg {root}/bad.toml --out {root}/new",
        write("bad.toml", "models = [\n"),
        "not valid TOML",
    ),
    case(
        "dbg config unknown key",
        "dbg {root}/bad.toml --out {root}/new",
        write("bad.toml", "batchsize = 4\n"),
        "batchsize: unknown key",
    ),
    case("dbg config bad value", "dbg {root}/bad.toml --out {root}/new", write("bad.toml", "n = 0\n"), "n:"),
    case(
        "dbg config unknown backend",
        "dbg {root}/bad.toml --out {root}/new",
        config_from_run("bad.toml", backend="vllm"),
        "unknown backend",
    ),
    case("dbg config missing", "dbg {root}/nope.toml --out {root}/new", nothing, "not found"),
    case("dbg without --out", "dbg {root}/good.toml", config_from_run("good.toml"), "--out"),
    # ---- dbg: models, data, lengths, gold -----------------------------------------------------------
    case(
        "dbg unknown alias",
        "dbg {root}/bad.toml --out {root}/new",
        config_from_run("bad.toml", models=["no-such-alias", "gemma3-270m"]),
        "unknown model alias",
    ),
    case(
        "dbg unknown alias in an existing empty dir",
        "dbg {root}/bad.toml --out {root}/empty",
        both(write("empty/.keep", ""), config_from_run("bad.toml", judges=["no-such-alias"])),
        "unknown model alias",
    ),
    case(
        "dbg missing HF id",
        "dbg {root}/bad.toml --out {root}/new",
        config_from_run("bad.toml", models=["nobody/nonexistent-model-xyz", "nobody/other-xyz"]),
        "not in the Hugging Face cache",
    ),
    case(
        "dbg missing model folder",
        "dbg {root}/bad.toml --out {root}/new",
        config_from_run("bad.toml", models=["./no/such/folder", "./other"]),
        "not found",
    ),
    case(
        "dbg bad dataset task",
        "dbg {root}/bad.toml --out {root}/new",
        both(
            write("data.jsonl", '{"id": "x1", "task": "nosuch", "query": "q"}\n'),
            config_with_data("bad.toml", "data.jsonl"),
        ),
        "unknown task",
    ),
    case(
        "dbg bad dataset JSON",
        "dbg {root}/bad.toml --out {root}/new",
        both(write("data.jsonl", '{"id": "x1", "task": \n'), config_with_data("bad.toml", "data.jsonl")),
        "data.jsonl:1",
    ),
    case(
        "dbg dataset missing",
        "dbg {root}/bad.toml --out {root}/new",
        config_from_run("bad.toml", data="/no/such/items.jsonl"),
        "no such dataset file",
    ),
    case(
        "dbg context too long for generation",
        "dbg {root}/bad.toml --out {root}/new",
        both(write("long.jsonl", LONG_ITEM), config_with_data("bad.toml", "long.jsonl", n=1)),
        "item 'very-long-1': generation prompt + max_new_tokens",
    ),
    case(
        "dbg gold model is one of the pair",
        "dbg {root}/bad.toml --out {root}/new",
        config_from_run("bad.toml", gold=lambda old: old["gold"] | {"models": [old["models"][1]]}),
        "outside the pair",
    ),
    case(
        "dbg HTTP gold judge unreachable",
        "dbg {root}/bad.toml --out {root}/new",
        config_from_run(
            "bad.toml",
            gold=lambda old: (
                old["gold"] | {"http": [{"name": "remote", "base_url": "http://127.0.0.1:9/v1", "model": "m"}]}
            ),
        ),
        "unreachable",
    ),
    case(
        "dbg resumed with another config",
        "dbg {root}/bad.toml --out {root}/run",
        config_from_run("bad.toml", n=2),
        "different config",
    ),
    case(
        "dbg resumed over a corrupt judgments line",
        "dbg {root}/good.toml --out {root}/run",
        both(config_from_run("good.toml"), corrupt_middle_line("judgments.jsonl")),
        "judgments.jsonl:",
    ),
    case(
        "dbg into a run whose config.toml is bad TOML",
        "dbg {root}/good.toml --out {root}/run",
        both(config_from_run("good.toml"), write("run/config.toml", "models = [")),
        "not valid TOML",
    ),
    # ---- demo ---------------------------------------------------------------------------------------
    case("demo out is a file", "demo --n 1 --out {root}/afile", write("afile", "x"), "is a file"),
    case("validate out is a file", "validate --small --out {root}/afile", write("afile", "x"), "is a file"),
    case("demo out under a file", "demo --n 1 --out {root}/afile/demo", write("afile", "x"), "which is a file"),
    case("demo unknown backend", "demo --n 1 --backend vllm --out {root}/new", nothing, "unknown backend"),
    # ---- inspect ------------------------------------------------------------------------------------
    case("inspect without --query", ["inspect", "--response-a", "a", "--response-b", "b"], nothing, "--query"),
    case(
        "inspect unknown alias",
        ["inspect", "-m", "no-such-alias", "-q", "q", "--response-a", "a", "--response-b", "b"],
        nothing,
        "unknown model alias",
    ),
    case(
        "inspect missing HF id",
        ["inspect", "-m", "nobody/nonexistent-model-xyz", "-q", "q", "--response-a", "a", "--response-b", "b"],
        nothing,
        "not in the Hugging Face cache",
    ),
    case(
        "inspect bad --readout",
        ["inspect", "--readout", "all", "-q", "q", "--response-a", "a", "--response-b", "b"],
        nothing,
        "--readout",
    ),
    case(
        "inspect spec not UTF-8",
        ["inspect", "--intervene", "{root}/spec.toml", "-q", "q", "--response-a", "a", "--response-b", "b"],
        write("spec.toml", b'target = "a"\nalpha = 0.0\nname = "\xe9"\n'),
        "not UTF-8",
    ),
    # ---- intervene ----------------------------------------------------------------------------------
    case(
        "intervene spec bad alpha",
        "intervene {run} --spec {root}/spec.toml",
        write("spec.toml", 'target = "self"\nalpha = 2.0\n'),
        "'alpha'",
    ),
    case(
        "intervene --alpha is a mask strength, not the level",
        "intervene {run} --all-layers --alpha 0.01",
        expected="--test-alpha 0.01",
    ),
    case(
        "intervene spec bad target",
        "intervene {run} --spec {root}/spec.toml",
        write("spec.toml", 'target = "mine"\nalpha = 0.0\n'),
        "'target'",
    ),
    case(
        "intervene spec negative layer",
        "intervene {run} --spec {root}/spec.toml",
        write("spec.toml", GOOD_SPEC + "layers = [-1]\n"),
        "negative",
    ),
    case(
        "intervene spec layer out of range",
        "intervene {run} --spec {root}/spec.toml --no-controls",
        write("spec.toml", GOOD_SPEC + "layers = [29]\n"),
        "out of range",
    ),
    case(
        "intervene spec unknown key",
        "intervene {run} --spec {root}/spec.toml",
        write("spec.toml", GOOD_SPEC + "layer = [0]\n"),
        "layer",
    ),
    case(
        "intervene spec not UTF-8",
        "intervene {run} --spec {root}/spec.toml",
        write("spec.toml", b'target = "self"\nalpha = 0.0\nname = "\xe9"\n'),
        "not UTF-8",
    ),
    case("intervene spec missing", "intervene {run} --spec {root}/nope.toml", nothing, "not found"),
    case(
        "intervene run missing",
        "intervene {root}/norun --spec {root}/spec.toml",
        write("spec.toml", GOOD_SPEC),
        "not a finished run",
    ),
    case(
        "intervene run config.toml bad TOML",
        "intervene {run} --spec {root}/spec.toml",
        both(write("spec.toml", GOOD_SPEC), write("run/config.toml", "models = [")),
        "not valid TOML",
    ),
    case(
        "intervene run config.toml not UTF-8",
        "intervene {run} --spec {root}/spec.toml",
        both(write("spec.toml", GOOD_SPEC), write("run/config.toml", b'name = "\xe9"\n')),
        "not UTF-8",
    ),
    case(
        "intervene corrupt judgments line",
        "intervene {run} --spec {root}/spec.toml --no-controls",
        both(write("spec.toml", GOOD_SPEC), corrupt_middle_line("judgments.jsonl")),
        "judgments.jsonl:",
    ),
    case(
        "intervene unknown judge",
        "intervene {run} --spec {root}/spec.toml --judge nobody",
        write("spec.toml", GOOD_SPEC),
        "nobody",
    ),
    case(
        "intervene unknown backend",
        "intervene {run} --spec {root}/spec.toml --backend vllm",
        write("spec.toml", GOOD_SPEC),
        "vllm",
    ),
    # ---- sweep / steer-sweep ------------------------------------------------------------------------
    case(
        "sweep TOML not UTF-8",
        "sweep {root}/sweep.toml",
        write("sweep.toml", b'run = "x"\nname = "\xe9"\n'),
        "not UTF-8",
    ),
    case(
        "sweep unknown key",
        "sweep {root}/sweep.toml",
        sweep_toml("sweep.toml", "alpha = [0.0]\n"),
        "alpha: unknown key",
    ),
    case(
        "sweep run missing",
        "sweep {root}/sweep.toml",
        write("sweep.toml", 'run = "/no/such/run"\n'),
        "not a finished run",
    ),
    case(
        "sweep bad alpha",
        "sweep {root}/sweep.toml",
        sweep_toml("sweep.toml", "alphas = [3.0]\nall_layers = true\n"),
        "alpha",
    ),
    case(
        "sweep band out of range",
        "sweep {root}/sweep.toml",
        sweep_toml("sweep.toml", "[layers]\nbands = [[5, 3]]\n"),
        "'layers'",
    ),
    case(
        "steer-sweep TOML not UTF-8",
        "steer-sweep {root}/steer.toml",
        write("steer.toml", b'run = "x"\nname = "\xe9"\n'),
        "not UTF-8",
    ),
    case(
        "steer-sweep unknown key",
        "steer-sweep {root}/steer.toml",
        sweep_toml("steer.toml", "coefficient = [1.0]\n"),
        "coefficient: unknown key",
    ),
    case(
        "steer-sweep layer out of range",
        "steer-sweep {root}/steer.toml",
        sweep_toml("steer.toml", "layers = [40]\n"),
        "40",
    ),
    # ---- steer --------------------------------------------------------------------------------------
    case("steer run missing", "steer {root}/norun", nothing, "not a finished run"),
    case("steer layer out of range", "steer {run} --layer 40", nothing, "40"),
    case("steer unknown judge", "steer {run} --judge nobody", nothing, "nobody"),
    # ---- attention ----------------------------------------------------------------------------------
    case(
        "attention corrupt judgments line",
        "attention {run}",
        corrupt_middle_line("judgments.jsonl"),
        "judgments.jsonl:",
    ),
    case("attention run missing", "attention {root}/norun", nothing, "not found"),
    case(
        "attention run without judgments",
        "attention {root}/empty",
        write("empty/config.toml", 'models = ["a", "b"]\n'),
        "has no judgments",
    ),
    # ---- compare ------------------------------------------------------------------------------------
    case("compare run missing", "compare {run} {root}/norun", nothing, "not a finished run"),
    case(
        "compare by a key that does not differ",
        "compare {run} {run} --by seed --out {root}/cmp",
        nothing,
        "not a key that differs",
    ),
    case("compare out is a file", "compare {run} --out {root}/taken", write("taken", "x"), "taken"),
    # ---- restyle ------------------------------------------------------------------------------------
    case("restyle unknown style", "restyle {run} --style shouty --out {root}/new", nothing, "unknown style"),
    case(
        "restyle prompted style without a rewriter",
        "restyle {run} --style humorous --out {root}/new",
        nothing,
        "is prompted",
    ),
    case(
        "restyle plain with a rewriter",
        "restyle {run} --rewriter someone --out {root}/new",
        nothing,
        "takes no --rewriter",
    ),
    case("restyle into the source run", "restyle {run} --out {run}", nothing, "is the source run"),
    case("restyle run missing", "restyle {root}/norun --out {root}/new", nothing, "not a finished run"),
    case(
        "restyle unknown embedder",
        "restyle {run} --embedder no-such-alias --out {root}/new",
        nothing,
        "unknown model alias",
    ),
    case(
        "restyle into a folder of the user's files",
        "restyle {run} --out {root}/mine",
        user_folder("mine"),
        "did not write",
    ),
    # ---- metrics, models ----------------------------------------------------------------------------
    case("metrics run on a missing dir", "metrics run {root}/norun", nothing, "norun"),
    case(
        "metrics run corrupt judgments line",
        "metrics run {run}",
        corrupt_middle_line("judgments.jsonl"),
        "judgments.jsonl:",
    ),
    case("metrics chen2025 missing file", "metrics chen2025 {root}/nope.jsonl", nothing, "nope.jsonl"),
    case(
        "metrics recognition unknown judge", "metrics recognition {run} --judge no-such-model", nothing, "no-such-model"
    ),
    case("metrics run unknown salieri pool", "metrics run {run} --salieri-pool everything", nothing, "SALIERI pool"),
    case("metrics pls bad file", "metrics pls {root}/bad.jsonl", write("bad.jsonl", "{not json\n"), "bad.jsonl"),
    case("models unknown flag", "models --bogus", nothing, "--bogus"),
    case(
        "metrics salieri resolution 0",
        "metrics salieri {root}/s.jsonl --resolution 0",
        write(
            "s.jsonl",
            "".join(
                json.dumps(row) + "\n"
                for i in range(3)
                for row in (
                    {"judge": "t", "item_id": f"q{i}", "source": "self", "judge_score": 4, "reference_score": 3},
                    {
                        "judge": "t",
                        "item_id": f"q{i}",
                        "source": "pool",
                        "judge_score": 3,
                        "reference_score": 3,
                        "response_id": "p",
                    },
                )
            )
            + json.dumps(
                {
                    "judge": "t",
                    "item_id": "n1",
                    "source": "norm",
                    "judge_score": 4,
                    "reference_score": 3,
                    "model": "gpt",
                }
            )
            + "\n",
        ),
        "resolution",
    ),
    # ---- a count of 0 where 0 means nothing ---------------------------------------------------------
    case("demo --n 0", "demo --n 0 --out {root}/new", nothing, "--n"),
    case(
        "dbg config with no judges",
        "dbg {root}/bad.toml --out {root}/new",
        config_from_run("bad.toml", judges=[]),
        "judges",
    ),
    case(
        "sweep with no targets",
        "sweep {root}/sweep.toml",
        sweep_toml("sweep.toml", "targets = []\nall_layers = true\n"),
        "targets",
    ),
    case(
        "sweep with no judges",
        "sweep {root}/sweep.toml",
        sweep_toml("sweep.toml", "judges = []\nall_layers = true\n"),
        "judges",
    ),
    case("sweep top-0 heads", "sweep {root}/sweep.toml", sweep_toml("sweep.toml", "[heads]\ntop_k = [0]\n"), "top_k"),
    case(
        "steer-sweep with no layers",
        "steer-sweep {root}/steer.toml",
        sweep_toml("steer.toml", "layers = []\n"),
        "layers",
    ),
    case("steer with an empty judge", ["steer", "{run}", "--judge", ""], nothing, "judge ''"),
    # ---- output folders that are not runs -----------------------------------------------------------
    case(
        "dbg into a folder of the user's files",
        "dbg {root}/good.toml --out {root}/mine",
        both(config_from_run("good.toml"), user_folder("mine")),
        "did not write",
    ),
    case(
        "dbg into the folder that holds its config and the user's notes",
        "dbg {root}/mine/config.toml --out {root}/mine",
        both(
            lambda root: (root / "mine").mkdir(), config_from_run("mine/config.toml"), write("mine/notes.txt", "mine")
        ),
        "did not write",
    ),
    case(
        "dbg into the filesystem root",
        "dbg {root}/bad.toml --out /",
        config_from_run("bad.toml", models=["no-such-alias", "gemma3-270m"]),
        "filesystem root",
    ),
    case(
        "dbg into the home directory",
        ["dbg", "{root}/bad.toml", "--out", str(Path.home())],
        config_from_run("bad.toml", models=["no-such-alias", "gemma3-270m"]),
        "home directory",
    ),
    case(
        "demo into a folder of the user's files",
        "demo --n 1 --backend vllm --out {root}/mine",
        user_folder("mine"),
        "did not write",
    ),
    case(
        "organism evaluate with an unknown judge",
        "organism evaluate no-such-judge --out {root}/new",
        nothing,
        "unknown model alias",
    ),
    case(
        "organism evaluate into a folder of the user's files",
        "organism evaluate no-such-judge --out {root}/mine",
        user_folder("mine"),
        "did not write",
    ),
    # ---- organism configs ---------------------------------------------------------------------------
    case(
        "organism own author not an author",
        "organism train {root}/org.toml --out {root}/org",
        small_organism("org.toml", share=1.0, own_author="someone-else"),
        "own_author",
    ),
    case(
        "organism share as a string",
        "organism train {root}/org.toml --out {root}/org",
        small_organism("org.toml", share="0.5"),
        "share",
    ),
    case(
        "dbg with one model twice",
        "dbg {root}/bad.toml --out {root}/new",
        config_from_run("bad.toml", models=lambda old: [old["models"][0]] * 2),
        "twice",
    ),
    case("dbg n as a string", "dbg {root}/bad.toml --out {root}/new", config_from_run("bad.toml", n="3"), "n:"),
    # ---- broken models and adapters -----------------------------------------------------------------
    case(
        "inspect a model with NaN weights",
        ["inspect", "-m", "{root}/nan", "-q", "q", "--response-a", "a", "--response-b", "b", "--json"],
        model_copy("nan", nan_weights),
        "NaN or infinity",
    ),
    case(
        "dbg with a NaN judge",
        "dbg {root}/bad.toml --out {root}/new",
        both(
            model_copy("nan", nan_weights),
            lambda root: config_from_run("bad.toml", models=[run_models(root)[0], str(root / "nan")])(root),
        ),
        "NaN or infinity",
    ),
    case(
        "inspect an adapter with NaN weights",
        ["inspect", "-m", "{root}/adapter", "-q", "q", "--response-a", "a", "--response-b", "b", "--json"],
        nan_adapter,
        "NaN or infinity",
    ),
    case(
        "inspect a model folder without a tokenizer",
        ["inspect", "-m", "{root}/notok", "-q", "q", "--response-a", "a", "--response-b", "b"],
        model_copy("notok", drop_tokenizer),
        "no tokenizer",
    ),
    case(
        "dbg with a model folder without a tokenizer",
        "dbg {root}/bad.toml --out {root}/new",
        both(
            model_copy("notok", drop_tokenizer),
            lambda root: config_from_run("bad.toml", models=[run_models(root)[0], str(root / "notok")])(root),
        ),
        "no tokenizer",
    ),
    case(
        "dbg with a judge whose attention cannot be hooked",
        "dbg {root}/bad.toml --out {root}/new",
        both(
            model_copy("gpt2", as_gpt2),
            lambda root: config_from_run("bad.toml", models=[run_models(root)[0], str(root / "gpt2")])(root),
        ),
        "cannot judge",
    ),
    case(
        "inspect an adapter whose adapter_config.json is not JSON",
        ["inspect", "-m", "{root}/adapter", "-q", "q", "--response-a", "a", "--response-b", "b"],
        bad_adapter_config,
        "not valid JSON",
    ),
    case(
        "dbg with an empty imported answer",
        "dbg {root}/bad.toml --out {root}/new",
        both(
            answers_file("answers.jsonl", "  "),
            lambda root: config_from_run(
                "bad.toml",
                models=[run_models(root)[0], "theirs"],
                judges=[run_models(root)[0]],
                imports={"theirs": str(root / "answers.jsonl")},
            )(root),
        ),
        "empty",
    ),
    case(
        "dbg with an import named like a built-in alias",
        "dbg {root}/bad.toml --out {root}/new",
        both(
            answers_file("answers.jsonl", "An answer."),
            lambda root: config_from_run(
                "bad.toml",
                models=[run_models(root)[0], "gemma3-270m"],
                judges=[run_models(root)[0]],
                imports={"gemma3-270m": str(root / "answers.jsonl")},
            )(root),
        ),
        "built-in model alias",
    ),
]


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under `root` (folders as None) with its bytes."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def prepared_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> Path:
    """One finished tiny run (two 2-layer Llamas, attention on, reference gold), copied by every case."""
    from transformers import LlamaForCausalLM

    from interp.config import RunConfig
    from interp.run.pipeline import run_dbg
    from tests.helpers.models import save_tiny, tiny_llama_config

    root = tmp_path_factory.mktemp("prepared")
    other = save_tiny(
        root / "models_b", tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=7
    )
    config = RunConfig(
        name="bad-inputs",
        n=3,
        models=(str(tiny_llama_dir), str(other)),
        max_new_tokens=4,
        max_words=10,
        batch_size=4,
        n_boot=20,
    )
    run_dbg(config, root / "run", progress=False)
    return root / "run"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory, prepared_run, forked_cli) -> dict[str, tuple]:
    """Run every case (three at a time, each forked from one interpreter that imported the CLI once:
    `tests.helpers.forked_cli`); per case: exit code, stdout, stderr, before, after."""
    base = tmp_path_factory.mktemp("cases")
    prepared: dict[str, tuple] = {}
    for index, c in enumerate(CASES):
        root = base / f"case{index:02d}"
        shutil.copytree(prepared_run, root / "run")
        c.setup(root)
        args = [a.replace("{run}", str(root / "run")).replace("{root}", str(root)) for a in c.args]
        prepared[c.id] = (root, args, snapshot(root))
    names = list(prepared)
    try:
        ran = forked_cli.run([(prepared[name][1], REPO) for name in names], parallel=3)
    finally:
        for root, _, _ in prepared.values():
            unlock(root)
    return {
        name: (code, stdout, stderr, prepared[name][2], snapshot(prepared[name][0]))
        for name, (code, stdout, stderr) in zip(names, ran, strict=False)
    }


def test_the_catalogue_is_large_and_covers_every_command():
    assert len(CASES) >= 40 and len({c.id for c in CASES}) == len(CASES)
    commands = {c.args[0] for c in CASES}
    assert commands >= {
        "dbg",
        "demo",
        "inspect",
        "intervene",
        "sweep",
        "steer",
        "steer-sweep",
        "attention",
        "compare",
        "metrics",
        "models",
        "restyle",
    }


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_error_line_exit_2_and_leaves_every_file(outcomes, case):
    code, stdout, stderr, before, after = outcomes[case.id]
    lines = stderr.splitlines()
    assert "Traceback" not in stderr, stderr[-3000:]
    assert code == 2, f"exit code {code}; stderr:\n{stderr[-3000:]}"
    assert len(lines) == 1 and lines[0].startswith("error: "), f"stderr should be one 'error:' line:\n{stderr[-3000:]}"
    assert case.expected in lines[0], lines[0]
    assert sorted(after) == sorted(before), (
        f"files changed: added {sorted(set(after) - set(before))}, removed {sorted(set(before) - set(after))}"
    )
    changed = [name for name in before if before[name] != after[name]]
    assert not changed, f"bytes changed: {changed}"


# ---- names that become paths, and output folders (dedicated tests) ------------------------------------

HOSTILE_NAMES = [
    "../",
    "../../../esc",
    "/etc/passwd",
    "/",
    "a\x00b",
    "x" * 300,
    "名前 ünïcødé",
    "..",
    ".hidden",
    "",
    "a/../../b",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=lambda n: repr(n[:20]))
def test_every_name_that_becomes_a_path_stays_inside_its_folder_as_a_visible_label(tmp_path, name):
    from interp.run.store import RunDir
    from interp.storage import LABEL_BYTES, path_label

    paths = RunDir(tmp_path / "run")
    made = {  # every place a user-given name (sweep, steering sweep, intervention, judge, organism) becomes a path
        paths.root / "interventions": paths.intervention(name, "k"),
        paths.root / "sweeps": paths.sweep(name, "k"),
        paths.steering / "sweeps": paths.steering_sweep(name, "k"),
        paths.attention_dir: paths.attention(name),
        paths.attention_dir / ".": paths.attention_index(name),
        paths.attention_dir / "..": paths.attention_shards(name),
        tmp_path / "organisms": tmp_path / "organisms" / path_label(name),
    }
    for parent, path in made.items():
        parent = parent.resolve() if parent.name not in (".", "..") else paths.attention_dir.resolve()
        assert path.resolve().parent == parent, (name, path)
        assert not path.name.startswith(".") and "\x00" not in path.name and "/" not in path.name
        assert len(path_label(name).encode()) <= LABEL_BYTES
    if "ü" in name:
        assert path_label(name) == "名前_ünïcødé"  # letters of any script stay readable
    if name == "../../../esc":
        assert path_label(name) == "esc"


def _outside_run(root: Path, run: Path) -> dict:
    inside = str(run.relative_to(root))
    return {k: v for k, v in snapshot(root).items() if k != inside and not k.startswith(inside + "/")}


def test_a_sweep_and_a_steering_sweep_whose_name_escapes_write_only_inside_their_run(
    tmp_path, prepared_run, forked_cli
):
    root = tmp_path / "a" / "b" / "c"
    shutil.copytree(prepared_run, root / "run")
    (root / "sweep.toml").write_text(f'run = "{root / "run"}"\nname = "../../../esc"\nall_layers = true\n')
    (root / "steer.toml").write_text(
        f'run = "{root / "run"}"\nname = "../../../esc"\nlayers = [0]\ncoefficients = [1.0]\nproject_out = false\n'
    )
    before = _outside_run(tmp_path, root / "run")
    for command in (["sweep", str(root / "sweep.toml")], ["steer-sweep", str(root / "steer.toml")]):
        ((code, _, stderr),) = forked_cli.run([(command, REPO)], parallel=1)
        assert code == 0, stderr[-3000:]
    assert _outside_run(tmp_path, root / "run") == before  # nothing written beside the run, nor three levels up
    folders = sorted(str(p.parent.relative_to(root / "run")) for p in (root / "run").rglob("results.csv"))
    assert (
        len(folders) == 2 and folders[0].startswith("steering/sweeps/esc-") and folders[1].startswith("sweeps/esc-")
    ), folders


def test_dbg_writes_into_a_folder_of_other_files_only_with_overwrite(tmp_path, prepared_run, forked_cli):
    (tmp_path / "good.toml").write_text((prepared_run / "config.toml").read_text())
    user_folder("mine")(tmp_path)
    report = (tmp_path / "mine" / "report.html").read_bytes()
    ((code, _, stderr),) = forked_cli.run(
        [(["dbg", str(tmp_path / "good.toml"), "--out", str(tmp_path / "mine")], REPO)], parallel=1
    )
    assert code == 2 and "--overwrite" in stderr and (tmp_path / "mine" / "report.html").read_bytes() == report
    ((code, _, stderr),) = forked_cli.run(
        [(["dbg", str(tmp_path / "good.toml"), "--out", str(tmp_path / "mine"), "--overwrite"], REPO)], parallel=1
    )
    assert code == 0, stderr[-3000:]
    assert (tmp_path / "mine" / "report.html").read_bytes() != report and (
        tmp_path / "mine" / ".interp-output"
    ).is_file()
    # now a run of its own: resumed without the flag
    ((code, _, stderr),) = forked_cli.run(
        [(["dbg", str(tmp_path / "good.toml"), "--out", str(tmp_path / "mine")], REPO)], parallel=1
    )
    assert code == 0, stderr[-3000:]


def test_check_output_dir(tmp_path):
    from interp.errors import InterpError
    from interp.storage import check_output_dir, claim_output_dir

    user_folder("mine")(tmp_path)
    with pytest.raises(InterpError, match="did not write"):
        check_output_dir(tmp_path / "mine")
    check_output_dir(tmp_path / "mine", overwrite=True)
    with pytest.raises(
        InterpError, match="did not write"
    ):  # a command that replaces the whole folder never takes a user's
        check_output_dir(tmp_path / "mine", overwrite=True, replace=True)
    (tmp_path / "kept" / ".gitkeep").parent.mkdir()
    (tmp_path / "kept" / ".gitkeep").write_text("")
    check_output_dir(tmp_path / "kept")  # placeholders only: empty
    claim_output_dir(tmp_path / "new")
    (tmp_path / "new" / "table.csv").write_text("x")
    check_output_dir(tmp_path / "new")  # the toolkit's folder (its marker)
    with pytest.raises(InterpError, match="--overwrite"):
        check_output_dir(tmp_path / "new", replace=True)
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "manifest.json").write_text("{}")
    check_output_dir(tmp_path / "adapter", markers=("manifest.json",), overwrite=True, replace=True)
    for where, text in (
        ("/", "filesystem root"),
        (str(Path.home()), "home directory"),
        (str(Path.home().parent), "above your home"),
    ):
        if Path(where).resolve() == Path("/") and text != "filesystem root":
            continue
        with pytest.raises(InterpError, match=text):
            check_output_dir(Path(where), overwrite=True)
