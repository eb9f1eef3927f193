"""`interp intervene`: a result is keyed by everything that determines it, so a second spec judges again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from interp.causal.intervene import intervene_run
from interp.engine.executor import Execution
from interp.hooks.spec import AttentionIntervention
from interp.storage import read_jsonl


def tiny_pair_run(root: Path, tiny_llama_dir: Path, tokenizer, *, n: int, attention: str) -> Path:
    """A finished run of two tiny 2-layer Llamas over n items."""
    from transformers import LlamaForCausalLM

    from interp.config import RunConfig
    from interp.run.pipeline import run_dbg
    from tests.helpers.models import save_tiny, tiny_llama_config

    other = save_tiny(root / "model_b", tiny_llama_config(tokenizer), LlamaForCausalLM, tokenizer, seed=7)
    config = RunConfig(
        name="causal",
        n=n,
        models=(str(tiny_llama_dir), str(other)),
        max_new_tokens=4,
        max_words=10,
        n_boot=20,
        attention=attention,
    )
    run_dbg(config, root / "run", progress=False)
    return root / "run"


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> Path:
    """A finished run of two tiny 2-layer Llamas (3 items): the run each test copies."""
    return tiny_pair_run(tmp_path_factory.mktemp("causal"), tiny_llama_dir, smollm2_tokenizer, n=3, attention="none")


def spec_file(folder: Path, layer: int) -> Path:
    path = folder / f"mask_layer_{layer}.toml"
    path.write_text(f'target = "self"\nalpha = 0.0\nlayers = [{layer}]\nname = "self-mask"\n')
    return path


def result_of(run: Path, label_prefix: str = "self-mask") -> dict[str, dict]:
    """Every intervention result of the run, by its folder name (label-hash)."""
    return {
        p.name: json.loads((p / "result.json").read_text())
        for p in sorted((run / "interventions").glob(f"{label_prefix}-*"))
    }


def comparable(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "run_dir"}


def test_a_second_spec_judges_again_and_matches_a_fresh_run_of_it_alone(small_run, tmp_path, forked_cli):
    """The two-spec repro: mask layer 0, then the same spec on the last layer (--no-controls), on one run."""
    both, alone = tmp_path / "both", tmp_path / "alone"
    shutil.copytree(small_run, both)
    shutil.copytree(small_run, alone)
    first, last = spec_file(tmp_path, 0), spec_file(tmp_path, 1)
    # The results are compared exactly, and a command picks torch's thread count from the load it sees (a float32
    # reduction's order depends on it): all three run on one pinned thread.
    one_thread = {"INTERP_THREADS": "1"}
    for spec in (first, last):
        result = forked_cli("intervene", str(both), "--spec", str(spec), "--no-controls", env=one_thread)
        assert result.returncode == 0, result.stderr[-3000:]
    results = result_of(both)
    assert len(results) == 2  # two folders: same label, different keys
    by_layer = {tuple(r["spec"]["layers"]): r for r in results.values()}
    assert set(by_layer) == {(0,), (1,)}
    keys = {layers: r["variant_keys"] for layers, r in by_layer.items()}
    for judge in keys[(0,)]:
        assert keys[(0,)][judge]["self"] != keys[(1,)][judge]["self"]
        # the second spec judged every item in both orders under its own key
        records = read_jsonl(both / "variants" / keys[(1,)][judge]["self"] / "judgments.jsonl")
        assert (
            sorted((r["item_id"], r["order"]) for r in records if r["judge"] == judge)
            == sorted((i, o) for i in {r["item_id"] for r in records} for o in ("ab", "ba"))
            and len(records) == 6
        )
    result = forked_cli("intervene", str(alone), "--spec", str(last), "--no-controls", env=one_thread)
    assert result.returncode == 0, result.stderr[-3000:]
    (fresh,) = result_of(alone).values()
    assert comparable(fresh) == comparable(by_layer[(1,)])
    assert (
        comparable(by_layer[(0,)])["judges"] != comparable(fresh)["judges"]
    )  # layer 0's numbers are not reported as layer 1's


def test_the_same_spec_twice_reuses_its_judgments(small_run, tmp_path, monkeypatch):
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    spec = AttentionIntervention(target="self", alpha=0.0, layers=(0,))
    first = intervene_run(run, spec, execution=Execution(progress=False))

    def refuse(*args, **kwargs):
        raise AssertionError("a result with the same key must be reused, not judged again")

    monkeypatch.setattr("interp.run.judging.judge_batch", refuse)
    again = intervene_run(run, spec, execution=Execution(progress=False))
    assert again.judges == first.judges


@pytest.fixture(scope="module")
def attention_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> Path:
    """Two tiny Llamas, 8 items, span attention recorded: the run the causal-test tests copy."""
    return tiny_pair_run(
        tmp_path_factory.mktemp("causal-test"), tiny_llama_dir, smollm2_tokenizer, n=8, attention="final"
    )


def test_split_is_seeded_disjoint_exact_in_count_and_refuses_an_empty_side():
    from interp.errors import InterpError
    from interp.splits import split_ids

    def split_items(ids, share, seed):
        return split_ids(ids, share, seed, purpose="selection", what="--selection-share")

    ids = [f"item-{i}" for i in range(40)]
    selection, test = split_items(ids, 0.4, 3)
    assert set(selection).isdisjoint(test) and sorted(selection + test) == sorted(ids)
    assert len(selection) == 16 and len(split_items(ids[:6], 0.5, 3)[0]) == 3  # exact in count
    assert split_items(ids, 0.4, 3) == (selection, test) and split_items(ids, 0.4, 4) != (selection, test)
    assert split_items(ids[::-1], 0.4, 3)[0] == selection[::-1]  # an item's side depends on its id, not its place
    with pytest.raises(InterpError, match="selection-share"):
        split_items(ids[:1], 0.4, 3)


def test_random_head_sets_match_the_chosen_layers_and_size():
    from interp.causal.intervene import random_head_sets

    chosen = {1: [0, 3], 4: [2]}
    matched = random_head_sets(chosen, 6, 4, 25, seed_key="j|0", layer_matched=True)
    assert all({layer: len(h) for layer, h in t.items()} == {1: 2, 4: 1} for t in matched)
    assert len({str(t) for t in matched}) > 5  # they differ
    free = random_head_sets(chosen, 6, 4, 25, seed_key="j|0", layer_matched=False)
    assert all(sum(len(h) for h in t.values()) == 3 for t in free)
    assert random_head_sets(chosen, 6, 4, 3, seed_key="j|0", layer_matched=True) == matched[:3]  # seeded


def tiny_controls(root: Path, tokenizer, seeds=(11, 12, 13)) -> list[str]:
    """Control judges outside the run: tiny Llamas of other seeds (they read the answers, wrote neither)."""
    from transformers import LlamaForCausalLM

    from tests.helpers.models import save_tiny, tiny_llama_config

    return [
        str(save_tiny(root / f"control_{seed}", tiny_llama_config(tokenizer), LlamaForCausalLM, tokenizer, seed=seed))
        for seed in seeds
    ]


def test_one_control_judge_gives_no_self_preference_verdict_from_the_cli(
    attention_run, tmp_path, smollm2_tokenizer, forked_cli
):
    run = tmp_path / "run"
    shutil.copytree(attention_run, run)
    from interp.run.store import read_run

    judge, author = read_run(run).config.models
    refused = forked_cli(
        "intervene", str(run), "--all-layers", "--selection-share", "0.4", "--judge", judge, "--control-judge", author
    )
    assert (
        refused.returncode == 2 and "wrote one of the run's answers" in refused.stderr
    )  # the other author owns an answer
    (other,) = tiny_controls(tmp_path, smollm2_tokenizer, seeds=(11,))
    result = forked_cli(
        "intervene",
        str(run),
        "--all-layers",
        "--selection-share",
        "0.4",
        "--split-seed",
        "1",
        "--judge",
        judge,
        "--control-judge",
        other,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (written,) = [json.loads((p / "result.json").read_text()) for p in (run / "interventions").iterdir()]
    assert list(written["judges"]) == [judge]  # the tested judges only; the controls are listed under test
    assert written["test"]["controls"] == {judge: [other]}
    record = written["judges"][judge]
    assert record["causal"] is None and record["p_value"] is None
    assert record["reason"] == "a single control judge cannot separate self-preference from judge-to-judge differences"
    assert record["test"]["design"] == "between-judge" and record["test"]["n_controls"] == 1
    within = record["within_judge"]
    assert within["claim"] == "changes this judge's verdicts" and 0 < within["p_value"] <= 1
    assert (
        record["verdict"].startswith(f"{judge}: no between-judge test")
        and "causal effect on self-preference" not in record["verdict"]
    )
    assert set(written["selection_items"]).isdisjoint(written["test_items"]) and written["test_items"]
    assert record["n_test"] == len(written["test_items"]) and record["test_items"] == written["test_items"]
    # the control judged J's own answer: its key differs from the control's own self-mask key
    from interp.engine.variants import Variant, variant_key
    from interp.hooks.spec import AttentionIntervention

    loaded = read_run(run)
    items = [i for i in loaded.items if i.id in set(written["test_items"])]
    mask = Variant("self", (AttentionIntervention(target="self", alpha=0.0, name="self-mask-all-layers"),))
    assert written["control_variant_keys"][judge][other] == variant_key(loaded, other, "hf", mask, items, judge)
    assert written["control_variant_keys"][judge][other] != variant_key(loaded, other, "hf", mask, items)
    delta = record["per_item_delta"]
    assert sorted(delta) == sorted(written["test_items"])
    assert within["effect"] == pytest.approx(sum(delta.values()) / len(delta))
    assert record["masked_mass"] is not None and 0 <= record["masked_mass"]["share_to_other_answer"] <= 1
    assert "n/a" in result.stdout  # the terminal shows no self-preference verdict


def test_three_control_judges_give_the_crawford_howell_test(attention_run, tmp_path, smollm2_tokenizer):
    from interp.causal.design import TestDesign
    from interp.metrics.judge_level import crawford_howell
    from interp.run.store import read_run

    run = tmp_path / "run"
    shutil.copytree(attention_run, run)
    judge, _ = read_run(run).config.models
    controls = tiny_controls(tmp_path, smollm2_tokenizer)
    design = TestDesign(heads="all-layers", control_judges=tuple(controls))
    result = intervene_run(run, design=design, judges=[judge], execution=Execution(progress=False))
    record = result.judges[judge]
    assert list(result.judges) == [judge] and record.test.controls == controls
    assert isinstance(record.causal, bool) and (record.reason is None) == (
        record.causal or not record.causal_unadjusted
    )
    test = record.test
    assert test.n_controls == 3 and test.df == 2 and test.t is not None
    effects = [record.controls[c].effect.mean for c in controls]
    expected = crawford_howell(record.within_judge.effect, effects, "less")  # one-sided: the removal direction
    assert record.p_value == pytest.approx(expected.p_value) and test.t == pytest.approx(expected.t)
    assert test.alternative == "less" and "one-sided in the removal direction" in record.verdict
    two_sided = crawford_howell(record.within_judge.effect, effects).p_value
    assert test.p_two_sided == pytest.approx(two_sided)  # beside it, from the same t
    assert record.p_value == pytest.approx(two_sided / 2 if test.t <= 0 else 1 - two_sided / 2)
    from interp.metrics.power_budget import removal_p

    assert record.p_value == pytest.approx(removal_p(test.t, test.df, two_sided))  # what explain reads it as
    assert record.causal == (record.p_value <= 0.05 and record.specificity.passed)  # a verdict needs the check
    assert record.gap_before is not None and record.gap_after is not None
    assert (record.share_removed is None) == (record.share_removed_reason is not None)
    # the report's words and figure come from this test: its name, H0, k and df, and each control judge's dot
    from interp.report.interventions import control_figure, intervention_section

    section = intervention_section([result], tmp_path / "figures").read_text()
    assert (
        f"{judge}: Crawford-Howell test" in section
        and "k = 3 control judges" in section
        and "df = 2" in section
        and "H0: " in section
    )
    assert "(k = 3)</summary>" in section and "sign-flip permutation test of the per-item contrast" not in section
    dots = [
        c.get_offsets() for c in control_figure([result]).axes[0].collections if type(c).__name__ == "PathCollection"
    ]
    assert sorted(float(x) for offsets in dots for x, _ in offsets) == pytest.approx(sorted(100 * e for e in effects))
    # the judge named among its own controls is refused, before anything is written
    from interp.errors import InterpError

    before = sorted(p.name for p in (run / "interventions").iterdir())
    with pytest.raises(InterpError, match="judge under test"):
        intervene_run(
            run,
            design=TestDesign(heads="all-layers", control_judges=(judge, *controls[:2])),
            judges=[judge],
            execution=Execution(progress=False),
        )
    assert sorted(p.name for p in (run / "interventions").iterdir()) == before


def test_top_heads_with_random_sets_and_holm_over_two_judges(attention_run, tmp_path, smollm2_tokenizer):
    from interp.causal.design import TestDesign
    from interp.errors import InterpError
    from interp.run.store import read_run

    run = tmp_path / "run"
    shutil.copytree(attention_run, run)
    a, b = read_run(run).config.models
    controls = tuple(tiny_controls(tmp_path, smollm2_tokenizer))
    with pytest.raises(InterpError, match="can never reach --test-alpha"):  # 19 sets cannot survive Holm over 2 judges
        intervene_run(
            run,
            design=TestDesign(
                heads="top-heads", top_k=2, selection_share=0.4, random_head_sets=19, control_judges=controls
            ),
            judges=[a, b],
            execution=Execution(progress=False),
        )
    design = TestDesign(
        heads="top-heads", top_k=2, selection_share=0.4, split_seed=0, test_alpha=0.5, control_judges=controls
    )
    result = intervene_run(run, design=design, judges=[a, b], execution=Execution(progress=False))
    assert result.multiple_comparisons == "Holm over 2 judges"
    for judge in (a, b):
        record = result.judges[judge]
        assert record.test.controls == list(controls) and record.test.random_head_sets == 3  # ceil(2 / 0.5) - 1
        assert record.p_holm >= record.p_value and record.causal == (record.p_holm <= 0.5)
        if record.test.random_sets_skipped:
            assert record.test.p_value > 0.5 and record.random_head_sets is None
        else:
            assert len(record.random_head_sets.effects) == 3 and record.random_head_sets.layer_matched
            assert record.p_value == max(record.test.p_value, record.test.p_rank)
    (folder,) = (run / "interventions").iterdir()
    assert folder.name.startswith("self-mask-top2-heads-")
    check_matched_top_heads(run, result, design, controls)


def check_matched_top_heads(run, result, design, controls) -> None:
    """--top-heads's null is matched: each control is measured at its own top-K heads by own-minus-other attention
    on the same selection items, the tested judge's answer read as its own (what the localisation gives it)."""
    import json

    from interp.causal.intervene import top_heads_spec, variant_of
    from interp.causal.matched import attention_top_heads
    from interp.core.models import own_model
    from interp.locate.heads import LocalizeItems, localize_run
    from interp.run.store import read_run

    loaded = read_run(run)
    for judge, record in result.judges.items():
        selection = record.selection_items
        assert record.null == "matched" and set(record.control_sets) == set(controls)
        for control in controls:
            frame = localize_run(
                loaded, control, ["attention"], on=LocalizeItems(selection, own=own_model(judge)), progress=False
            )
            spec = top_heads_spec(design, attention_top_heads(frame, design.top_k))
            expected = variant_of("self", spec, selection).identity()
            assert json.loads(json.dumps(record.control_sets[control])) == json.loads(json.dumps(expected))


def test_top_heads_needs_a_selection_share_and_attention(small_run, tmp_path, forked_cli):
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    no_share = forked_cli("intervene", str(run), "--top-heads", "2")
    assert no_share.returncode == 2 and "--selection-share" in no_share.stderr
    no_attention = forked_cli(
        "intervene", str(run), "--top-heads", "2", "--selection-share", "0.5", "--split-seed", "2"
    )
    assert no_attention.returncode == 2 and "attention" in no_attention.stderr
    two = forked_cli("intervene", str(run), "--all-layers", "--top-heads", "2")
    assert two.returncode == 2 and "exactly one" in two.stderr
    assert not (run / "interventions").exists()


def test_intervene_and_sweep_end_with_the_results_table_or_json(small_run, tmp_path, forked_cli):
    run = tmp_path / "run"
    shutil.copytree(small_run, run)
    spec = spec_file(tmp_path, 0)
    shown = forked_cli("intervene", str(run), "--spec", str(spec), "--no-controls")
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "DBG per judge" in shown.stdout and "Causal test" in shown.stdout and "report: " in shown.stdout
    as_json = forked_cli("intervene", str(run), "--spec", str(spec), "--no-controls", "--json")
    assert as_json.returncode == 0, as_json.stderr[-3000:]
    payload = json.loads(as_json.stdout)  # stdout holds only the JSON
    (stored,) = result_of(run).values()
    assert [r["judge"] for r in payload["causal"]] == list(stored["judges"])
    for row in payload["causal"]:
        judged = stored["judges"][row["judge"]]
        assert row["causal"] == judged["causal"] and row["effect"]["mean"] == judged["effects"]["self"]["mean"]
        assert row["n_test"] == stored["n_items"] == 3
    summary = json.loads((run / "summary.json").read_text())
    assert {r["judge"]: r["dbg_hard"] for r in payload["dbg"]} == {
        j: s.get("dbg_hard") for j, s in summary["judges"].items()
    }

    config = tmp_path / "sweep.toml"
    config.write_text(
        f'run = "{run}"\nname = "tiny"\ntargets = ["self"]\nalphas = [0.0]\nall_layers = '
        "true\n[layers]\neach = true\n[heads]\ntop_k = []\nrandom_seeds = []\n"
    )
    swept = forked_cli("sweep", str(config), "--json")
    assert swept.returncode == 0, swept.stderr[-3000:]
    payload = json.loads(swept.stdout)
    rows = Path(payload["files"]["results"]).read_text().splitlines()
    assert payload["sweep"]["n_points"] == len(rows) - 1 > 0 and payload["files"]["results"].endswith("results.csv")
    effects = [r["effect"]["mean"] for r in payload["sweep"]["top"]]
    assert effects == sorted(effects)
    shown = forked_cli("sweep", str(config))
    assert shown.returncode == 0 and "Sweep:" in shown.stdout and "DBG per judge" in shown.stdout
