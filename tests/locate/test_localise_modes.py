"""Localisation reads a judge's verdict where the run read it: on a chain-of-thought run after the judge's own
rationale, on a ties run from the three-way prompt; a judge the chain-of-thought run did not judge with is
refused in one line."""

from __future__ import annotations

import pytest

from interp.engine.judges import judge_pool
from interp.engine.variants import task_prompts
from interp.errors import InterpError
from interp.locate.heads import attribution_scores, localisation_prompts
from interp.run.judging import judge_tasks
from interp.run.store import read_run
from tests.engine.test_rejudge_modes import make_run, other_dir  # noqa: F401 - the fixtures this file uses


@pytest.mark.parametrize(
    ("name", "keys"), [("cot", {"cot": "standard", "max_rationale_tokens": 6}), ("ties", {"ties": True})]
)
def test_localisation_reads_the_runs_own_prompt(make_run, name, keys, monkeypatch):  # noqa: F811
    run = read_run(make_run(f"localise-{name}", **keys))
    judge = run.config.judge_specs[0]
    model = judge_pool(run).model(judge)
    tasks = judge_tasks(run.items, run.responses, run.config.models)
    read = localisation_prompts(run, model, judge, tasks)
    assert [list(p.input_ids) for p in read] == [list(p.input_ids) for p in task_prompts(run, model, tasks, judge)]
    plain = task_prompts(read_run(make_run("plain")), model, tasks, judge)
    assert any(len(a.input_ids) != len(b.input_ids) for a, b in zip(read, plain, strict=True))  # not the plain prompt
    import interp.locate.heads as localize

    seen, attributions = [], localize.head_attributions

    def recording(model, input_ids, *args):
        seen.append(list(input_ids))
        return attributions(model, input_ids, *args)

    monkeypatch.setattr(localize, "head_attributions", recording)
    scores = attribution_scores(run, judge, model, run.items, progress=False)  # its spans exist in these prompts
    assert scores["atp"].shape[0] == len(run.items)
    assert sorted(seen) == sorted(list(p.input_ids) for p in read)  # AtP read the run's own prompts


def test_a_judge_outside_a_chain_of_thought_run_is_refused(make_run, tiny_llama_dir):  # noqa: F811
    run = read_run(make_run("localise-cot", cot="standard", max_rationale_tokens=6))
    model = judge_pool(run).model(run.config.judge_specs[0])
    tasks = judge_tasks(run.items, run.responses, run.config.models)
    with pytest.raises(InterpError, match="did not judge this chain-of-thought run"):
        localisation_prompts(run, model, "some-outside-judge", tasks)
