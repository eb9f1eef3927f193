"""The results payload is one typed object: `--json` prints, and the tables show, what the plain dict printed and
showed before it was typed (tests/fixtures/terminal/, written by that code from `tests.helpers.payloads`), and the
printers read the rows' attributes."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from interp.report.judging_modes import mode_payload
from interp.report.payload import CausalRow, DbgRow, ResultsPayload, SweepTop, TimingsRecord
from interp.report.terminal import payload_json, print_results, results_payload
from interp.results import codec
from interp.results.studies import TruthRow
from interp.results.summary import RunSummary
from tests.helpers.payloads import CAUSAL, FILES, SUMMARY, SWEEP, TIMINGS, TRUTH

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "terminal"


def _full_payload() -> ResultsPayload:
    """Every part set, as `interp dbg`, `intervene`, `sweep` and `validate` put them together."""
    summary = codec.parse(RunSummary, SUMMARY, "summary")
    files = {name: Path(path) for name, path in FILES.items()}
    payload = results_payload(summary, causal=CAUSAL, n_items=12, sweep=SWEEP, files=files)
    payload = payload.merged(mode_payload(summary)).merged(ResultsPayload.model_validate({"timings": TIMINGS}))
    payload.truth_table = [TruthRow.model_validate(row) for row in TRUTH]  # as validate's result holds them
    return payload


def _drawn(payload: ResultsPayload) -> str:
    console = Console(record=True, width=220, file=io.StringIO())
    print_results(payload, console)
    return console.export_text()


def test_json_and_tables_are_what_the_plain_payload_gave():
    payload = _full_payload()
    assert payload_json(payload) + "\n" == (FIXTURES / "payload.json").read_text()
    assert _drawn(payload) == (FIXTURES / "payload.txt").read_text()


def test_a_part_not_set_is_not_printed_and_merging_keeps_both_sides():
    payload = results_payload(causal=CAUSAL, n_items=3)
    assert list(json.loads(payload_json(payload))) == ["causal"]
    timed = payload.merged(ResultsPayload(timings=TimingsRecord(steps={"a": 1.0}, total_s=1.0)))
    assert list(json.loads(payload_json(timed))) == ["causal", "timings"]
    assert "peak_gpu_gb" not in json.loads(payload_json(timed))["timings"]  # unset: left out, as before
    assert list(json.loads(payload_json(payload))) == ["causal"]  # merging copies


def test_the_parts_are_typed_rows_and_the_printers_read_their_attributes():
    payload = _full_payload()
    assert all(isinstance(r, DbgRow) for r in payload.dbg) and all(isinstance(r, CausalRow) for r in payload.causal)
    assert isinstance(payload.sweep, SweepTop) and payload.correctness.authors["author-a"].correct == 7
    payload.dbg[0].judge = "renamed-judge"
    payload.causal[0].verdict = "a verdict set on the row"
    text = _drawn(payload)
    assert "renamed-judge (own: author-a)" in text and "author-a (own" not in text
    assert "author-a: a verdict set on the row" in text
