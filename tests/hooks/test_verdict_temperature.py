"""The verdict-temperature kind: a spec of exactly `kind` and `lambda` loads, lambda outside (0, 1] is one line, and
the verdict's label probabilities are those of the final logits times lambda, on the plain and the shared-trunk
backend alike."""

from __future__ import annotations

import math

import pytest
import torch

from interp.core.backends.hf import HFBackend
from interp.core.backends.shared_trunk import SharedTrunkBackend, trunk_backends
from interp.core.judge import judge_batch, label_probabilities, label_tokens, left_pad
from interp.core.spans import build_judge_prompt
from interp.errors import InterpError
from interp.hooks.base import EditContext, compile_edits, registered_kinds
from interp.hooks.nodes import as_intervention
from interp.hooks.verdict import VerdictTemperature
from tests.core.test_shared_trunk import family
from tests.helpers.models import tiny_llama_config
from tests.helpers.reference import BATCH_ITEMS


def test_a_spec_of_kind_and_lambda_loads_and_reads_back(tmp_path):
    path = tmp_path / "temperature.toml"
    path.write_text('kind = "temperature"\nlambda = 0.6\n')
    spec = as_intervention(path)
    assert "temperature" in registered_kinds()
    assert isinstance(spec, VerdictTemperature) and spec.scale == 0.6 and spec.label == "temperature-0.6"
    again = tmp_path / "again.toml"
    again.write_text(spec.to_toml())
    assert as_intervention(again) == spec and spec.identity() == {"kind": "temperature", "lambda": 0.6}
    assert as_intervention(path, name="flat").identity() == spec.identity()  # a label is not part of the key


@pytest.mark.parametrize("value", ["0", "-0.5", "1.5", "inf", "nan", '"0.6"', "true"])
def test_a_lambda_outside_zero_one_is_one_line(tmp_path, value):
    path = tmp_path / "temperature.toml"
    path.write_text(f'kind = "temperature"\nlambda = {value}\n')
    with pytest.raises(InterpError, match="'lambda'") as caught:
        as_intervention(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_a_missing_lambda_or_an_unknown_key_is_one_line(tmp_path):
    with pytest.raises(InterpError, match="needs key 'lambda'"):
        as_intervention({"kind": "temperature"})
    with pytest.raises(InterpError, match="unknown key 'alpha'"):
        as_intervention({"kind": "temperature", "lambda": 0.5, "alpha": 0.0})


def _expected(backend, prompts, labels, scale: float) -> list[float]:
    """P(A) from the plain pass's final logits times `scale` (what the kind must give)."""
    batch, _ = left_pad([p.input_ids for p in prompts], backend.model.tokenizer.pad_token_id)
    with torch.inference_mode():
        logits = backend.forward(batch)
    _, normalised, _ = label_probabilities(logits.double() * scale, labels)
    return normalised[:, 0].tolist()


@pytest.mark.parametrize("scale", [0.4, 0.6, 1.0])
def test_the_verdict_is_read_from_the_final_logits_times_lambda_on_every_backend(smollm2_tokenizer, scale):
    from transformers import LlamaForCausalLM

    judges = family(
        tiny_llama_config(smollm2_tokenizer, num_hidden_layers=4), LlamaForCausalLM, smollm2_tokenizer, "post"
    )
    labels = label_tokens(smollm2_tokenizer)
    spec = VerdictTemperature(scale=scale)
    for name, model in judges.items():
        prompts = [build_judge_prompt(model, "helpfulness", q, a, b) for q, a, b in BATCH_ITEMS]
        plain, trunk = HFBackend(model), trunk_backends(judges)[name]
        assert isinstance(trunk, SharedTrunkBackend)

        def edits(batch, offsets, rows, model=model):
            context = EditContext(batch, offsets, rows, model.n_layers, model.n_heads)
            return compile_edits([spec], context)

        expected = _expected(plain, prompts, labels, scale)
        clean = [j.probs["A"] for j in judge_batch(plain, prompts, labels)]
        for backend in (plain, trunk):
            judged = [j.probs["A"] for j in judge_batch(backend, prompts, labels, edits=edits)]
            assert judged == pytest.approx(expected, abs=1e-5)  # rounding: the prefix is shared
        if scale == 1.0:
            assert expected == pytest.approx(clean, abs=1e-5)  # the clean pass shares the prefix: rounding
        else:  # the edit acts (two spellings per label: the log-odds scale only up to their mix)
            assert any(abs(e - c) > 1e-4 for e, c in zip(expected, clean, strict=True))


def test_with_one_token_per_label_the_log_odds_scale_exactly_by_lambda():
    """Two labels of one token each: log(P(A) / P(B)) after is lambda times before, whatever the other logits."""
    from interp.core.judge import LabelTokens

    logits = torch.randn(5, 50, generator=torch.Generator().manual_seed(0)) * 4
    labels = LabelTokens(("A", "B"), ((3,), (7,)))
    _, clean, _ = label_probabilities(logits, labels)
    _, flat, _ = label_probabilities(logits.double() * 0.6, labels)
    before, after = (torch.log(p[:, 0] / p[:, 1]) for p in (clean, flat))
    assert after.tolist() == pytest.approx((0.6 * before).tolist(), abs=1e-9)
    assert not math.isclose(float(before[0]), float(after[0]))
