"""The bench's fresh item set (`load_items("bench")`): its shape, no near-repeat of another shipped question, the
hash the plan registered, and no organism config that could train or choose on it."""

from __future__ import annotations

import hashlib
import re

import pytest

from interp.config import validate_config
from interp.data import PACKAGED_SETS, TASKS, bench_items, fewshot_examples, load_items
from interp.errors import InterpError
from interp.organisms.config import OrganismConfig
from interp.organisms.evaluate import UNSEEN_FILE
from tests.helpers import REPO

BENCH_FILE = REPO / "interp" / "builtin" / "bench.jsonl"
PREFIXES = {"helpfulness": "bench-help", "truthfulness": "bench-fact", "translation": "bench-trans"}


def normalised(text: str) -> str:
    """Lower case, punctuation dropped, one space between words."""
    return " ".join(re.findall(r"\w+", text.lower()))


def jaccard(a: str, b: str) -> float:
    """Word-set overlap of two texts after `normalised`."""
    left, right = set(normalised(a).split()), set(normalised(b).split())
    return len(left & right) / len(left | right) if left | right else 1.0


def other_queries() -> list[str]:
    """Every question of the other shipped sets, of the unseen-instruction files and of the few-shot examples."""
    items = [item for name, load in PACKAGED_SETS.items() if name != "bench" for item in load(None)]
    for path in (UNSEEN_FILE, REPO / "experiments" / "organisms" / "unseen_choice_32.json"):
        items += load_items(f"alpacaeval:{path}")
    fewshot = [example["query"] for parts in fewshot_examples().values() for kind in parts.values() for example in kind]
    return [item.query for item in items] + fewshot


def named_answers(reference: str, aliases: tuple[str, ...]) -> set[str]:
    """A fact's accepted answers, lower-cased; none for a number (a number answers many questions)."""
    return set() if re.fullmatch(r"[\d.,]+", reference) else {a.lower() for a in (reference, *aliases)}


def test_bench_has_50_items_per_task_with_ordered_unique_ids_and_references():
    items = bench_items()
    assert [item.id for item in items] == [f"{PREFIXES[t]}-{n:03d}" for t in TASKS for n in range(1, 51)]
    assert all(item.reference and item.reference.strip() for item in items)
    assert all(item.aliases == () for item in items if item.task != "truthfulness")
    assert len({normalised(item.query) for item in items}) == len(items)
    assert [i.id for i in load_items("bench")] == [i.id for i in items]
    assert [i.id for i in load_items("bench:translation")] == [i.id for i in items if i.task == "translation"]


def test_no_bench_question_repeats_or_nearly_repeats_another_shipped_question():
    others = other_queries()
    assert len(others) > 700  # the six other sets, the two unseen files and the few-shot examples were read
    taken = {normalised(query) for query in others}
    bench = bench_items()
    assert not [item.id for item in bench if normalised(item.query) in taken]
    near = [(item.id, other) for item in bench for other in others if jaccard(item.query, other) > 0.7]
    assert not near, near[:5]


def test_no_bench_fact_shares_a_named_answer_with_another_set_or_another_bench_fact():
    facts = [item for item in bench_items() if item.task == "truthfulness"]
    others = [item for name, load in PACKAGED_SETS.items() if name != "bench" for item in load(["truthfulness"])]
    taken = set().union(*(named_answers(i.reference, i.aliases) for i in others))
    assert not [i.id for i in facts if named_answers(i.reference, i.aliases) & taken]
    answers = [named_answers(i.reference, i.aliases) for i in facts]
    assert len(set().union(*answers)) == sum(len(a) for a in answers)


def test_the_near_repeat_check_catches_a_reworded_question():
    assert jaccard("What is the capital city of Turkey?", "What is the capital of Turkey?") > 0.7
    assert jaccard("Which metal's chemical symbol is Pb?", "Which chemical element has the symbol S?") < 0.7


def test_the_file_is_the_one_whose_hash_the_plan_and_the_docs_registered():
    digest = hashlib.sha256(BENCH_FILE.read_bytes()).hexdigest()
    for doc in ("docs/organisms.md", "experiments/records/plan.md"):
        assert digest in (REPO / doc).read_text(encoding="utf-8"), doc


@pytest.mark.parametrize(
    "section, field",
    [
        ({"split": {"items": ["builtin", "bench"]}}, r"split\.items\.1"),
        ({"split": {"test_only": ["bench"]}}, r"split\.test_only\.0"),
        ({"data": {"train_only": ["bench"]}}, r"data\.train_only\.0"),
    ],
)
def test_no_organism_config_can_train_split_or_choose_on_the_bench_items(section, field):
    with pytest.raises(InterpError, match=field):
        validate_config(OrganismConfig, {"name": "x", **section}, "organism.toml")
