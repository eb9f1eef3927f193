"""Results as typed objects: the codec writes `schema_version`, reads a run directory written before it
(tests/fixtures/old_run: no schema_version, the test level under its old name `alpha`, no Holm p, no
reliability flag, one judge decided by the single-control sign-flip test), and refuses what it cannot read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from interp.errors import InterpError
from interp.results import codec
from interp.results.causal import Behaviour, CausalResult, GapGate, JudgeTest
from interp.results.rows import SweepRow
from interp.results.run_files import AdapterFingerprints, AttentionIndex, GoldChecks, JudgePrompts, RunIdentity
from interp.results.summary import RunSummary

OLD_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "old_run"


def test_an_older_run_directory_still_reads():
    (result,) = codec.read_causal_results(OLD_RUN)
    assert isinstance(result, CausalResult) and result.schema_version == codec.SCHEMA_VERSION
    a, b = result.judges["author-a"], result.judges["author-b"]
    assert isinstance(a, JudgeTest) and a.test_alpha == 0.05 and "alpha" not in a.to_json()  # renamed, not kept twice
    assert a.p_holm == a.p_value == 0.0001  # one judge's Holm p is its p
    assert (
        a.test.name == "Crawford-Howell"
        and a.test.n_controls == 4
        and a.test.df == 3
        and a.control_names == ["c1", "c2", "c3", "c4"]
    )
    assert a.share_removed.estimate == 0.8 and a.self_effect.mean == -0.1
    assert result.design.test_alpha == 0.05 and "alpha" not in result.design.to_json()
    assert a.before.dbg_hard == 0.125 and a.before.dbg_soft is None  # a record with fewer keys reads as it is
    assert b.test.design.startswith("sign-flip") and b.self_effect.ci == [-0.05, 0.03]  # the old test says what it was
    assert b.control_names == ["control"]
    summary = codec.read_summary(OLD_RUN / "summary.json")
    assert isinstance(summary, RunSummary) and summary.judges["author-a"].unreliable_because == []
    assert (
        summary.judges["author-b"].reliable is False
        and "position consistency" in summary.judges["author-b"].unreliable_because[0]
    )


def test_what_is_written_carries_schema_version_and_reads_back_equal(tmp_path):
    old = codec.read_causal(next((OLD_RUN / "interventions").iterdir()))
    written = codec.write_causal(tmp_path, old)
    on_disk = json.loads((tmp_path / "result.json").read_text())
    assert on_disk["schema_version"] == codec.SCHEMA_VERSION and "alpha" not in on_disk["judges"]["author-a"]
    assert codec.read_causal(tmp_path) == written == old
    summary = codec.write_summary(
        tmp_path / "summary.json", {"n_items": 2, "models": ["x", "y"], "judges": {"x": {"n_judgments": 4}}}
    )
    assert json.loads((tmp_path / "summary.json").read_text()) == {
        "schema_version": 1,
        "n_items": 2,
        "models": ["x", "y"],
        "judges": {"x": {"n_judgments": 4}},
    }
    assert (
        codec.read_summary(tmp_path / "summary.json") == summary
    )  # nothing invented on the way out, nothing lost back
    record = codec.write_variant(
        tmp_path / "v", {"key": "k", "judge": "j", "own": "o", "backend": "hf", "attention": {"target": "self"}}
    )
    assert json.loads((tmp_path / "v" / "variant.json").read_text())["schema_version"] == 1 and record.slots[
        "attention"
    ] == {"target": "self"}


def test_a_file_it_cannot_read_is_one_line(tmp_path):
    folder = tmp_path / "r"
    shutil.copytree(next((OLD_RUN / "interventions").iterdir()), folder)
    data = json.loads((folder / "result.json").read_text())
    (folder / "result.json").write_text(json.dumps(data | {"schema_version": 99}))
    with pytest.raises(InterpError, match="schema_version 99 is newer"):
        codec.read_causal(folder)
    (folder / "result.json").write_text(json.dumps(data | {"judges": {"x": {"causal": "perhaps"}}}))
    with pytest.raises(InterpError, match=r"not a CausalResult \(judges\.x\.causal"):
        codec.read_causal(folder)
    (folder / "result.json").write_text("{")
    with pytest.raises(InterpError, match="not valid JSON"):
        codec.read_causal(folder)


def test_a_run_dir_reads_its_summary_through_the_codec(tmp_path):
    from interp.run.store import RunDir

    shutil.copy(OLD_RUN / "summary.json", tmp_path / "summary.json")
    summary = RunDir(tmp_path).read_summary()
    assert (
        isinstance(summary, RunSummary)
        and summary.judges["author-a"].dbg_ci == [0.0, 0.25]
        and summary.models == ["author-a", "author-b"]
    )


def test_an_older_run_s_bookkeeping_files_still_read():
    """identity.json, adapters.json, prompts.json, gold_checks.json and an attention index written before their
    schema version (maps at the top level; the read-out named `queries`) read into their models."""
    assert codec.read_file(OLD_RUN / "identity.json", RunIdentity).config_identity == "0123456789abcdef"
    adapters = codec.read_file(OLD_RUN / "adapters.json", AdapterFingerprints)
    assert adapters.fingerprints == {"organism-x": "fedcba9876543210"}
    prompts = codec.read_file(OLD_RUN / "prompts.json", JudgePrompts)
    assert prompts.schema_version == codec.SCHEMA_VERSION and list(prompts.judges) == ["author-a"]
    assert prompts.judges["author-a"]["labels"] == ["A", "B"]
    assert codec.read_file(OLD_RUN / "gold_checks.json", GoldChecks).judges["gold-http"]["missing_logprobs"] == 2
    (index_path,) = (OLD_RUN / "attention").glob("*.json")
    index = codec.read_file(index_path, AttentionIndex)
    assert index.readout == "after" and index.judge == "author-a" and "queries" not in index.to_json()


def test_a_bookkeeping_file_round_trips_with_its_schema_version(tmp_path):
    codec.write_file(tmp_path / "prompts.json", JudgePrompts, {"judges": {"j": {"prompts": {"t": "é"}}}})
    written = json.loads((tmp_path / "prompts.json").read_text())
    assert written == {"schema_version": codec.SCHEMA_VERSION, "judges": {"j": {"prompts": {"t": "é"}}}}
    assert codec.read_file(tmp_path / "prompts.json", JudgePrompts).judges == written["judges"]
    with pytest.raises(InterpError, match="not a RunIdentity"):
        codec.write_file(tmp_path / "identity.json", RunIdentity, {"config_identity": "a", "surprise": 1})


def test_a_sweep_row_holds_its_point_apart_from_its_results():
    (row,) = codec.sweep_rows([{"judge": "j", "alpha": "0.5", "layers": "", "effect": "0.1", "key": "k"}])
    assert row.point == {"alpha": "0.5"} and row.effect == 0.1 and row.key == "k"
    with pytest.raises(ValidationError):
        SweepRow(judge="j", alpha=0.5)  # a column the row does not declare goes in its point


def test_every_result_model_refuses_unknown_keys_and_reads_by_attribute_only():
    """No result model keeps a key it does not declare, and none acts as a mapping (`result["judges"]`)."""
    import interp.results.causal
    import interp.results.explain
    import interp.results.organisms
    import interp.results.rows
    import interp.results.run_files
    import interp.results.studies
    import interp.results.summary  # noqa: F401 - every model module, so that every subclass is defined
    from interp.results.base import ResultModel

    def subclasses(kind):
        return [kind, *(sub for direct in kind.__subclasses__() for sub in subclasses(direct))]

    models = subclasses(ResultModel)
    assert len(models) > 20
    for model in models:
        assert model.model_config.get("extra") == "forbid", model.__name__
        assert not any(hasattr(model, name) for name in ("__getitem__", "__setitem__", "get", "keys")), model.__name__


def test_a_summary_with_every_nested_block_writes_back_what_it_read(tmp_path):
    """The gold block, the reasoning removed, the pointwise scores, the graded answers and the placement are
    typed blocks now; each is written back key for key (the authors of `correctness` beside `no_target`)."""
    from tests.helpers.payloads import SUMMARY

    data = SUMMARY | {"placement": {"device": "cpu", "dtype": "float32", "device_map": None}}
    data = data | {"judges": {}, "gold": data["gold"] | {"checks": {"reference": {"missing_logprobs": 0}}}}
    summary = codec.write_summary(tmp_path / "summary.json", data)
    assert summary.gold.human.ensemble.agreement == 0.8 and summary.reasoning["author-a"].n_answers == 3
    assert summary.pointwise["weak-judge"].authors["author-a"].n_parsed == 2 and summary.placement.device == "cpu"
    assert summary.correctness.authors["author-b"].correct == 4 and summary.correctness.no_target == 2
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written == data | {"schema_version": codec.SCHEMA_VERSION}
    assert list(written["correctness"]) == ["author-a", "author-b", "no_target"]
    assert not codec.parse(RunSummary, {"correctness": {}}).correctness  # an empty block reads as no grading
    with pytest.raises(InterpError, match="gold"):
        codec.parse(RunSummary, {"gold": {"judges": [], "win_rates": {}}})  # a misspelt key is refused


CAUSAL_RESULT = Path(__file__).resolve().parents[1] / "fixtures" / "causal_result"


def test_a_causal_result_reads_and_writes_back_byte_identical(tmp_path):
    """tests/fixtures/causal_result/result.json is what `intervene_run` wrote (--top-heads 1 with three control
    judges and three random head sets, two judges): read as objects and written again, it is the same bytes."""
    result = codec.read_causal(CAUSAL_RESULT)
    codec.write_causal(tmp_path, result)
    assert (tmp_path / "result.json").read_bytes() == (CAUSAL_RESULT / "result.json").read_bytes()
    record = next(iter(result.judges.values()))  # the nested records are objects, read by attribute
    assert result.design.heads == "top-heads" and result.design.top_k == 1 and len(result.design.control_judges) == 3
    assert isinstance(record.before, Behaviour) and record.before.mean_p_own is not None
    assert isinstance(record.dbg_test_before, GapGate) and record.dbg_test_before.k == 3
    assert record.dbg_test_before.alternative == "greater"
    assert record.mirror.unjustified + record.mirror.legitimate <= record.n_test
    assert len(record.random_head_sets.effects) == 3 and record.random_head_sets.layer_matched is True
    assert all(isinstance(c.before, Behaviour) for c in record.controls.values())
