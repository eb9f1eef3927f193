"""Helpers shared by the tests (a package, imported as `tests.helpers...`, never `from conftest`).

A test runs `interp` command lines through the `forked_cli` session fixture (`tests.helpers.forked_cli`): one
process imports the toolkit once and forks a child per command line.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
