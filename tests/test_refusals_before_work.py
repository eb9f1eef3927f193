"""Refusals that must come before any work, each on more than one case: other architectures and configs,
other spellings, other sizes.

The rule (README): bad input prints one `error:` line, exits 2 and writes nothing; the exceptions run and say
so (a test that cannot reject runs and says it cannot).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import torch

import interp
from interp.errors import InterpError
from tests.helpers import REPO

QUERY, ANSWER_A, ANSWER_B = "Name a primary colour.", "Blue is one.", "Green, I think."


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


def one_error_line(code: int, stderr: str, expected: str) -> str:
    lines = stderr.splitlines()
    assert "Traceback" not in stderr, stderr[-3000:]
    assert code == 2, f"exit {code}: {stderr[-3000:]}"
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr[-3000:]
    assert expected in lines[0], lines[0]
    return lines[0]


# ---- 1 and 9: a model on which a mask cannot act is refused, in one line naming it ---------------------


def _decoder_kwargs(tokenizer, **extra):
    return dict(
        vocab_size=len(tokenizer),
        d_model=32,
        decoder_layers=2,
        decoder_attention_heads=4,
        decoder_ffn_dim=64,
        max_position_embeddings=1024,
        pad_token_id=0,
        is_decoder=True,
        is_encoder_decoder=False,
        **extra,
    )


def mvp_decoder(tokenizer):
    """MVP's decoder computes attention itself and returns no pattern unless asked (like TrOCR's)."""
    from transformers import MvpConfig, MvpForCausalLM

    return MvpForCausalLM(
        MvpConfig(encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=64, **_decoder_kwargs(tokenizer))
    )


def llama_with_private_configs(tokenizer):
    """A Llama whose attention layers each hold their own eager config: they never call the hooked function,
    yet return real patterns (the XGLM situation: every mask a silent no-op)."""
    from transformers import LlamaForCausalLM

    from tests.helpers.models import tiny_llama_config

    torch.manual_seed(0)
    model = LlamaForCausalLM(tiny_llama_config(tokenizer, num_hidden_layers=3))
    for layer in model.model.layers:
        layer.self_attn.config = copy.deepcopy(model.config)
        layer.self_attn.config._attn_implementation = "eager"
    return model


def pegasus_decoder_counting_encoder_layers(tokenizer):
    """A BART-family decoder whose config's layer count (num_hidden_layers) is the encoder's: 3 vs 2."""
    from transformers import PegasusConfig, PegasusForCausalLM

    return PegasusForCausalLM(
        PegasusConfig(encoder_layers=3, encoder_attention_heads=4, encoder_ffn_dim=64, **_decoder_kwargs(tokenizer))
    )


def marian_decoder_counting_encoder_heads(tokenizer):
    """A BART-family decoder whose config's head count is the encoder's: 2 vs 4."""
    from transformers import MarianConfig, MarianForCausalLM

    config = MarianConfig(
        encoder_layers=2,
        encoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_start_token_id=0,
        **_decoder_kwargs(tokenizer),
    )
    return MarianForCausalLM(config)


UNSUPPORTED = {
    "mvp": (mvp_decoder, "MvpForCausalLM", "no attention pattern"),
    "private-configs": (llama_with_private_configs, "LlamaForCausalLM", "a mask changes neither"),
    "pegasus-layers": (pegasus_decoder_counting_encoder_layers, "PegasusForCausalLM", "3 layers but it has 2"),
    "marian-heads": (marian_decoder_counting_encoder_heads, "MarianForCausalLM", "2 heads"),
}


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_a_model_a_mask_cannot_act_on_is_refused_in_one_line(smollm2_tokenizer, name):
    from interp.core.backends import check_backend_fits
    from interp.core.models import wrap_model
    from interp.engine.variants import Variant, check_variants
    from interp.hooks.spec import AttentionIntervention

    build, architecture, why = UNSUPPORTED[name]
    model = build(smollm2_tokenizer).eval()
    with pytest.raises(InterpError) as raised:
        interp.Judge.wrap(model, smollm2_tokenizer, name=name, own="x")
    message = str(raised.value)
    assert "\n" not in message and architecture in message and why in message and "not supported" in message
    loaded = wrap_model(model, smollm2_tokenizer, name=name)
    with pytest.raises(InterpError, match=architecture):  # what dbg and inspect check before any work
        check_backend_fits(loaded, "hf")
    with pytest.raises(InterpError, match=architecture):  # what intervene, sweeps and steering check
        check_variants(loaded, [Variant("self", (AttentionIntervention(target="a", alpha=0.0),))])


@pytest.mark.parametrize("architecture", ["opt", "biogpt"])
def test_a_supported_architecture_passes_the_probe_and_its_mask_acts(smollm2_tokenizer, architecture):
    from transformers import BioGptConfig, BioGptForCausalLM, OPTConfig, OPTForCausalLM

    torch.manual_seed(1)
    shape = dict(
        vocab_size=len(smollm2_tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=1024,
    )
    if architecture == "opt":
        model = OPTForCausalLM(OPTConfig(ffn_dim=64, word_embed_proj_dim=32, **shape))
    else:
        model = BioGptForCausalLM(BioGptConfig(intermediate_size=64, **shape))
    judge = interp.Judge.wrap(model.eval(), smollm2_tokenizer, name=architecture, own="x")
    plain = judge(QUERY, ANSWER_A, ANSWER_B, authors=("x", "y"))
    with judge.applying(target="a", alpha=0.0):
        masked = judge(QUERY, ANSWER_A, ANSWER_B, authors=("x", "y"))
    assert masked.mass[..., 0].abs().max() == 0 and plain.mass[..., 0].abs().max() > 0 and masked.p_a != plain.p_a


class _Faulty:
    """A backend around the hf one that loses the mask on its way to the reported rows or to the output."""

    name = "transformer_lens"  # no self_attn bookkeeping: the probe sees only what forward returns

    def __init__(self, model, *, rows: bool, output: bool):
        from interp.core.backends.hf import HFBackend

        self.model, self.inner, self.rows, self.output = model, HFBackend(model), rows, output

    def forward(self, batch, *, edits=None, on_pattern=None, **_):
        plain = self.inner.forward(batch, on_pattern=None if self.rows else on_pattern)
        masked = self.inner.forward(batch, on_pattern=on_pattern if self.rows else None, edits=edits)
        return masked if self.output else plain


@pytest.mark.parametrize(
    "rows, output, message",
    [
        (False, True, "does not reach the attention rows"),
        (True, False, "changes its attention rows but not its output"),
        (False, False, "changes neither"),
    ],
)
def test_the_probe_names_what_the_mask_missed(tiny_llama, rows, output, message):
    import dataclasses

    from interp.core.backends.probe import check_intervention_takes_effect

    model = dataclasses.replace(tiny_llama, meta={})
    with pytest.raises(InterpError, match=message):
        check_intervention_takes_effect(_Faulty(model, rows=rows, output=output))
    check_intervention_takes_effect(_Faulty(model, rows=True, output=True))
    assert model.meta["intervention_verified"] == ("transformer_lens",)  # verified once, then not probed again


# ---- 8: authors are exactly two names --------------------------------------------------------------------


@pytest.fixture(scope="module")
def judge(tiny_llama):
    return interp.Judge.wrap(tiny_llama, own="writer-x")


@pytest.mark.parametrize(
    "authors",
    [("writer-x", "writer-y", "writer-z", "writer-w"), ["writer-x"], [], "xy", ("writer-x", ""), ("writer-x", 7)],
    ids=repr,
)
def test_authors_that_are_not_two_names_are_one_error(judge, authors):
    with pytest.raises(InterpError, match="exactly two names"):
        judge(QUERY, ANSWER_A, ANSWER_B, authors=authors)


def test_authors_per_pair_are_checked_pair_by_pair(judge):
    with pytest.raises(InterpError, match="of pair 1"):
        judge.batch(
            [QUERY, QUERY],
            [ANSWER_A, ANSWER_B],
            [ANSWER_B, ANSWER_A],
            authors=[("writer-x", "writer-y"), ("writer-y",)],
        )
    verdicts = judge.batch(
        [QUERY, QUERY],
        [ANSWER_A, ANSWER_B],
        [ANSWER_B, ANSWER_A],
        authors=[["writer-x", "writer-y"], ("writer-y", "writer-x")],
    )
    assert [v.authors for v in verdicts] == [("writer-x", "writer-y"), ("writer-y", "writer-x")]


# ---- 4: a control judge is compared with the judge by what it loads, not by its spelling -----------------


def test_a_judge_spelled_otherwise_is_refused_as_its_own_control(tmp_path, tiny_llama_dir, monkeypatch):
    from interp.causal.design import TestDesign, resolve_controls
    from interp.core.models import model_identity, resolve_spec

    link = tmp_path / "linked-judge"
    link.symlink_to(tiny_llama_dir)
    monkeypatch.chdir(tiny_llama_dir.parent)
    judge = str(tiny_llama_dir)
    from types import SimpleNamespace

    run = SimpleNamespace(config=SimpleNamespace(models=(judge, "imported-writer")))  # what resolve_controls reads
    for spelling in (str(link), f"{tiny_llama_dir.name}/", f"./{tiny_llama_dir.name}/../{tiny_llama_dir.name}"):
        with pytest.raises(InterpError, match="spelled otherwise"):
            resolve_controls(run, judge, TestDesign(control_judges=(spelling,)))
    assert resolve_controls(run, judge, TestDesign(control_judges=(str(tmp_path),))) == [
        str(tmp_path)
    ]  # another folder
    alias = "smollm2-135m-instruct"  # an alias and the folder it is dequantised into are one model
    assert model_identity(alias) == model_identity(str(resolve_spec(alias)[0])) != model_identity("gemma3-270m")


# ---- 11, 12: bounds of the design, an exact split, tests that cannot reject --------------------------------


def test_random_head_sets_are_bounded():
    from interp.causal.design import MAX_RANDOM_HEAD_SETS, TestDesign

    TestDesign(heads="top-heads", top_k=2, selection_share=0.5, random_head_sets=MAX_RANDOM_HEAD_SETS)
    with pytest.raises(InterpError, match=f"more than {MAX_RANDOM_HEAD_SETS}"):
        TestDesign(heads="top-heads", top_k=2, selection_share=0.5, random_head_sets=2_500)


@pytest.mark.parametrize("n, share, selected", [(7, 0.3, 2), (10, 0.25, 3), (9, 0.6, 5), (40, 0.4, 16)])
def test_the_selection_test_split_is_exact_in_count_for_every_seed(n, share, selected):
    from interp.splits import split_ids

    def split_items(ids, share, seed):
        return split_ids(ids, share, seed, purpose="selection", what="--selection-share")

    ids = [f"item-{i:03d}" for i in range(n)]
    for seed in range(12):
        selection, test = split_items(ids, share, seed)
        assert (len(selection), len(test)) == (selected, n - selected), seed
        assert sorted(selection + test) == ids and selection == [i for i in ids if i in selection]
        assert split_items(list(reversed(ids)), share, seed)[0] == list(reversed(selection))  # order-free choice


@pytest.mark.parametrize("n", [2, 3, 5])
def test_a_test_that_cannot_reject_says_so(n):
    from interp.metrics.causal_test import sign_flip_pvalue, smallest_flip_p, too_few_items

    strong = -0.4 - 0.01 * torch.arange(n).numpy()  # every item moved the same way: the strongest evidence n items give
    assert (
        sign_flip_pvalue(strong) == pytest.approx(2 / 2**n) == pytest.approx(smallest_flip_p(n))
        and smallest_flip_p(n) > 0.05
    )
    note = too_few_items(n, 10_000, 0.05)
    assert f"{n} test items cannot give p <= 0.05" in note and "cannot reject" in note and "at least 6" in note
    assert smallest_flip_p(6) <= 0.05 and sign_flip_pvalue(-0.4 - 0.01 * torch.arange(6).numpy()) <= 0.05


# ---- 10: a progress bar ends before the error line ------------------------------------------------------------


def test_an_error_raised_under_a_progress_bar_starts_a_line(capfd):
    import typer
    from tqdm.auto import tqdm

    from interp.cli import one_line_errors

    @one_line_errors
    def failing():
        bar = tqdm(total=10, desc="judging")
        bar.update(4)
        raise InterpError("span [3, 50000) does not exist")

    with pytest.raises(typer.Exit):
        failing()
    err = capfd.readouterr().err
    assert "\nerror: span [3, 50000)" in err and err.endswith("does not exist\n")


# ---- the CLI on a finished tiny run: one line, exit 2, nothing written (5, 6, 7, 10, 11); 12 runs and says so ----


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, tiny_llama_dir, smollm2_tokenizer) -> Path:
    """A finished run of two tiny 2-layer x 4-head Llamas over 3 items, attention recorded."""
    from transformers import LlamaForCausalLM

    from interp.config import RunConfig
    from interp.run.pipeline import run_dbg
    from tests.helpers.models import save_tiny, tiny_llama_config

    root = tmp_path_factory.mktemp("finished")
    other = save_tiny(
        root / "model_b", tiny_llama_config(smollm2_tokenizer), LlamaForCausalLM, smollm2_tokenizer, seed=3
    )
    config = RunConfig(
        name="refusals",
        n=3,
        models=(str(tiny_llama_dir), str(other)),
        max_new_tokens=4,
        max_words=10,
        n_boot=20,
        attention="final",
    )
    run_dbg(config, root / "run", progress=False)
    return root / "run"


def _keep_first_judge_only(run: Path) -> None:
    """judgments.jsonl cut after the first judge's lines (a second judge's baseline is missing)."""
    lines = (run / "judgments.jsonl").read_text().splitlines(keepends=True)
    first = json.loads(lines[0])["judge"]
    (run / "judgments.jsonl").write_text("".join(line for line in lines if json.loads(line)["judge"] == first))


def _killed_while_judging(run: Path) -> None:
    """A run killed during its second judge: half its judgments, no gold, no summary."""
    lines = (run / "judgments.jsonl").read_text().splitlines(keepends=True)
    (run / "judgments.jsonl").write_text("".join(lines[: len(lines) * 3 // 4]))
    for name in ("gold.jsonl", "summary.json"):
        (run / name).unlink()


CLI_CASES = {
    # id: (args after the command, setup on the copied run, expected text)
    "5 top heads = all 8 heads": (
        ["intervene", "{run}", "--top-heads", "8", "--selection-share", "0.4"],
        None,
        "not fewer than",
    ),
    "6 metrics on a run killed while judging": (
        ["metrics", "run", "{run}"],
        _killed_while_judging,
        "not a finished run",
    ),
    "7 summary.json empty": (
        ["intervene", "{run}", "--spec", "{root}/spec.toml"],
        lambda run: (run / "summary.json").write_text(""),
        "summary.json: not valid JSON",
    ),
    "10 a span past every prompt": (
        ["intervene", "{run}", "--spec", "{root}/far.toml"],
        None,
        "does not exist in a prompt",
    ),
    "10 a judge's baseline missing": (
        ["intervene", "{run}", "--spec", "{root}/spec.toml"],
        _keep_first_judge_only,
        "not been judged in both orders",
    ),
    "11 random head sets 5000": (
        ["intervene", "{run}", "--top-heads", "2", "--selection-share", "0.4", "--random-head-sets", "5000"],
        None,
        "more than 999",
    ),
}


@pytest.fixture(scope="module")
def cli_outcomes(finished_run, tmp_path_factory, forked_cli) -> dict:
    """Every CLI case on its own copy of the run (forked, two at a time): exit code, stderr, files before, after."""
    jobs, roots = [], {}
    for index, (name, (args, setup, _)) in enumerate(CLI_CASES.items()):
        root = tmp_path_factory.mktemp(f"case{index}")
        shutil.copytree(finished_run, root / "run")
        (root / "spec.toml").write_text('target = "self"\nalpha = 0.0\nlayers = [1]\n')
        (root / "far.toml").write_text("target = [3, 50000]\nalpha = 0.0\nlayers = [1]\n")
        if setup is not None:
            setup(root / "run")
        roots[name] = (root, snapshot(root))
        jobs.append((args, root))
    return run_cases(forked_cli, jobs, roots)


def run_cases(forked_cli, jobs: list[tuple[list[str], Path]], roots: dict) -> dict:
    """Each job's CLI args ("{run}" and "{root}" filled in from its root) run forked, two at a time: case name
    (the keys of `roots`: name -> (root, its snapshot before)) -> (exit code, stderr, files before, after)."""
    filled = [
        ([a.replace("{run}", str(root / "run")).replace("{root}", str(root)) for a in args], REPO)
        for args, root in jobs
    ]
    ran = forked_cli.run(filled, parallel=2)
    return {
        name: (code, stderr, before, snapshot(root))
        for (name, (root, before)), (code, _, stderr) in zip(roots.items(), ran, strict=False)
    }


def refused_unchanged(outcome: tuple, expected: str) -> None:
    """One `error:` line holding `expected`, exit 2, and every file as it was."""
    code, stderr, before, after = outcome
    one_error_line(code, stderr, expected)
    assert sorted(after) == sorted(before), f"added {sorted(set(after) - set(before))}"
    assert all(before[k] == after[k] for k in before)


@pytest.mark.parametrize("name", list(CLI_CASES))
def test_the_cli_refuses_before_writing_anything(cli_outcomes, name):
    refused_unchanged(cli_outcomes[name], CLI_CASES[name][2])


def test_inspect_refuses_a_model_whose_attention_bypasses_the_hooks(tmp_path, smollm2_tokenizer, forked_cli):
    folder = tmp_path / "mvp"
    mvp_decoder(smollm2_tokenizer).save_pretrained(folder)
    smollm2_tokenizer.save_pretrained(folder)
    before = snapshot(tmp_path)
    ((code, _, stderr),) = forked_cli.run(
        [(["inspect", "-m", str(folder), "-q", QUERY, "--response-a", ANSWER_A, "--response-b", ANSWER_B], REPO)],
        parallel=1,
    )
    one_error_line(code, stderr, "(MvpForCausalLM) is not supported")
    assert snapshot(tmp_path) == before


def test_a_test_of_three_items_runs_and_says_it_cannot_reject(finished_run, tmp_path, forked_cli):
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    (tmp_path / "spec.toml").write_text('target = "self"\nalpha = 0.0\nlayers = [0]\n')
    ((code, stdout, stderr),) = forked_cli.run(
        [(["intervene", str(run), "--spec", str(tmp_path / "spec.toml"), "--judge", _first_model(run)], REPO)],
        parallel=1,
    )
    assert code == 0, stderr[-3000:]
    assert "3 test items cannot give p <= 0.05" in " ".join(stdout.split())
    (result,) = [json.loads(p.read_text()) for p in run.glob("interventions/*/result.json")]
    (record,) = result["judges"].values()
    assert "cannot reject" in record["verdict"] and any("cannot reject" in note for note in record["notes"])


def _first_model(run: Path) -> str:
    import tomllib

    return tomllib.loads((run / "config.toml").read_text())["models"][0]
