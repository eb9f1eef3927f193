"""Every JSON and JSONL file a run writes carries `schema_version` (issue 82 item 4): a JSON file at its top
level, a JSONL file in every record (the field-per-record form, so an append-only file resumed by a later version
stays readable record by record); items, responses, gold and judgments are read through the codec, which migrates
version 0 (tests/fixtures/old_run) and refuses a later version in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import interp
from interp.errors import InterpError
from interp.results import codec
from interp.run.store import RunDir, read_run
from tests.helpers.runs import small_run_config

OLD_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "old_run"


def _unversioned(root: Path) -> list[str]:
    """Every .json / .jsonl file under `root` whose top level (JSON) or any record (JSONL) lacks schema_version."""
    missing = []
    for path in sorted([*root.rglob("*.json"), *root.rglob("*.jsonl")]):
        if path.suffix == ".json":
            data = json.loads(path.read_text())
            if not (isinstance(data, dict) and isinstance(data.get("schema_version"), int)):
                missing.append(str(path.relative_to(root)))
            continue
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if not lines or any(not isinstance(r.get("schema_version"), int) for r in lines):
            missing.append(str(path.relative_to(root)))
    return missing


def test_every_file_of_a_fresh_run_is_versioned(tmp_path, tiny_llama_dir):
    judge = str(tiny_llama_dir)
    run = interp.dbg(small_run_config(tmp_path, judge, attention="final"), tmp_path / "run", progress=False)
    interp.intervene(run, target="self", alpha=0.0, device="cpu", progress=False)
    interp.sweep({"run": str(run.path), "name": "v", "targets": ["self"], "alphas": [0.5], "all_layers": True})
    root = run.path
    written = {p.name for p in [*root.rglob("*.json"), *root.rglob("*.jsonl")]}
    assert {"items.jsonl", "responses.jsonl", "gold.jsonl", "judgments.jsonl", "variant.json", "result.json"} <= written
    assert _unversioned(root) == []
    # and it reads back as it was written: the field is the codec's, never a record's
    again = read_run(root)
    assert [item.id for item in again.items] == [item.id for item in run.run.items]
    assert all("schema_version" not in r.to_dict() for r in again.dir.read_judgments())


def test_old_record_files_read_and_a_later_version_is_refused(tmp_path):
    assert RunDir(OLD_RUN).read_gold() == {"reference": {"item-00": 0.1, "item-01": 0.5, "item-02": 0.9}}
    copy = tmp_path / "old_run"
    shutil.copytree(OLD_RUN, copy)
    gold = copy / "gold.jsonl"
    codec.append_records(gold, [{"judge": "reference", "item_id": "item-03", "p_first_model": 0.2}])
    assert RunDir(copy).read_gold()["reference"] == {"item-00": 0.1, "item-01": 0.5, "item-02": 0.9, "item-03": 0.2}
    assert json.loads(gold.read_text().splitlines()[-1])["schema_version"] == codec.RECORD_VERSION
    with gold.open("a") as handle:
        handle.write(
            json.dumps({"schema_version": 99, "judge": "reference", "item_id": "x", "p_first_model": 1}) + "\n"
        )
    with pytest.raises(InterpError, match="gold.jsonl:5: a record of schema_version 99, written by a newer interp"):
        RunDir(copy).read_gold()
