"""Recorded verdicts as a gold judge: another system's judgments, human labels, a hosted judge run offline."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Mapping, Sequence

from interp.errors import InterpError
from interp.run.gold.protocol import Pair
from interp.storage import jsonl_objects, read_user_text


class RecordedJudge:
    """Verdicts read from a JSONL file (another system's judgments, human labels, a hosted judge run offline).

    Each line is `{"item_id", "response_a", "response_b", "p_a"}` (P(response_a better)) or
    `{"item_id", "winner": "A" | "B" | "tie"}`; `p_a` and `winner` also work with or without the response
    texts. A verdict keyed by texts is used for that pair, and (as 1 - p_a) for the same pair in swapped
    order; a verdict with only an item id applies to whatever pair is asked for that item, A meaning the
    pair's `response_a`. A pair with no verdict is an error naming the item.
    """

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        self.path = Path(path)
        self.name = name or f"recorded:{self.path.stem}"
        self._by_texts, self._by_item = _read_recorded_verdicts(self.path)

    def __repr__(self) -> str:
        return f"RecordedJudge({str(self.path)!r}, name={self.name!r})"

    def p_slot_a(self, pairs: Sequence[Pair]) -> list[float]:
        """P(slot A wins) of each pair, read from the recorded verdicts."""
        return [self._lookup(pair) for pair in pairs]

    def _lookup(self, pair: Pair) -> float:
        key = (pair.item.id, pair.response_a, pair.response_b)
        if key in self._by_texts:
            return self._by_texts[key]
        swapped = (pair.item.id, pair.response_b, pair.response_a)
        if swapped in self._by_texts:
            return 1.0 - self._by_texts[swapped]
        if pair.item.id in self._by_item:
            return self._by_item[pair.item.id]
        raise InterpError(f"{self.path}: no recorded verdict for item {pair.item.id!r} with these two responses")


def verdict_lines(path: Path, what: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSONL file of verdicts or labels (`what` names them in the one-line errors)."""
    text = read_user_text(path, what, encoding="utf-8-sig")
    return jsonl_objects(text.splitlines(), where=lambda n: f"{path}:{n}")


def _read_recorded_verdicts(path: Path) -> tuple[dict[tuple[str, str, str], float], dict[str, float]]:
    lines = verdict_lines(path, "recorded verdicts")
    by_texts: dict[tuple[str, str, str], float] = {}
    by_item: dict[str, float] = {}
    first_line: dict[object, int] = {}
    for line_number, record in lines:
        where = f"{path}:{line_number}"
        item_id = record.get("item_id")
        if not isinstance(item_id, str) or not item_id:
            raise InterpError(f'{where}: missing field "item_id" (a non-empty string)')
        p_a = _recorded_probability(record, where)
        has_a, has_b = "response_a" in record, "response_b" in record
        if has_a != has_b:
            raise InterpError(f'{where}: give both "response_a" and "response_b", or neither')
        if has_a:
            if not isinstance(record["response_a"], str) or not isinstance(record["response_b"], str):
                raise InterpError(f'{where}: "response_a" and "response_b" must be strings')
            key: object = (item_id, record["response_a"], record["response_b"])
        else:
            key = item_id
        if key in first_line:
            raise InterpError(f'{where}: duplicate verdict for item "{item_id}" (first on line {first_line[key]})')
        first_line[key] = line_number
        if has_a:
            by_texts[(item_id, record["response_a"], record["response_b"])] = p_a
        else:
            by_item[item_id] = p_a
    if not first_line:
        raise InterpError(f"{path}: no recorded verdicts (the file is empty)")
    return by_texts, by_item


def _recorded_probability(record: Mapping[str, object], where: str) -> float:
    if ("p_a" in record) == ("winner" in record):
        raise InterpError(f'{where}: give exactly one of "p_a" (a probability) or "winner" ("A" or "B")')
    if "winner" in record:
        winner = record["winner"]
        verdicts = {"A": 1.0, "B": 0.0, "TIE": 0.5, "T": 0.5}
        if not isinstance(winner, str) or winner.strip().upper() not in verdicts:
            raise InterpError(f'{where}: "winner" must be "A", "B" or "tie", not {winner!r}')
        return verdicts[winner.strip().upper()]
    p_a = record["p_a"]
    if isinstance(p_a, bool) or not isinstance(p_a, (int, float)) or not 0.0 <= p_a <= 1.0:
        raise InterpError(f'{where}: "p_a" must be a number between 0 and 1, not {p_a!r}')
    return float(p_a)
