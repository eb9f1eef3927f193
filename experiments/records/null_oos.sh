#!/usr/bin/env bash
# Plan 3, amendment 9: `route_fpr` out of sample on new null seeds. For each seed S given:
#   1. train the null recipe with seed S (one thread; two seeds side by side on a 2-core machine),
#   2. judge it in its own copy of the bench's run (BENCH_RUN: the 150 held-out items, the six shipped nulls'
#      judgments and attention reused, so only the new null is judged; its automatic controls are those six),
#   3. its gap gate from the clean verdicts (null_gap.py) -> OUT/gateS.json,
#   4. with LADDER=1, its full `interp explain` ladder (plan 3's settings) -> OUT/explainS.json.
# Every step is skipped when its output exists, so a killed run resumes. Then:
#   python experiments/records/null_oos_figures.py OUT
# usage: BENCH_RUN=runs/mech-h4/run OUT=runs/null-oos [LADDER=1] bash experiments/records/null_oos.sh 6 7 ...
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${BENCH_RUN:?set BENCH_RUN to the bench run folder}" "${OUT:=runs/null-oos}"
PY=${PYTHON:-.venv/bin/python}
RECIPE=experiments/organisms/smollm2-135m-judge.toml
CONFIG=$(dirname "$BENCH_RUN")/config.toml
mkdir -p "$OUT/organisms"
for S in "$@"; do
  M=$PWD/$OUT/organisms/null-seed$S
  [ -f "$M/manifest.json" ] || "$PY" -m interp.cli organism train $RECIPE --seed "$S" --out "$M" --device cpu
  R=$OUT/run$S
  if [ ! -f "$R/summary.json" ]; then
    mkdir -p "$R/attention"
    cp "$BENCH_RUN/items.jsonl" "$BENCH_RUN/responses.jsonl" "$R/"
    grep '"judge": "smollm2-135m-judge' "$BENCH_RUN/judgments.jsonl" > "$R/judgments.jsonl"
    cp -r "$BENCH_RUN"/attention/smollm2-135m-judge* "$R/attention/"
    { grep -v '^judges' "$CONFIG"; echo "judges = [\"$M\"$(printf ', "%s"' smollm2-135m-judge smollm2-135m-judge-seed{1..5})]"; } \
      > "$OUT/config$S.toml"
    "$PY" -m interp.cli dbg "$OUT/config$S.toml" --out "$R" --json --overwrite > "$OUT/dbg$S.json"
  fi
  [ -f "$OUT/gate$S.json" ] || "$PY" experiments/records/null_gap.py "$R" --judge "$M" --json > "$OUT/gate$S.json"
  if [ "${LADDER:-0}" = 1 ] && [ ! -f "$OUT/explain$S.json" ]; then
    "$PY" -m interp.cli explain "$R" --judge "$M" --top-k 3 --mlp-k 2 --selection-share 0.4 --split-seed 0 \
      --random-sets 1 --json > "$OUT/explain$S.json.part" && mv "$OUT/explain$S.json.part" "$OUT/explain$S.json"
  fi
done
