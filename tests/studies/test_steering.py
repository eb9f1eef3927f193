"""Steering: attention emphasis and a self-recognition direction, under the causal test.

Fast checks run on a tiny random Llama (3 layers, 4 heads, hidden 64, SmolLM2's tokenizer) on every backend,
and on a small fake run judged by that tiny model; the `slow` test runs the real pipeline on the packaged
models (n = 4) and checks the direction's split, the probe accuracy, the five-row table and the section.
"""

from __future__ import annotations

import json
import random

import pytest
import torch

from interp.config import RunConfig
from interp.core.backends import BACKENDS, Edits, left_pad
from interp.core.judge import judge_batch, label_tokens
from interp.core.models import LoadedModel, ModelCache, load_model, resolve_spec
from interp.data import builtin_items
from interp.engine.judges import Judges
from interp.errors import InterpError
from interp.hooks.compile import bias_builder, scale_and_renormalise
from interp.hooks.emphasis import complement_bias, emphasis_spec, pasta_spec
from interp.hooks.steering import position_mask, steer
from interp.locate import directions
from interp.locate.directions import compute_direction, steering_split
from interp.report.steering import SECTION_TITLE
from interp.results import codec
from interp.run.attention import consolidate_attention
from interp.run.judging import JudgingOptions, judge_tasks, run_judging
from interp.run.store import RunDir
from interp.storage import atomic_write_text
from interp.studies.steering import ROWS, SteeringSettings, emphasis_heads, steering_table, table_paths
from tests.helpers.models import backend_for, three_layer_tiny

LAYER = 1  # the middle block of the tiny model
PAIRS = [
    (
        "helpfulness",
        "What is the capital of France?",
        "Paris is the capital of France.",
        "The capital is Lyon, I think.",
    ),
    (
        "helpfulness",
        "Name a prime number.",
        "Seven is prime.",
        "Nine, because it is odd and therefore prime, as everyone knows.",
    ),
]


# ---- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_spec("smollm2-135m-instruct")[0])
    return three_layer_tiny("llama", tmp_path_factory.mktemp("tiny-steer"), tokenizer)


@pytest.fixture(scope="module")
def tiny(tiny_dir) -> LoadedModel:
    return load_model(str(tiny_dir))


def prompts_for(model: LoadedModel):
    from interp.core.spans import build_judge_prompt

    return [build_judge_prompt(model, task, q, a, b) for task, q, a, b in PAIRS]


def random_direction(d: int = 64, seed: int = 0) -> torch.Tensor:
    return torch.randn(d, generator=torch.Generator().manual_seed(seed))


def forward_with_edit(backend, model, prompts, builder, *, record_after: bool = False):
    """Logits under `builder` (and, with record_after, the layer-LAYER residual *after* the edit)."""
    batch, offsets = left_pad([p.input_ids for p in prompts], model.tokenizer.pad_token_id)
    edits = builder(batch, offsets, prompts)
    seen = []
    if record_after:
        edits = {layer: (lambda h, f=fn: seen.append(f(h).detach().clone()) or seen[-1]) for layer, fn in edits.items()}
    return backend.forward(batch, edits=Edits(resid=edits)), batch, seen


# ---- coefficient 0, projection, reversal: every backend ------------------------------------------------


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_coefficient_zero_reproduces_baseline_logits_exactly(tiny, backend_name):
    backend = backend_for(tiny, backend_name)
    prompts = prompts_for(tiny)
    batch, _ = left_pad([p.input_ids for p in prompts], tiny.tokenizer.pad_token_id)
    base = backend.forward(batch)
    direction = random_direction()
    for mode in ("add", "project_out"):
        for positions in ("all", "spans", "final"):
            builder = steer(direction, LAYER, 0.0, mode, positions)
            logits, _, _ = forward_with_edit(backend, tiny, prompts, builder)
            assert torch.equal(logits, base), (mode, positions)
    # and through judge_batch, the path the causal test uses
    labels = label_tokens(tiny.tokenizer)
    plain = judge_batch(backend, prompts, labels, readout=None)
    steered = judge_batch(backend, prompts, labels, readout=None, edit=steer(direction, LAYER, 0.0))
    assert [j.probs for j in plain] == [j.probs for j in steered]


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_project_out_leaves_zero_component_at_that_layer(tiny, backend_name):
    backend = backend_for(tiny, backend_name)
    prompts = prompts_for(tiny)
    direction = random_direction(seed=1)
    unit = direction / direction.norm()
    # what the residual looked like before: a clearly non-zero component along u
    _, batch, before = forward_with_edit(backend, tiny, prompts, steer(direction, LAYER, 0.0), record_after=True)
    _, _, after = forward_with_edit(
        backend, tiny, prompts, steer(direction, LAYER, 1.0, "project_out"), record_after=True
    )
    real = batch.attention_mask.bool()
    assert (before[0] @ unit)[real].abs().max() > 1e-2
    assert (after[0] @ unit)[real].abs().max() < 1e-5
    # only the direction's component changed
    orthogonal = lambda h: h - (h @ unit)[..., None] * unit  # noqa: E731
    torch.testing.assert_close(orthogonal(after[0])[real], orthogonal(before[0])[real], atol=1e-5, rtol=0)


def test_project_out_reaches_the_next_block_and_spares_other_positions(tiny):
    """hf: the next decoder layer's input (the true residual stream) has no component along u, only inside spans."""
    backend = backend_for(tiny, "hf")
    prompts = prompts_for(tiny)
    direction = random_direction(seed=2)
    unit = direction / direction.norm()
    layers = tiny.hf_model.model.layers
    captured = []
    handle = layers[LAYER + 1].register_forward_pre_hook(
        lambda _m, args, kwargs: captured.append(args[0] if args else kwargs["hidden_states"]), with_kwargs=True
    )
    try:
        _, batch, _ = forward_with_edit(backend, tiny, prompts, steer(direction, LAYER, 0.0))
        _, _, _ = forward_with_edit(backend, tiny, prompts, steer(direction, LAYER, 1.0, "project_out", "spans"))
    finally:
        handle.remove()
    plain, edited = captured
    _, offsets = left_pad([p.input_ids for p in prompts], tiny.tokenizer.pad_token_id)
    spans = position_mask(batch, offsets, prompts, "spans").bool()
    assert spans.sum() > 0 and (~spans & batch.attention_mask.bool()).sum() > 0
    assert (edited @ unit)[spans].abs().max() < 1e-5
    assert torch.equal(edited[~spans], plain[~spans])  # outside the spans nothing changed


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_reversal_changes_the_logits(tiny, backend_name):
    backend = backend_for(tiny, backend_name)
    prompts = prompts_for(tiny)
    batch, _ = left_pad([p.input_ids for p in prompts], tiny.tokenizer.pad_token_id)
    base = backend.forward(batch)
    reversed_logits, _, _ = forward_with_edit(backend, tiny, prompts, steer(random_direction(seed=3), LAYER, -4.0))
    assert (reversed_logits - base).abs().max() > 1e-3
    # the same edit at the same site on every backend
    hf_logits, _, _ = forward_with_edit(
        backend_for(tiny, "hf"), tiny, prompts, steer(random_direction(seed=3), LAYER, -4.0)
    )
    torch.testing.assert_close(reversed_logits, hf_logits, atol=1e-4, rtol=1e-4)


def test_add_only_touches_the_chosen_positions(tiny):
    prompts = prompts_for(tiny)
    direction = random_direction(seed=4)
    unit = direction / direction.norm()
    backend = backend_for(tiny, "hf")
    _, batch, before = forward_with_edit(backend, tiny, prompts, steer(direction, LAYER, 0.0), record_after=True)
    for positions in ("all", "spans", "final"):
        _, _, after = forward_with_edit(
            backend, tiny, prompts, steer(direction, LAYER, 2.5, "add", positions), record_after=True
        )
        _, offsets = left_pad([p.input_ids for p in prompts], tiny.tokenizer.pad_token_id)
        mask = position_mask(batch, offsets, prompts, positions).bool()
        assert torch.equal(after[0][~mask], before[0][~mask])
        torch.testing.assert_close(
            (after[0] - before[0])[mask], (2.5 * unit).expand(int(mask.sum()), -1), atol=1e-5, rtol=0
        )


def test_bad_steering_input_is_refused():
    direction = random_direction()
    with pytest.raises(InterpError, match="mode"):
        steer(direction, 0, 1.0, "multiply")
    with pytest.raises(InterpError, match="positions"):
        steer(direction, 0, 1.0, "add", "everywhere")
    with pytest.raises(InterpError, match="finite"):
        steer(direction, 0, float("nan"))
    with pytest.raises(InterpError, match="norm"):
        steer(torch.zeros(8), 0, 1.0)
    with pytest.raises(InterpError, match="train_fraction"):
        steering_split(["a", "b"], 1.0)


# ---- emphasis -------------------------------------------------------------------------------------


def test_emphasis_other_times_k_equals_everything_else_over_k():
    """Post-softmax: other-span weights x k, renormalised == every other key x 1/k, renormalised."""
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        n = int(torch.randint(4, 40, (1,), generator=gen))
        scores = torch.randn(3, n, n, generator=gen, dtype=torch.float64).masked_fill(
            torch.ones(n, n).triu(1).bool(), float("-inf")
        )
        pattern = scores.softmax(-1)
        start = int(torch.randint(0, n - 1, (1,), generator=gen))
        end = int(torch.randint(start + 1, n + 1, (1,), generator=gen))
        target = torch.zeros(n, n, dtype=torch.bool)
        target[:, start:end] = True
        k = float(torch.empty(1).uniform_(1.0, 20.0, generator=gen))
        torch.testing.assert_close(
            scale_and_renormalise(pattern, target, k),
            scale_and_renormalise(pattern, ~target, 1 / k),
            atol=1e-12,
            rtol=0,
        )


def test_emphasis_and_pasta_forms_compile_to_the_same_exact_bias(tiny):
    assert pasta_spec(0.25) == emphasis_spec(4.0)
    spec = emphasis_spec(4.0, heads={0: [1], 2: [0, 3]})
    assert spec.target == "other" and spec.alpha == 4.0 and spec.emphasis
    prompts = prompts_for(tiny)
    batch, offsets = left_pad([p.input_ids for p in prompts], tiny.tokenizer.pad_token_id)
    authors = [(tiny.name, "someone"), ("someone", tiny.name)]  # own response in A, then in B
    emph = bias_builder(emphasis_spec(4.0), tiny, authors=authors)(batch, offsets, prompts)
    pasta = bias_builder(pasta_spec(0.25), tiny, authors=authors)(batch, offsets, prompts)
    assert emph.keys() == pasta.keys() and all(torch.equal(emph[l], pasta[l]) for l in emph)
    # the PASTA form written literally (-log k everywhere else) gives the same output: softmax ignores a row constant
    backend = backend_for(tiny, "hf")
    base = backend.forward(batch)
    emphasised = backend.forward(batch, edits=Edits(score_bias=emph))
    literal = backend.forward(batch, edits=Edits(score_bias=complement_bias(emph)))
    assert (emphasised - base).abs().max() > 1e-4
    torch.testing.assert_close(literal, emphasised, atol=1e-5, rtol=0)
    with pytest.raises(InterpError, match="alpha"):
        emphasis_spec(0.0)


# ---- a small fake run judged by the tiny model ---------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_dir, tiny):
    """A finished-looking run: 6 built-in items, the tiny model vs a made-up author, reference-style gold."""
    root = tmp_path_factory.mktemp("steer-run")
    judge, other = str(tiny_dir), "made-up-author"
    config = RunConfig(name="steer", n=6, models=(judge, other), judges=[judge], attention="final")
    atomic_write_text(root / "config.toml", config.to_toml())
    items = [i for task in ("helpfulness", "truthfulness", "translation") for i in builtin_items([task])[:2]]
    rng = random.Random(0)
    atomic_write_text(
        root / "items.jsonl",
        "".join(
            json.dumps(
                {"id": i.id, "task": i.task, "query": i.query, "reference": i.reference, "aliases": list(i.aliases)}
            )
            + "\n"
            for i in items
        ),
    )
    responses = []
    for item in items:
        responses.append({"model": judge, "item_id": item.id, "text": f"My answer: {item.reference[:60]}"})
        responses.append({"model": other, "item_id": item.id, "text": "I am not sure, maybe something else entirely."})
    atomic_write_text(root / "responses.jsonl", "".join(json.dumps(r) + "\n" for r in responses))
    atomic_write_text(
        root / "gold.jsonl",
        "".join(
            json.dumps({"judge": "reference", "item_id": i.id, "p_first_model": rng.choice([0.0, 0.5, 1.0])}) + "\n"
            for i in items
        ),
    )
    tasks = judge_tasks(
        items,
        {
            judge: {i.id: f"My answer: {i.reference[:60]}" for i in items},
            other: {i.id: "I am not sure, maybe something else entirely." for i in items},
        },
        (judge, other),
    )
    paths = RunDir(root)
    run_judging(
        backend_for(tiny, "hf"),
        judge,
        tasks,
        judgments_path=paths.judgments,
        shard_dir=paths.attention_shards(judge),
        options=JudgingOptions(batch_size=8, progress=False),
    )
    consolidate_attention(paths, judge, tiny, items, "final")  # attention maps: the top heads for emphasis
    return root, judge


def test_direction_uses_training_items_only(tiny_run, tiny, monkeypatch):
    root, judge = tiny_run
    passed: list[set[str]] = []
    original = directions._difference_of_means

    def spy(examples):
        passed.append({e.item_id for e in examples})
        return original(examples)

    monkeypatch.setattr(directions, "_difference_of_means", spy)
    direction = compute_direction(root, judge, LAYER, judges=Judges(ModelCache(models={judge: tiny})), recompute=True)
    train, held = set(direction.train_ids), set(direction.heldout_ids)
    assert train and held and not train & held
    assert train | held == {json.loads(line)["id"] for line in (root / "items.jsonl").read_text().splitlines()}
    assert len(passed) == 1 and passed[0] == train == set(direction.mean_item_ids)
    assert direction.n == {"train_items": 4, "heldout_items": 2, "train_examples": 8 * 2, "heldout_examples": 4 * 2}
    assert set(direction.accuracy) == {"train", "heldout", "train_paired", "heldout_paired"}
    assert all(0 <= value <= 1 for value in direction.accuracy.values())
    assert direction.vector.shape == (64,) and direction.norm > 0
    # saved with its sidecar, and read back (no forward pass) on the next call
    info = json.loads(direction.path.with_suffix(".json").read_text())
    assert info["layer"] == LAYER and info["position"] == "spans" and info["train_ids"] == direction.train_ids
    assert (
        info["heldout_ids"] == direction.heldout_ids
        and info["accuracy"] == direction.accuracy
        and info["norm"] == pytest.approx(direction.norm)
    )
    again = compute_direction(root, judge, LAYER, judges=Judges(ModelCache(models={judge: tiny})))
    assert len(passed) == 1 and torch.equal(again.vector, direction.vector)
    # the "final" contrast: own response present vs replaced by the reference
    final = compute_direction(
        root, judge, LAYER, position="final", judges=Judges(ModelCache(models={judge: tiny})), recompute=True
    )
    assert passed[-1] == set(final.train_ids) and final.n["train_examples"] == 4 * 2 * 2


def test_steering_table_on_the_tiny_run(tiny_run, tiny):
    root, judge = tiny_run
    table = steering_table(
        root, judge, settings=SteeringSettings(layer=LAYER), models=ModelCache(models={judge: tiny}), progress=False
    )
    rows = table.rows
    assert [r.intervention for r in rows] == list(ROWS)
    for row in rows:
        lo, hi = row.dbg_ci
        assert lo <= row.dbg_hard <= hi
        assert len(row.effect.ci) == 2 and len(row.gold_agreement_ci) == 2
        assert 0 <= row.gold_agreement <= 1
    assert rows[0].effect.mean == 0.0 and rows[0].effect.ci == [0.0, 0.0]
    assert table.probe[judge].n.heldout_items == 2
    files = table_paths(table)
    assert files["json"].is_file() and files["csv"].read_text().count("\n") == 6
    assert codec.read_steering_table(files["json"]) == table  # what it returns is what it wrote
    section = (root / "figures" / "steering_section.html").read_text()
    assert section.splitlines()[0] == SECTION_TITLE
    assert "held-out" in section and "training items only" in section
    # a second call re-judges nothing (resumable) and gives the same numbers
    again = steering_table(
        root,
        judge,
        settings=SteeringSettings(layer=LAYER),
        models=ModelCache(models={judge: tiny}),
        progress=False,
        write=False,
    )
    assert [r.mean_p_own for r in again.rows] == [r.mean_p_own for r in rows]
    with pytest.raises(InterpError, match="out of range"):
        steering_table(
            root, judge, settings=SteeringSettings(layer=3), models=ModelCache(models={judge: tiny}), progress=False
        )


def test_emphasis_on_the_top_heads(tiny_run, tiny):
    from interp.analysis.attention_stats import top_heads

    root, judge = tiny_run
    heads = emphasis_heads(root, judge, 3)
    assert sorted((l, h) for l, hs in heads.items() for h in hs) == sorted(
        (l, h) for l, h, _ in top_heads(root, judge, 3)
    )
    table = steering_table(
        root,
        judge,
        settings=SteeringSettings(layer=LAYER, k_heads=3),
        models=ModelCache(models={judge: tiny}),
        progress=False,
        write=False,
    )
    (row,) = [r for r in table.rows if r.intervention == "other-emphasis"]
    spec = row.variant["attention"]
    assert spec["heads"] == {str(l): hs for l, hs in heads.items()} and spec["alpha"] == 4.0 and spec["emphasis"]
    assert "3 top heads" in row.description


def test_steering_sweep_runner_on_the_tiny_run(tiny_run, tiny, tmp_path):
    import csv

    from interp.studies.sweeps import load_steering_sweep, run_steering_sweep

    root, judge = tiny_run
    shipped = load_steering_sweep("experiments/configs/steering_sweep.toml")  # the shipped config parses
    assert shipped.coefficients and shipped.project_out
    path = tmp_path / "sweep.toml"
    path.write_text(f'run = "{root}"\nname = "tiny"\ncoefficients = [-1.0]\nlayers = [{LAYER}]\n')
    results = run_steering_sweep(path, progress=False, models=ModelCache(models={judge: tiny}))
    rows = list(csv.DictReader(results.open()))
    assert [(r["mode"], float(r["coefficient"])) for r in rows] == [("add", -1.0), ("project_out", 1.0)]
    assert all(r["effect_lo"] and r["probe_heldout"] for r in rows)
    assert (results.parent / "effect_vs_coefficient.png").is_file()
    path.write_text(f'run = "{root}"\nlayers = [7]\n')
    with pytest.raises(InterpError, match="out of range"):
        run_steering_sweep(path, progress=False, models=ModelCache(models={judge: tiny}))


# ---- the real thing --------------------------------------------------------------------------------


@pytest.mark.slow
def test_steering_end_to_end_on_a_real_run(tmp_path, monkeypatch):
    from interp.report.build import build_report
    from interp.run.pipeline import run_dbg

    out = tmp_path / "run"
    models = ModelCache()
    # one judge (the one we steer) keeps the test near three minutes on two cores
    config = RunConfig(n=4, max_new_tokens=24, max_words=20, name="steer", judges=["smollm2-135m-instruct"])
    run_dbg(config, out, progress=False, models=models)
    judge = "smollm2-135m-instruct"
    passed: list[set[str]] = []
    original = directions._difference_of_means
    monkeypatch.setattr(
        directions,
        "_difference_of_means",
        lambda examples: passed.append({e.item_id for e in examples}) or original(examples),
    )
    table = steering_table(out, judge, models=models, progress=False)
    probe = table.probe[judge]
    train, held = set(probe.train_ids), set(probe.heldout_ids)
    assert train and held and not train & held and len(train | held) == 4
    assert passed == [train] and set(probe.mean_item_ids) == train
    assert 0 <= probe.accuracy.heldout <= 1 and probe.n.heldout_examples > 0
    assert [r.intervention for r in table.rows] == list(ROWS)
    for row in table.rows:
        assert len(row.dbg_ci) == 2 and len(row.effect.ci) == 2 and len(row.gold_agreement_ci) == 2
    section = out / "figures" / "steering_section.html"
    assert section.read_text().splitlines()[0] == SECTION_TITLE
    assert SECTION_TITLE in build_report(out).read_text()
