"""Gold judges: the reference verdicts that DBG subtracts from a judge's self-preference (DESIGN.md 1.3, 5).

A gold judge is anything with a `name` and `p_first(pairs) -> [P(response_a is better)]`. Judges without
probabilities answer 1.0 / 0.0 (and 0.5 for an exact tie); `aggregate_gold` averages over judges per pair,
as the paper does. This module holds the reference-based and recorded judges; model and HTTP judges plug
in by implementing the same protocol.

Reference-based scores (`reference_score`), an offline stand-in for strong judges, not a quality verdict:

- translation: sentence chrF (sacrebleu's CHRF, character 6-grams, beta 2) against the reference, / 100.
- truthfulness: answer match. Texts are normalised (lowercase, Unicode NFKC, commas inside numbers dropped,
  other punctuation turned into spaces so "Austen's" still contains "austen", the articles a/an/the
  dropped, whitespace collapsed). If the normalised reference or any alias occurs in the
  normalised response as a whole-word sequence, the score is 1.0; otherwise it is the best token F1 (SQuAD
  style, bag of words) between the response and the reference or an alias, which is below 1 except for a
  reordering of the same words. A response that names the right answer among wrong ones still matches.
- helpfulness: chrF against the reference answer, / 100, times the share of distinct word trigrams in the
  response (1.0 for ordinary text, near 0 when one phrase is repeated); a response of fewer than 3 words
  scores 0. This measures closeness to one good answer plus a degeneracy penalty; a different but equally
  good answer scores lower, and chrF's recall weighting favours longer answers.
"""

from __future__ import annotations

import json
import math
import re
import string
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Protocol, Sequence, runtime_checkable

from sacrebleu.metrics import CHRF

from interp.data import Item
from interp.errors import InterpError

# Scores closer than this count as a tie (chrF is a float; equal texts can differ in the last bits).
_TIE_TOLERANCE = 1e-9
_MIN_HELPFUL_WORDS = 3
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans({char: " " for char in string.punctuation + "“”‘’«»„‚–—…·°"})
_DIGIT_GROUP_COMMA = re.compile(r"(?<=\d),(?=\d{3}\b)")


@dataclass(frozen=True)
class Pair:
    """Two responses to one item; slot A is `response_a`."""

    item: Item
    response_a: str
    response_b: str


@runtime_checkable
class GoldJudge(Protocol):
    name: str

    def p_first(self, pairs: Sequence[Pair]) -> list[float]:
        """P(response_a is better) per pair, in [0, 1]."""
        ...


def verdict(score_a: float, score_b: float) -> float:
    """1.0 if A scores higher, 0.0 if B does, 0.5 for a tie."""
    if score_a > score_b + _TIE_TOLERANCE:
        return 1.0
    if score_b > score_a + _TIE_TOLERANCE:
        return 0.0
    return 0.5


# ---- reference-based judge ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ReferenceJudge:
    """Compares each response with the item's reference answer; see the module docstring for the scores."""

    name: str = "reference"

    def p_first(self, pairs: Sequence[Pair]) -> list[float]:
        chrf = CHRF()
        return [
            verdict(reference_score(pair.item, pair.response_a, chrf), reference_score(pair.item, pair.response_b, chrf))
            for pair in pairs
        ]


def reference_score(item: Item, response: str, chrf: CHRF | None = None) -> float:
    """How close `response` is to `item.reference`, in [0, 1] (rule per task in the module docstring)."""
    if not item.reference:
        raise InterpError(f"item {item.id!r} has no reference answer; the reference judge needs one")
    chrf = chrf or CHRF()
    if item.task == "translation":
        return _chrf(chrf, response, item.reference)
    if item.task == "truthfulness":
        return answer_match_score(response, (item.reference, *item.aliases))
    if item.task == "helpfulness":
        if len(response.split()) < _MIN_HELPFUL_WORDS:
            return 0.0
        return _chrf(chrf, response, item.reference) * distinct_trigram_ratio(response)
    raise InterpError(f"item {item.id!r}: the reference judge has no score for task {item.task!r}")


def normalize_answer(text: str) -> str:
    """Lowercase, NFKC, digit-group commas dropped ("1,440" -> "1440"), other punctuation -> space, no articles."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _DIGIT_GROUP_COMMA.sub("", text).translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_match_score(response: str, accepted: Sequence[str]) -> float:
    """1.0 if an accepted answer occurs in the response as whole words (after normalisation), else best token F1."""
    response_tokens = normalize_answer(response).split()
    accepted_tokens = [tokens for tokens in (normalize_answer(answer).split() for answer in accepted) if tokens]
    if not accepted_tokens:
        raise InterpError("no accepted answer left after normalisation (reference and aliases are empty)")
    if any(_contains(response_tokens, tokens) for tokens in accepted_tokens):
        return 1.0
    return max(token_f1(response_tokens, tokens) for tokens in accepted_tokens)


def token_f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """Bag-of-words F1 between two token lists."""
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def distinct_trigram_ratio(text: str) -> float:
    """Distinct word trigrams / all word trigrams (lowercased); 1.0 for texts shorter than three words."""
    words = text.lower().split()
    trigrams = list(zip(words, words[1:], words[2:]))
    return len(set(trigrams)) / len(trigrams) if trigrams else 1.0


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    width = len(needle)
    return any(list(haystack[start : start + width]) == list(needle) for start in range(len(haystack) - width + 1))


def _chrf(chrf: CHRF, response: str, reference: str) -> float:
    if not response.strip():
        return 0.0
    return chrf.sentence_score(response, [reference]).score / 100.0


# ---- recorded verdicts -------------------------------------------------------------------------------


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

    def p_first(self, pairs: Sequence[Pair]) -> list[float]:
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


def _read_recorded_verdicts(path: Path) -> tuple[dict[tuple[str, str, str], float], dict[str, float]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InterpError(f"{path}: no such file of recorded verdicts") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InterpError(f"{path}: cannot read recorded verdicts ({exc})") from None
    by_texts: dict[tuple[str, str, str], float] = {}
    by_item: dict[str, float] = {}
    first_line: dict[object, int] = {}
    for line_number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{line_number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InterpError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise InterpError(f"{where}: not a JSON object")
        item_id = record.get("item_id")
        if not isinstance(item_id, str) or not item_id:
            raise InterpError(f"{where}: missing field \"item_id\" (a non-empty string)")
        p_a = _recorded_probability(record, where)
        has_a, has_b = "response_a" in record, "response_b" in record
        if has_a != has_b:
            raise InterpError(f"{where}: give both \"response_a\" and \"response_b\", or neither")
        if has_a:
            if not isinstance(record["response_a"], str) or not isinstance(record["response_b"], str):
                raise InterpError(f"{where}: \"response_a\" and \"response_b\" must be strings")
            key: object = (item_id, record["response_a"], record["response_b"])
        else:
            key = item_id
        if key in first_line:
            raise InterpError(f"{where}: duplicate verdict for item \"{item_id}\" (first on line {first_line[key]})")
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
        raise InterpError(f"{where}: give exactly one of \"p_a\" (a probability) or \"winner\" (\"A\" or \"B\")")
    if "winner" in record:
        winner = record["winner"]
        verdicts = {"A": 1.0, "B": 0.0, "TIE": 0.5, "T": 0.5}
        if not isinstance(winner, str) or winner.strip().upper() not in verdicts:
            raise InterpError(f"{where}: \"winner\" must be \"A\", \"B\" or \"tie\", not {winner!r}")
        return verdicts[winner.strip().upper()]
    p_a = record["p_a"]
    if isinstance(p_a, bool) or not isinstance(p_a, (int, float)) or not 0.0 <= p_a <= 1.0:
        raise InterpError(f"{where}: \"p_a\" must be a number between 0 and 1, not {p_a!r}")
    return float(p_a)


# ---- running and aggregating -------------------------------------------------------------------------


def run_gold(judges: Sequence[GoldJudge], pairs: Sequence[Pair]) -> dict[str, list[float]]:
    """Each judge's P(first wins) per pair, keyed by judge name, checked for length and range."""
    if not judges:
        raise InterpError("no gold judge configured")
    per_judge: dict[str, list[float]] = {}
    for judge in judges:
        if judge.name in per_judge:
            raise InterpError(f"two gold judges are named {judge.name!r}; give each a distinct name")
        probabilities = [float(p) for p in judge.p_first(pairs)]
        if len(probabilities) != len(pairs):
            raise InterpError(f"gold judge {judge.name!r} returned {len(probabilities)} verdicts for {len(pairs)} pairs")
        per_judge[judge.name] = probabilities
    aggregate_gold(per_judge)  # validates the range
    return per_judge


def aggregate_gold(per_judge: Mapping[str, Sequence[float]]) -> list[float]:
    """Mean over judges of P(first wins), per pair (paper: judges without probabilities count 1.0 / 0.0)."""
    if not per_judge:
        raise InterpError("no gold judge verdicts to aggregate")
    lengths = {name: len(values) for name, values in per_judge.items()}
    if len(set(lengths.values())) != 1:
        raise InterpError(f"gold judges disagree on the number of pairs: {lengths}")
    for name, values in per_judge.items():
        for index, value in enumerate(values):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= 1.0):
                raise InterpError(f"gold judge {name!r}, pair {index}: P(first wins) must be in [0, 1], got {value!r}")
    columns = list(per_judge.values())
    return [sum(column[index] for column in columns) / len(columns) for index in range(len(columns[0]))]
