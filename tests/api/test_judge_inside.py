"""Opening the judge: one judgment's full attention pattern (tensor and plotly figure, spans marked), and an
nnsight tracing context over the judge prompt with its token spans known."""

from __future__ import annotations

import pytest
import torch

import interp
from interp.errors import InterpError
from tests.helpers.reference import ANSWER_A, ANSWER_B, QUERY, TINY, assert_close

AUTHORS = ("writer-x", "writer-y")


@pytest.fixture
def judge(request):
    return interp.Judge.wrap(request.getfixturevalue(request.param), own="writer-x")


@pytest.mark.parametrize("judge", TINY, indirect=True)
def test_the_pattern_is_plain_transformers_attention(judge):
    p = judge.attention_pattern(QUERY, ANSWER_A, ANSWER_B, layers=[0, judge.n_layers - 1], heads=[1, 0])
    ids = torch.tensor([p.prompt.input_ids])
    with torch.no_grad():
        attentions = judge.model.hf_model(ids, output_attentions=True).attentions
    n = ids.shape[1]
    assert p.pattern.shape == (2, 2, n, n) and p.layers == (0, judge.n_layers - 1) and p.heads == (1, 0)
    for i, layer in enumerate(p.layers):
        assert_close(p.pattern[i], attentions[layer][0, [1, 0]].float(), 1e-4, f"layer {layer}")
    assert_close(p.pattern.sum(-1), torch.ones(2, 2, n), 1e-4, "rows sum to 1")
    assert len(p.tokens) == n and p.spans == judge.prompt(QUERY, ANSWER_A, ANSWER_B).spans
    # the final row over a span is the span mass the verdict reports
    v = judge(QUERY, ANSWER_A, ANSWER_B)
    start, end = p.spans["a"]
    assert float(p.of(judge.n_layers - 1, 0)[-1, start:end].sum()) == pytest.approx(
        float(v.mass[judge.n_layers - 1, 0, 0]), abs=1e-4
    )


@pytest.mark.parametrize("judge", ["tiny_llama"], indirect=True)
def test_the_pattern_shows_an_open_intervention(judge):
    with judge.applying(target="self", alpha=0.0, layers=[1]):
        p = judge.attention_pattern(QUERY, ANSWER_A, ANSWER_B, layers=[0, 1], authors=AUTHORS)
    start, end = p.spans["a"]  # writer-x wrote A: "self"
    assert float(p.pattern[1, :, -1, start:end].sum()) < 1e-6 < float(p.pattern[0, :, -1, start:end].sum())
    plain = judge.attention_pattern(QUERY, ANSWER_A, ANSWER_B, layers=1)
    assert float(plain.pattern[0, :, -1, start:end].sum()) > 1e-3  # the block is left: the model is as it was


@pytest.mark.parametrize("judge", ["tiny_llama"], indirect=True)
def test_the_figure_has_a_heatmap_per_layer_and_head_and_boxes_the_spans(judge):
    p = judge.attention_pattern(QUERY, ANSWER_A, ANSWER_B, layers=[0, 1], heads=[0, 2])
    fig = p.figure()
    assert [trace.name for trace in fig.data] == [
        "layer 0 head 0",
        "layer 0 head 2",
        "layer 1 head 0",
        "layer 1 head 2",
    ]
    assert [trace.visible for trace in fig.data] == [True, False, False, False]
    assert len(fig.layout.updatemenus[0].buttons) == 4
    boxes = {(shape.x0 + 0.5, shape.x1 + 0.5) for shape in fig.layout.shapes}
    assert boxes == {tuple(span) for span in p.spans.values()}
    assert {a.text for a in fig.layout.annotations} == {"query", "response A", "response B"}
    assert fig.data[0].customdata[3][5][1].startswith("5: ")  # hover: every key token's label


@pytest.mark.parametrize("judge", ["tiny_llama"], indirect=True)
def test_bad_layers_and_heads_are_one_line(judge):
    with pytest.raises(InterpError, match="layer 99 is out of range"):
        judge.attention_pattern(QUERY, ANSWER_A, ANSWER_B, layers=[0, 99])
    with pytest.raises(InterpError, match="no head asked for"):
        judge.attention_pattern(QUERY, ANSWER_A, ANSWER_B, heads=[])
    p = judge.attention_pattern(QUERY, ANSWER_A, ANSWER_B, layers=0, heads=0)
    with pytest.raises(InterpError, match="not in this pattern"):
        p.of(1, 0)


@pytest.mark.parametrize("judge", ["tiny_llama"], indirect=True)
def test_trace_is_nnsight_over_the_judge_prompt_with_spans(judge):
    hf_model = judge.model.hf_model
    forward = hf_model.forward
    with judge.trace(QUERY, ANSWER_A, ANSWER_B) as tracer:
        hidden = judge.nnsight.model.layers[0].output.save()
        logits = judge.nnsight.output.logits.save()
    prompt = judge.prompt(QUERY, ANSWER_A, ANSWER_B)
    assert (
        tracer.spans == prompt.spans
        and tracer.prompt.input_ids == prompt.input_ids
        and len(tracer.tokens) == len(prompt)
    )
    with torch.no_grad():
        out = hf_model(torch.tensor([prompt.input_ids]), output_hidden_states=True)
    assert_close(hidden, out.hidden_states[1], 1e-5, "layer 0 output")
    assert_close(logits[0, -1], out.logits[0, -1], 1e-4, "logits")
    assert hf_model.forward == forward  # nnsight wraps a weight-sharing copy: the user's model is as it was
    with judge.applying(target="a", alpha=0.0):
        with pytest.raises(InterpError, match="not under judge.applying"):
            judge.trace(QUERY, ANSWER_A, ANSWER_B)
