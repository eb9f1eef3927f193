"""Judging by a model behind an OpenAI-compatible server: DBG only.

Each judgment (one pair, one order) is one request whose first generated token's top logprobs give P(A) and
P(B) (`HTTPJudge.judge_order`, the same reading as an HTTP gold judge). A server returns no attention, so
such a judge has no span attention and no interventions: those need local weights. Judgments are appended
as they arrive (`concurrency` requests at a time), so a killed run resumes with the missing ones only.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

from tqdm.auto import tqdm

from interp.config import HTTPJudgeConfig
from interp.run.gold.http import HTTPJudge
from interp.run.judging import JudgeTask, batches
from interp.run.records import JudgmentRecord, append_judgments, read_judgments


def run_server_judging(
    endpoint: HTTPJudgeConfig, tasks: Sequence[JudgeTask], *, judgments_path: Path, progress: bool = True
) -> None:
    """Judge every task not yet on disk with the served model (judge name = the endpoint's name)."""
    done = {record.key for record in read_judgments(judgments_path, judge=endpoint.name)}
    todo = [task for task in tasks if task.key not in done]
    client = HTTPJudge.from_config(endpoint)
    bar = tqdm(
        total=len(todo), desc=f"judging {endpoint.name} (server)", unit="judgment", disable=not progress or not todo
    )
    pool = ThreadPoolExecutor(max_workers=endpoint.concurrency)
    try:
        for chunk in batches(todo, max(8, endpoint.concurrency)):
            answers = list(pool.map(lambda t: client.judge_order(t.item, t.order, t.response_a, t.response_b), chunk))
            append_judgments(
                judgments_path,
                [
                    JudgmentRecord(
                        judge=endpoint.name,
                        item_id=t.item.id,
                        order=t.order,
                        model_a=t.author_a,
                        model_b=t.author_b,
                        p_a=a["p_a"],
                        p_b=a["p_b"],
                        task=t.item.task,
                        label_mass=a["mass_a"] + a["mass_b"],
                    )
                    for t, a in zip(chunk, answers, strict=False)
                ],
            )
            bar.update(len(chunk))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        client.close()
        bar.close()
