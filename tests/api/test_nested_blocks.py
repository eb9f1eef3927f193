"""Nested `Judge.applying` blocks that read a reference set (issue 77 item 12): each block reads its own
reference (a nested resample block drew from the outer block's donors), and nesting one spec object leaves the
outer block whole (leaving the inner one dropped the outer's means: "a mean ablation needs its reference means")."""

from __future__ import annotations

import pytest

import interp

PAIR = ("What is 2 + 2?", "It is 4.", "Five.")
SET_A = [("Name a colour.", "Red.", "A colour is blue."), ("Say hello.", "Hello!", "Hi there, friend.")]
SET_B = [("Why is the sky blue?", "Scattering of light.", "Because it is."), ("Count to three.", "1 2 3", "One.")]


@pytest.fixture(scope="module")
def judge(tiny_llama):
    return interp.Judge.wrap(tiny_llama)


def _p_a(judge) -> float:
    return judge(*PAIR).p_a


def test_a_nested_resample_block_draws_from_its_own_reference(judge):
    outer = dict(site="residual", op="resample", layers=[0], positions="final", seed=1)
    inner = dict(site="residual", op="resample", layers=[1], positions="final", seed=2)
    results = {}
    for name, reference in (("a", SET_A), ("b", SET_B)):
        with judge.applying(**outer, reference=SET_A), judge.applying(**inner, reference=reference):
            results[name] = _p_a(judge)
    with judge.applying(**outer, reference=SET_A):
        outer_only = _p_a(judge)
    assert results["a"] != pytest.approx(results["b"], abs=1e-7)  # the inner reference is read
    assert outer_only not in (results["a"], results["b"])


def test_one_spec_nested_in_itself_leaves_the_outer_block_whole(judge):
    with judge.applying(site="mlp_output", op="mean", layers=[1], reference=SET_A) as spec:
        alone = _p_a(judge)
        with judge.applying(spec, reference=SET_B):
            twice = _p_a(judge)
        after = _p_a(judge)  # the outer block still reads its means
    assert after == pytest.approx(alone, abs=1e-7) and twice != pytest.approx(alone, abs=1e-7)
    assert not judge.interventions and not judge._means and not judge._pools
