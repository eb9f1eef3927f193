"""Every JSON file a run writes carries `schema_version` and reads into its model through the codec; the studies'
files written before their schema version (tests/fixtures/old_studies) and the shipped organisms' manifests still
read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interp.errors import InterpError
from interp.results import codec
from interp.results.run_files import AdapterFingerprints, AttentionIndex, GoldChecks, JudgePrompts, RunIdentity
from interp.results.studies import OrganismMetrics, RestyleResult, ValidationResult

OLD = Path(__file__).resolve().parents[1] / "fixtures" / "old_studies"

# file name -> the codec's reader of it (given the file's path)
READERS = {
    "summary.json": codec.read_summary,
    "result.json": lambda path: codec.read_causal(path.parent),
    "variant.json": lambda path: codec.read_variant(path.parent),
    "explain.json": lambda path: codec.read_explanation(path.parent),
    "validation.json": lambda path: codec.read_validation(path.parent),
    "restyle.json": lambda path: codec.read_restyle(path.parent),
    "table.json": codec.read_steering_table,
    "attention_summary.json": codec.read_attention_summary,
    "organism_metrics.json": lambda path: codec.read_organism_metrics(path.parent),
    "identity.json": lambda path: codec.read_file(path, RunIdentity),
    "adapters.json": lambda path: codec.read_file(path, AdapterFingerprints),
    "prompts.json": lambda path: codec.read_file(path, JudgePrompts),
    "gold_checks.json": lambda path: codec.read_file(path, GoldChecks),
}


def reader(path: Path):
    """The codec's reader of a file a run writes: by its name, or an attention store's index by its folder."""
    if path.parent.name in ("attention", "attention_pointwise"):
        return lambda path: codec.read_file(path, AttentionIndex)
    assert path.name in READERS, f"{path}: a JSON file the codec has no model for"
    return READERS[path.name]


def check_every_json_file(root: Path) -> list[str]:
    """The result files under `root` (checked: `schema_version` written, the codec reads them); returns their
    names. A JSON file of no known kind fails."""
    seen = []
    for path in sorted(Path(root).rglob("*.json")):
        data = json.loads(path.read_text())
        assert isinstance(data, dict) and data.get("schema_version") == codec.SCHEMA_VERSION, path
        reader(path)(path)
        seen.append(path.name)
    return seen


def test_an_older_organism_metrics_file_reads_with_its_judges_under_judges():
    metrics = codec.read_organism_metrics(OLD)
    assert isinstance(metrics, OrganismMetrics) and metrics.schema_version == codec.SCHEMA_VERSION
    assert metrics.judges["smollm2-135m-judge"]["dbg_hard"] == 0.1


def test_a_study_file_is_written_with_its_schema_version_and_refuses_unknown_fields(tmp_path):
    codec.write_validation(tmp_path, {"run_dir": "r", "plan": {"n_boot": 10}, "truth_table": [{"agrees": True}]})
    written = json.loads((tmp_path / "validation.json").read_text())
    assert written["schema_version"] == codec.SCHEMA_VERSION and written["plan"] == {"n_boot": 10}
    assert isinstance(codec.read_validation(tmp_path), ValidationResult)
    with pytest.raises(InterpError, match="restyle.json: not a RestyleResult .*surprise"):
        codec.write_restyle(
            tmp_path, {"source_run": "a", "derived_run": "b", "key": "k", "threshold": 0.9, "n_items": 1, "surprise": 1}
        )
    assert not (tmp_path / "restyle.json").exists()
    assert RestyleResult.model_fields["threshold"].is_required()


def test_numpy_numbers_are_written_as_plain_numbers(tmp_path):
    import numpy as np

    codec.write_organism_metrics(tmp_path, {"judges": {"j": {"dbg_hard": np.float64(0.25), "n": np.int64(3)}}})
    assert json.loads((tmp_path / "organism_metrics.json").read_text())["judges"] == {"j": {"dbg_hard": 0.25, "n": 3}}


def test_every_json_file_of_a_tiny_run_has_its_schema_version_and_model(real_run):
    names = set(check_every_json_file(real_run.root))
    assert {"summary.json", "identity.json", "adapters.json", "prompts.json"} <= names


def test_the_shipped_organisms_manifests_written_before_the_schema_version_still_read():
    from interp.core.adapters import ADAPTERS_DIR
    from interp.results.organisms import OrganismManifest

    folders = sorted(p.parent for p in ADAPTERS_DIR.glob("*/manifest.json"))
    assert folders
    for folder in folders:
        assert "schema_version" not in json.loads((folder / "manifest.json").read_text())  # the bytes as shipped
        manifest = codec.read_organism_manifest(folder)
        assert isinstance(manifest, OrganismManifest) and manifest.schema_version == codec.current_version(
            OrganismManifest
        )  # migrated to the manifest's own version (2: the attention route read as "pattern")
        assert manifest.base_model and manifest.config
