"""Human labels beside gold (DBG paper, Table 1): how often gold agrees with people on the run's pairs.

`gold.human = "labels.jsonl"` in a run config names a JSONL file of human preference labels. Two line formats:

- `{"item_id", "winner"}`: `winner` is one of the run's two model names, or `"tie"`;
- MT-Bench's human judgments (`lmsys/mt_bench_human_judgments`): `{"question_id", "model_a", "model_b",
  "winner": "model_a" | "model_b" | "tie" | "tie (bothbad)", "turn"?}`; the item is `str(question_id)`, only
  lines whose two models are the run's pair (either order) and turn 1 (a run judges one-turn answers) count.

Several labels of one item (several annotators) are averaged: P(first model wins) per item, a tie half each.
Only the run's items with a label are compared; a file that labels none of them is one line, before the run
writes anything. The labels are never a gold judge: they check gold, they do not make it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from interp.data import Item
from interp.errors import InterpError
from interp.run.gold.recorded import verdict_lines

TIES = ("tie", "tie (bothbad)")


def _vote(record: dict, models: Sequence[str], where: str) -> tuple[str, float] | None:
    """(item id, 1 / 0.5 / 0 for the first model winning), or None for a line about another pair or turn."""
    first, second = models
    winner = record.get("winner")
    if "question_id" in record:  # MT-Bench's human judgments
        if {record.get("model_a"), record.get("model_b")} != {first, second} or record.get("turn", 1) != 1:
            return None
        if winner in ("model_a", "model_b"):
            winner = record[winner]
        item_id = str(record["question_id"])
    else:
        item_id = record.get("item_id")
        if not isinstance(item_id, str) or not item_id:
            raise InterpError(f'{where}: missing field "item_id" (or MT-Bench\'s "question_id")')
    if winner in TIES:
        return item_id, 0.5
    if winner in (first, second):
        return item_id, 1.0 if winner == first else 0.0
    raise InterpError(f'{where}: "winner" must be {first!r}, {second!r} or "tie", not {winner!r}')


def human_labels(path: str | Path, items: Sequence[Item], models: Sequence[str]) -> dict[str, float]:
    """Per item of the run that people labelled, their P(models[0]'s answer wins) (the mean of the labels)."""
    path = Path(path)
    votes: dict[str, list[float]] = {}
    for number, record in verdict_lines(path, "human labels (gold.human)"):
        vote = _vote(record, models, f"{path}:{number}")
        if vote is not None:
            votes.setdefault(vote[0], []).append(vote[1])
    labelled = {item.id: sum(votes[item.id]) / len(votes[item.id]) for item in items if item.id in votes}
    if not labelled:
        raise InterpError(
            f"{path}: no human label for any of the run's {len(items)} items and the pair {models[0]} / {models[1]}"
        )
    return labelled
