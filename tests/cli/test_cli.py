"""The command line: bad input is one clear line and exit 2; `models --json`; `inspect --json` equals the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interp.core.judge import (
    inspect_judgment,
)
from tests.helpers.models import write_gguf
from tests.helpers.reference import (
    ANSWER_A,
    ANSWER_B,
    QUERY,
    TOL,
    assert_close,
    check_inspect_shape,
    slow,
)

# ---- the command line ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bad_input_runs(tmp_path_factory, tiny_llama_dir, tiny_llama_short_context_dir, forked_cli):
    """Run every bad-input case through the CLI (each one a forked process of its own); gather results.

    Each case gets its own empty INTERP_CACHE so "nothing cached half-way" can be checked; none of them
    needs a packaged model.
    """
    root = tmp_path_factory.mktemp("bad-input")
    bad_gguf = write_gguf(
        root / "tiny-bert-unknown.gguf",
        "bert-unknown",
        lambda writer: (writer.add_block_count(2), writer.add_context_length(64)),
    )
    assert not Path("/tmp/nope.gguf").exists()
    pair = ["--query", "What is 2+2?", "--response-b", "4"]
    cases = {
        "unknown alias": (["--model", "no-such-alias", "--response-a", "Four.", *pair], "unknown model alias"),
        "missing folder": (["--model", "./nope", "--response-a", "Four.", *pair], "not found"),
        "missing gguf": (["--model", "/tmp/nope.gguf", "--response-a", "Four.", *pair], "not found"),
        "unsupported gguf": (["--model", str(bad_gguf), "--response-a", "Four.", *pair], "bert-unknown"),
        "empty response": (["--model", str(tiny_llama_dir), "--response-a", "", *pair], "empty"),
        "too long": (
            ["--model", str(tiny_llama_short_context_dir), "--response-a", "Four. " * 200, *pair],
            "context",
        ),
    }
    jobs, caches = [], {}
    for case, (args, _) in cases.items():
        caches[case] = cache = root / case.replace(" ", "-") / "cache"
        cache.mkdir(parents=True)
        # run in the cache's parent, where ./nope certainly does not exist
        jobs.append((["inspect", *args], cache.parent, {"INTERP_CACHE": str(cache)}))
    ran = forked_cli.run(jobs, parallel=2)
    results = {
        case: (code, stdout, stderr, caches[case], cases[case][1])
        for case, (code, stdout, stderr) in zip(cases, ran, strict=False)
    }
    return results


@pytest.mark.parametrize(
    "case", ["unknown alias", "missing folder", "missing gguf", "unsupported gguf", "empty response", "too long"]
)
def test_cli_bad_input_is_one_clear_line_and_exit_2(bad_input_runs, case):
    code, stdout, stderr, cache, expected = bad_input_runs[case]
    assert code == 2, f"exit code {code}; stderr:\n{stderr}"
    lines = stderr.splitlines()
    assert len(lines) == 1, f"stderr should be one line, got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("error: ") and expected in lines[0], lines[0]
    assert "Traceback" not in stderr and stdout == ""
    leftovers = [p for p in cache.rglob("*") if p.is_file()]
    assert leftovers == [], f"cached half-way: {leftovers}"
    dequantized = cache / "dequantized"
    assert not dequantized.exists() or list(dequantized.iterdir()) == []


@slow
def test_cli_models_json_lists_the_aliases_with_their_placement(forked_cli):
    from interp.core.placement import resolve_placement

    result = forked_cli("models", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["alias"]: row for row in json.loads(result.stdout)}
    assert set(rows) == {
        "smollm2-135m-instruct",
        "gemma3-270m",
        "smollm2-135m-judge",
        "smollm2-135m-selfpref",
        "smollm2-135m-selfpref-heads-seed4",
        "smollm2-135m-selfpref-attn-seed3",
        *(f"smollm2-135m-judge-seed{s}" for s in range(1, 6)),
    }
    here = resolve_placement()  # cpu/float32 on a machine without a GPU
    assert all((row["device"], row["dtype"]) == (here.device, here.dtype) for row in rows.values())
    assert (
        rows["smollm2-135m-instruct"]["kind"],
        rows["smollm2-135m-instruct"]["layers"],
        rows["smollm2-135m-instruct"]["heads"],
    ) == ("post", 30, 9)
    assert (rows["gemma3-270m"]["kind"], rows["gemma3-270m"]["layers"], rows["gemma3-270m"]["heads"]) == ("pre", 18, 4)
    assert all(row["source"] for row in rows.values())


@slow
def test_cli_inspect_json_matches_python_api(backends, forked_cli):
    bset = backends("smollm2")
    model = bset.model
    result = forked_cli(
        "inspect",
        "--model",
        "smollm2-135m-instruct",
        "--backend",
        "nnsight",
        "--query",
        QUERY,
        "--response-a",
        ANSWER_A,
        "--response-b",
        ANSWER_B,
        "--json",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    check_inspect_shape(data, model)
    assert len(data["layers"]) == 30 and len(data["layers"][0]["heads_mass_a"]) == 9
    expected = inspect_judgment(bset["hf"], QUERY, ANSWER_A, ANSWER_B)
    assert data["spans"] == expected["spans"]
    assert abs(data["p_a"] - expected["p_a"]) <= TOL
    for got, want in zip(data["layers"], expected["layers"], strict=False):
        assert abs(got["mass_a"] - want["mass_a"]) <= TOL and abs(got["mass_b"] - want["mass_b"]) <= TOL
        assert_close(got["heads_mass_b"], want["heads_mass_b"], TOL, "CLI heads_mass_b")
