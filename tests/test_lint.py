"""The repository's habits, checked: `ruff check` passes with pyproject's rules, `ruff format --check` finds
every file formatted (line length 120), and the tracked tree holds no symbolic link (one module, one path:
`interp.hooks` is the hooks/ folder, mapped without a link)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO


def _ruff() -> str | None:
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.is_file() else shutil.which("ruff")


def test_ruff_check_passes():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (it is in the test extra: bash setup.sh --test)")
    result = subprocess.run([ruff, "check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_ruff_check_can_fail(tmp_path):
    """The rules are on: an unused import, an undefined name and a comment longer than 120 characters are reported
    under pyproject's config."""
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed")
    bad = tmp_path / "bad.py"
    bad.write_text('"""A module."""\nimport os\n\n\ndef f():\n    return undefined_name  # ' + "x" * 100 + "\n")
    result = subprocess.run(
        [ruff, "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1 and all(code in result.stdout for code in ("F401", "F821", "E501"))


def test_ruff_format_check_passes():
    """Every Python file is as `ruff format` writes it, under pyproject's [tool.ruff] and [tool.ruff.format]."""
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (it is in the test extra: bash setup.sh --test)")
    result = subprocess.run(
        [ruff, "format", "--check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_ruff_format_check_can_fail(tmp_path):
    """The format check is on: a badly laid out file (single quotes, cramped commas, a call longer than 120 characters)
    is reported, and left as it was."""
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed")
    bad = tmp_path / "bad.py"
    text = '"""A module."""\nx = {\'a\':1,\'b\' :2}\n\n\ndef f():\n    return g(' + ", ".join(["argument"] * 13) + ")\n"
    bad.write_text(text)
    result = subprocess.run(
        [ruff, "format", "--check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1 and "bad.py" in result.stdout + result.stderr
    assert bad.read_text() == text


def test_no_symlink_is_tracked():
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    listing = subprocess.run(
        ["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    ).stdout
    links = [line.split("\t", 1)[1] for line in listing.splitlines() if line.startswith("120000 ")]
    assert not links, f"symbolic links in the tracked tree: {links}"
