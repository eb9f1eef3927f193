"""The reference-based gold judge: each response compared with the item's reference answer.

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

import re
import string
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from sacrebleu.metrics import CHRF

from interp.data import Item
from interp.errors import InterpError
from interp.run.gold.protocol import Pair, verdict

_MIN_HELPFUL_WORDS = 3
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans({char: " " for char in string.punctuation + "“”‘’«»„‚–—…·°"})
_DIGIT_GROUP_COMMA = re.compile(r"(?<=\d),(?=\d{3}\b)")


@dataclass(frozen=True)
class ReferenceJudge:
    """Compares each response with the item's reference answer; see the module docstring for the scores."""

    name: str = "reference"

    def check_items(self, items: Sequence[Item]) -> None:
        """Every item needs a reference answer (and a task with a score): checked before a run writes anything."""
        missing = [item.id for item in items if not (item.reference or "").strip()]
        if missing:
            shown = ", ".join(repr(i) for i in missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise InterpError(
                f"{len(missing)} of the run's {len(items)} items have no reference answer ({shown}); the "
                "reference gold "
                "judge needs one: add `reference` to those items, or set gold.reference = false"
            )
        unscored = sorted({item.task for item in items} - {"translation", "truthfulness", "helpfulness"})
        if unscored:
            raise InterpError(f"the reference judge has no score for task {unscored[0]!r}; set gold.reference = false")

    def p_slot_a(self, pairs: Sequence[Pair]) -> list[float]:
        """P(slot A wins) of each pair, from how close each answer is to the item's reference (`reference_score`)."""
        chrf = CHRF()
        return [
            verdict(
                reference_score(pair.item, pair.response_a, chrf), reference_score(pair.item, pair.response_b, chrf)
            )
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
    trigrams = list(zip(words, words[1:], words[2:], strict=False))
    return len(set(trigrams)) / len(trigrams) if trigrams else 1.0


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    width = len(needle)
    return any(list(haystack[start : start + width]) == list(needle) for start in range(len(haystack) - width + 1))


def _chrf(chrf: CHRF, response: str, reference: str) -> float:
    if not response.strip():
        return 0.0
    return chrf.sentence_score(response, [reference]).score / 100.0
