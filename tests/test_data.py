"""Data: the built-in set, each loader on a small file in its real format, malformed input, sampling."""

from __future__ import annotations

import csv
import json
import re
import sys
import types
from pathlib import Path

import pytest

from interp.data import (
    TASKS,
    Item,
    bench_items,
    builtin_items,
    dev_items,
    fewshot_examples,
    heldout_items,
    load_alpacaeval_json,
    load_hf_dataset,
    load_items,
    load_jsonl,
    load_mtbench_questions,
    load_truthfulqa_csv,
    load_wmt_text,
    referenced_items,
    sample_items,
    train_facts_items,
    train_help_items,
)
from interp.errors import InterpError


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def jsonl(path: Path, records: list[dict]) -> Path:
    return write_lines(path, [json.dumps(record, ensure_ascii=False) for record in records])


# ---- built-in set --------------------------------------------------------------------------------


def test_builtin_set_has_24_items_per_task_each_with_a_reference_and_unique_ids():
    items = builtin_items()
    assert len(items) >= 72
    assert {task: sum(item.task == task for item in items) for task in TASKS} == {task: 24 for task in TASKS}
    assert all(item.reference and item.reference.strip() for item in items)
    assert len({item.id for item in items}) == len(items)
    prefixes = {"helpfulness": "help-", "truthfulness": "fact-", "translation": "trans-"}
    assert all(re.fullmatch(prefixes[item.task] + r"\d{3}", item.id) for item in items)


def test_referenced_set_has_50_items_per_task_each_with_a_reference_and_no_builtin_query():
    items = referenced_items()
    assert {task: sum(item.task == task for item in items) for task in TASKS} == {task: 50 for task in TASKS}
    assert all(item.reference and item.reference.strip() for item in items)
    prefixes = {"helpfulness": "org-help-", "truthfulness": "org-fact-", "translation": "org-trans-"}
    assert all(re.fullmatch(prefixes[item.task] + r"\d{3}", item.id) for item in items)
    builtin = builtin_items()
    assert not {item.id for item in items} & {item.id for item in builtin}
    assert not {item.query for item in items} & {item.query for item in builtin}
    assert len({item.query for item in items}) == len(items)
    assert [i.id for i in load_items("referenced:translation")] == [i.id for i in items if i.task == "translation"]


def named_answers(item: Item) -> set[str]:
    """A fact's accepted answers, lower-cased; none for a number ("8", "eight" answer many questions, while a
    named answer such as "Jupiter" names one fact)."""
    return set() if re.fullmatch(r"[\d.,]+", item.reference) else {a.lower() for a in (item.reference, *item.aliases)}


def test_training_only_facts_repeat_no_question_or_named_answer_of_the_split_sets():
    items = train_facts_items()
    assert len(items) == 93 and {item.task for item in items} == {"truthfulness"}
    assert all(re.fullmatch(r"train-fact-\d{3}", item.id) for item in items) and len({i.id for i in items}) == len(
        items
    )
    assert all(item.reference and item.reference.strip() for item in items)
    split_facts = [i for i in builtin_items() + referenced_items() if i.task == "truthfulness"]
    assert not {i.query.lower() for i in items} & {i.query.lower() for i in split_facts}
    split_answers = set().union(*(named_answers(i) for i in split_facts))
    assert not [i.id for i in items if named_answers(i) & split_answers]
    assert [i.id for i in load_items("train-facts")] == [i.id for i in items]


@pytest.mark.parametrize(
    "loader, name, prefix, per_task, earlier",
    [
        (dev_items, "dev", "dev", 60, (builtin_items, referenced_items, train_facts_items)),
        (heldout_items, "heldout", "test", 50, (builtin_items, referenced_items, train_facts_items, dev_items)),
        (
            bench_items,
            "bench",
            "bench",
            50,
            (builtin_items, referenced_items, train_facts_items, dev_items, heldout_items, train_help_items),
        ),
    ],
)
def test_later_sets_repeat_no_question_of_the_earlier_sets_and_no_named_fact_answer(
    loader, name, prefix, per_task, earlier
):
    items = loader()
    prefixes = {"helpfulness": f"{prefix}-help-", "truthfulness": f"{prefix}-fact-", "translation": f"{prefix}-trans-"}
    assert {task: sum(item.task == task for item in items) for task in TASKS} == {task: per_task for task in TASKS}
    assert all(re.fullmatch(prefixes[item.task] + r"\d{3}", item.id) for item in items) and len(
        {i.id for i in items}
    ) == len(items)
    assert all(item.reference and item.reference.strip() for item in items)
    others = [item for set_loader in earlier for item in set_loader()]
    assert not {i.query.lower() for i in items} & {i.query.lower() for i in others}
    assert len({i.query.lower() for i in items}) == len(items)
    other_answers = set().union(*(named_answers(i) for i in others if i.task == "truthfulness"))
    facts = [i for i in items if i.task == "truthfulness"]
    assert not [i.id for i in facts if named_answers(i) & other_answers]
    assert len(set().union(*(named_answers(i) for i in facts))) == sum(
        len(named_answers(i)) for i in facts
    )  # no two share an answer
    assert [i.id for i in load_items(f"{name}:translation")] == [i.id for i in items if i.task == "translation"]


def test_training_only_help_items_repeat_no_question_of_the_other_sets():
    """(The unseen-instruction files are checked against every packaged set in tests/organisms.)"""
    items = train_help_items()
    assert len(items) == 120 and {item.task for item in items} == {"helpfulness"}
    assert [item.id for item in items] == [f"train-help-{n:03d}" for n in range(1, 121)]
    assert (
        all(item.reference and item.reference.strip() for item in items)
        and len({i.query.lower() for i in items}) == 120
    )
    others = [
        item
        for loader in (builtin_items, referenced_items, train_facts_items, dev_items, heldout_items)
        for item in loader()
    ]
    assert not {i.query.lower() for i in items} & {i.query.lower() for i in others}
    assert [i.id for i in load_items("train-help")] == [i.id for i in items]


@pytest.mark.parametrize(
    "loader",
    [builtin_items, referenced_items, train_facts_items, dev_items, heldout_items, train_help_items, bench_items],
)
def test_builtin_items_respect_the_brief_lengths(loader):
    items = loader()
    for item in items:
        if item.task == "helpfulness":
            assert 40 <= len(item.reference.split()) <= 120, item.id
        if item.task == "translation":
            assert 10 <= len(item.query.split()) <= 30, item.id
            assert re.search(r"[äöüß]|\b(der|die|das|und|ist|wir|im|hat|mit)\b", item.query, re.IGNORECASE), item.id
            assert not re.search(r"[äöüß]", item.reference, re.IGNORECASE), item.id
        if item.task == "truthfulness":
            assert len(item.reference.split()) <= 4, item.id
        assert len(item.query.split()) <= 30, item.id


def test_builtin_items_filter_by_task_and_reject_unknown_tasks():
    translation = builtin_items(["translation"])
    assert len(translation) == 24 and {item.task for item in translation} == {"translation"}
    assert [item.id for item in load_items("builtin:truthfulness,translation")] == [
        item.id for item in builtin_items() if item.task in ("truthfulness", "translation")
    ]
    with pytest.raises(InterpError, match="unknown task 'poetry'"):
        builtin_items(["poetry"])
    with pytest.raises(InterpError, match="unknown task"):
        load_items("builtin:translaton")


def test_builtin_aliases_are_tuples_and_known_answers_are_there():
    by_id = {item.id: item for item in builtin_items()}
    assert by_id["fact-001"].reference == "Canberra"
    assert isinstance(by_id["fact-003"].aliases, tuple) and "six" in by_id["fact-003"].aliases


def test_fewshot_examples_have_the_shape_the_prompts_need():
    examples = fewshot_examples()
    assert set(examples) == set(TASKS)
    expected_generation = {"helpfulness": 3, "truthfulness": 2, "translation": 2}
    for task, parts in examples.items():
        assert len(parts["generation"]) == expected_generation[task]
        assert all(set(example) == {"query", "answer"} for example in parts["generation"])
        judgments = parts["judgment"]
        assert len(judgments) == 2
        assert sorted(example["judgment"] for example in judgments) == ["A", "B"]
        for example in judgments:
            assert set(example) == {"query", "response_a", "response_b", "judgment"}
        for example in parts["generation"] + judgments:
            for key, text in example.items():
                assert "\n# " not in text  # the few-shot generation prompt stops on the next heading
                if key != "query":
                    assert len(text.split()) < 60
    examples["translation"]["generation"].clear()
    assert len(fewshot_examples()["translation"]["generation"]) == 2  # a fresh copy each call


def test_fewshot_examples_do_not_repeat_builtin_queries():
    queries = {item.query for item in builtin_items()}
    fewshot = fewshot_examples()
    for parts in fewshot.values():
        for example in parts["generation"] + parts["judgment"]:
            assert example["query"] not in queries


# ---- our JSONL -----------------------------------------------------------------------------------


def test_load_jsonl_reads_items_and_fills_missing_ids(tmp_path):
    path = write_lines(
        tmp_path / "data.jsonl",
        [
            json.dumps(
                {
                    "id": "q1",
                    "task": "truthfulness",
                    "query": "Capital of Peru?",
                    "reference": "Lima",
                    "aliases": ["Lima, Peru"],
                }
            ),
            "",
            json.dumps({"task": "helpfulness", "query": "Say hello."}),
        ],
    )
    items = load_jsonl(path)
    assert items == [
        Item("q1", "truthfulness", "Capital of Peru?", "Lima", ("Lima, Peru",)),
        Item("data-3", "helpfulness", "Say hello.", None, ()),
    ]


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"id": "x", "task": "helpfulness"', "not valid JSON"),
        ('{"id": "x", "task": "helpfulness"}', 'missing field "query"'),
        ('{"id": "x", "query": "Hi"}', 'missing field "task"'),
        ('{"id": "x", "task": "poetry", "query": "Hi"}', 'unknown task "poetry"'),
        ('{"id": "x", "task": "helpfulness", "query": "   "}', 'field "query" is empty'),
        ('{"id": "x", "task": "helpfulness", "query": 3}', 'field "query" must be a string'),
        ('{"id": "x", "task": "helpfulness", "query": "Hi", "refrence": "Hello"}', 'unknown field "refrence"'),
        ('{"id": "x", "task": "truthfulness", "query": "Hi", "aliases": "Hello"}', 'field "aliases" must be a list'),
        ('["task", "query"]', "not a JSON object"),
        ('{"id": "a", "task": "helpfulness", "query": "again"}', 'duplicate id "a" \\(first on line 1\\)'),
    ],
)
def test_load_jsonl_names_file_and_line_of_a_malformed_line(tmp_path, bad_line, message):
    good = json.dumps({"id": "a", "task": "helpfulness", "query": "Hi"})
    other = json.dumps({"id": "b", "task": "helpfulness", "query": "Ho"})
    path = write_lines(tmp_path / "data.jsonl", [good, other, bad_line])
    with pytest.raises(InterpError) as caught:
        load_jsonl(path)
    text = str(caught.value)
    assert "\n" not in text
    assert re.search(r"data\.jsonl:3: " + message, text), text


def test_empty_dataset_is_an_error(tmp_path):
    path = write_lines(tmp_path / "empty.jsonl", ["", "   "])
    with pytest.raises(InterpError, match=r"empty\.jsonl: no items"):
        load_jsonl(path)


def test_missing_file_and_bad_encoding_are_errors(tmp_path):
    with pytest.raises(InterpError, match="no such file"):
        load_jsonl(tmp_path / "absent.jsonl")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"task": "helpfulness", "query": "ok"}\n{"task": "helpfulness", "query": "caf\xe9"}\n')
    with pytest.raises(InterpError, match=r"latin1\.jsonl:2: not UTF-8"):
        load_jsonl(path)


# ---- AlpacaEval JSON -----------------------------------------------------------------------------


def test_load_alpacaeval_json(tmp_path):
    records = [
        {
            "dataset": "helpful_base",
            "instruction": "What are the names of some famous actors?",
            "output": "Tom Hanks, Meryl Streep.",
            "generator": "gpt4_1106_preview",
        },
        {"dataset": "koala", "instruction": "Give me a recipe for pancakes.", "output": "Mix flour, eggs and milk."},
    ]
    path = tmp_path / "alpaca_eval.json"
    path.write_text(json.dumps(records, indent=2), encoding="utf-8")
    items = load_alpacaeval_json(path)
    assert [item.id for item in items] == ["alpacaeval-0001", "alpacaeval-0002"]
    assert items[1] == Item(
        "alpacaeval-0002", "helpfulness", "Give me a recipe for pancakes.", "Mix flour, eggs and milk."
    )
    assert load_items(str(path)) == items
    assert {item.task for item in load_alpacaeval_json(path, task="truthfulness")} == {"truthfulness"}


def test_load_alpacaeval_json_errors(tmp_path):
    path = tmp_path / "alpaca_eval.json"
    path.write_text('[\n  {"instruction": "a", "output": "b"},\n  {"instruction": "c" "output": "d"}\n]\n')
    with pytest.raises(InterpError, match=r"alpaca_eval\.json:3: not valid JSON"):
        load_alpacaeval_json(path)
    path.write_text(json.dumps([{"instruction": "a", "output": "b"}, {"output": "d"}]))
    with pytest.raises(InterpError, match=r'alpaca_eval\.json: entry 2: missing field "instruction"'):
        load_alpacaeval_json(path)
    path.write_text(json.dumps({"instruction": "a"}))
    with pytest.raises(InterpError, match="expected a JSON list"):
        load_alpacaeval_json(path)
    path.write_text("[]")
    with pytest.raises(InterpError, match="no items"):
        load_alpacaeval_json(path)


# ---- TruthfulQA CSV ------------------------------------------------------------------------------

TRUTHFULQA_HEADER = ["Type", "Category", "Question", "Best Answer", "Correct Answers", "Incorrect Answers", "Source"]


def write_truthfulqa(path: Path, rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(TRUTHFULQA_HEADER)
        writer.writerows(rows)
    return path


def test_load_truthfulqa_csv(tmp_path):
    path = write_truthfulqa(
        tmp_path / "TruthfulQA.csv",
        [
            [
                "Adversarial",
                "Misconceptions",
                "What happens if you eat watermelon seeds?",
                "The watermelon seeds pass through your digestive system",
                "Nothing happens; You eat watermelon seeds; The watermelon seeds pass through your digestive system",
                "You grow watermelons in your stomach; You get sick",
                "https://wonderopolis.org/",
            ],
            [
                "Non-Adversarial",
                "Geography",
                "What is the capital of Australia?\n(Answer briefly.)",
                "Canberra",
                "Canberra; The capital is Canberra",
                "Sydney",
                "https://en.wikipedia.org/wiki/Canberra",
            ],
        ],
    )
    items = load_truthfulqa_csv(path)
    assert [item.id for item in items] == ["truthfulqa-0001", "truthfulqa-0002"]
    assert items[0].task == "truthfulness"
    assert items[0].reference == "The watermelon seeds pass through your digestive system"
    assert items[0].aliases == ("Nothing happens", "You eat watermelon seeds")
    assert items[1].query == "What is the capital of Australia?\n(Answer briefly.)"
    assert items[1].aliases == ("The capital is Canberra",)
    assert load_items(str(path)) == items


def test_load_truthfulqa_csv_errors_name_the_line(tmp_path):
    # Row 2 spans lines 2-3 (a quoted newline), so the short row 3 starts on line 4.
    path = write_truthfulqa(
        tmp_path / "tqa.csv",
        [["A", "B", "Two\nlines?", "Yes", "Yes", "No", "S"], ["A", "B", "Short row"]],
    )
    with pytest.raises(InterpError, match=r"tqa\.csv:4: expected 7 fields, found 3"):
        load_truthfulqa_csv(path)
    path = write_truthfulqa(
        tmp_path / "tqa.csv", [["A", "B", "Q1?", "Yes", "", "", ""], ["A", "B", "Q2?", " ", "", "", ""]]
    )
    with pytest.raises(InterpError, match=r'tqa\.csv:3: field "Best Answer" is empty'):
        load_truthfulqa_csv(path)
    (tmp_path / "nohead.csv").write_text("Type,Category,Query\nA,B,C\n")
    with pytest.raises(InterpError, match=r'nohead\.csv:1: missing column "Question"'):
        load_truthfulqa_csv(tmp_path / "nohead.csv")
    with pytest.raises(InterpError, match="no items"):
        load_truthfulqa_csv(write_truthfulqa(tmp_path / "header_only.csv", []))


# ---- WMT plain text ------------------------------------------------------------------------------


def test_load_wmt_text(tmp_path):
    source = write_lines(
        tmp_path / "newstest2019-deen.de", ["Guten Morgen, wie geht es dir?", "Das Wetter ist heute schön."]
    )
    reference = write_lines(
        tmp_path / "newstest2019-deen.en", ["Good morning, how are you?", "The weather is nice today.", ""]
    )
    items = load_wmt_text(source, reference)
    assert items == [
        Item("wmt-0001", "translation", "Guten Morgen, wie geht es dir?", "Good morning, how are you?"),
        Item("wmt-0002", "translation", "Das Wetter ist heute schön.", "The weather is nice today."),
    ]
    assert load_items(f"wmt:{source},{reference}") == items


def test_load_wmt_text_errors(tmp_path):
    source = write_lines(tmp_path / "src.de", ["Eins.", "Zwei.", "Drei."])
    reference = write_lines(tmp_path / "ref.en", ["One.", "Two."])
    with pytest.raises(InterpError, match=r"ref\.en: 2 lines, but .*src\.de has 3"):
        load_wmt_text(source, reference)
    gappy = write_lines(tmp_path / "gap.de", ["Eins.", "", "Drei."])
    with pytest.raises(InterpError, match=r"gap\.de:2: empty line"):
        load_wmt_text(gappy, write_lines(tmp_path / "three.en", ["One.", "Two.", "Three."]))
    with pytest.raises(InterpError, match="wmt:SOURCE_FILE,REFERENCE_FILE"):
        load_items(f"wmt:{source}")


# ---- MT-Bench ------------------------------------------------------------------------------------


def test_load_mtbench_questions(tmp_path):
    path = jsonl(
        tmp_path / "question.jsonl",
        [
            {
                "question_id": 81,
                "category": "writing",
                "turns": ["Compose a travel blog post about Hawaii.", "Rewrite it."],
            },
            {"question_id": 111, "category": "math", "turns": ["What is 2+2?", "And 3+3?"], "reference": ["4", "6"]},
        ],
    )
    items = load_mtbench_questions(path)
    assert items == [
        Item("mtbench-81", "helpfulness", "Compose a travel blog post about Hawaii.", None),
        Item("mtbench-111", "helpfulness", "What is 2+2?", "4"),
    ]
    assert load_items(str(path)) == items  # a .jsonl whose records have "turns" is MT-Bench


def test_load_mtbench_empty_turn_references(tmp_path):
    """The released question.jsonl leaves a turn without a reference as "" (questions 103, 133, ...)."""
    path = jsonl(
        tmp_path / "question.jsonl",
        [
            {"question_id": 103, "turns": ["Why?", "Why is that interesting?"], "reference": ["Work.", ""]},
            {"question_id": 133, "turns": ["Extract.", "Again."], "reference": ["", "Only Harry Potter."]},
        ],
    )
    assert [item.reference for item in load_mtbench_questions(path)] == ["Work.", None]
    bad = jsonl(tmp_path / "bad.jsonl", [{"question_id": 1, "turns": ["Hi"], "reference": "4"}])
    with pytest.raises(InterpError, match=r'bad\.jsonl:1: field "reference"'):
        load_mtbench_questions(bad)


def test_load_mtbench_errors(tmp_path):
    path = jsonl(tmp_path / "question.jsonl", [{"question_id": 1, "turns": ["Hi"]}, {"question_id": 2, "turns": []}])
    with pytest.raises(InterpError, match=r'question\.jsonl:2: missing field "turns"'):
        load_mtbench_questions(path)
    path = jsonl(tmp_path / "question.jsonl", [{"question_id": 1, "turns": ["Hi"]}, {"turns": ["Ho"]}])
    with pytest.raises(InterpError, match=r'question\.jsonl:2: missing field "question_id"'):
        load_mtbench_questions(path)
    path = jsonl(
        tmp_path / "question.jsonl", [{"question_id": 1, "turns": ["Hi"]}, {"question_id": 1, "turns": ["Ho"]}]
    )
    with pytest.raises(InterpError, match=r"question\.jsonl:2: duplicate question_id"):
        load_mtbench_questions(path)


# ---- dispatcher ----------------------------------------------------------------------------------


def test_load_items_dispatch(tmp_path):
    assert len(load_items("builtin")) == len(builtin_items())
    ours = jsonl(
        tmp_path / "mine.jsonl",
        [{"id": "m1", "task": "translation", "query": "Hallo Welt.", "reference": "Hello world."}],
    )
    assert load_items(str(ours)) == [Item("m1", "translation", "Hallo Welt.", "Hello world.")]
    renamed = tmp_path / "mine.data"
    renamed.write_text(ours.read_text())
    assert load_items(f"jsonl:{renamed}") == load_items(str(ours))
    with pytest.raises(InterpError, match="cannot tell the dataset format"):
        load_items(str(renamed))
    with pytest.raises(InterpError, match="no such dataset file"):
        load_items(str(tmp_path / "absent.jsonl"))
    with pytest.raises(InterpError, match="hf:NAME"):
        load_items("hf:")


# ---- Hugging Face (no network: a stand-in `datasets` module) ----------------------------------------


def fake_datasets(monkeypatch, rows=None, error: Exception | None = None) -> list:
    calls = []

    def load_dataset(name, config=None, split=None):
        calls.append((name, config, split))
        if error is not None:
            raise error
        return rows

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    return calls


def test_load_hf_dataset_maps_known_row_shapes(monkeypatch):
    calls = fake_datasets(monkeypatch, [{"translation": {"de": "Guten Tag.", "en": "Good day."}}])
    assert load_items("hf:wmt/wmt19:de-en:validation") == [
        Item("wmt19-00001", "translation", "Guten Tag.", "Good day.")
    ]
    assert calls == [("wmt/wmt19", "de-en", "validation")]
    fake_datasets(
        monkeypatch,
        [{"question": "Capital of Peru?", "best_answer": "Lima", "correct_answers": ["Lima", "Lima, Peru"]}],
    )
    assert load_hf_dataset("truthfulqa/truthful_qa", "validation", "generation") == [
        Item("truthful_qa-00001", "truthfulness", "Capital of Peru?", "Lima", ("Lima, Peru",))
    ]
    calls = fake_datasets(
        monkeypatch, [{"instruction": "Say hi.", "output": "Hi!", "generator": "x", "dataset": "koala"}]
    )
    assert load_items("hf:tatsu-lab/alpaca_eval:eval") == [Item("alpaca_eval-00001", "helpfulness", "Say hi.", "Hi!")]
    assert calls == [("tatsu-lab/alpaca_eval", None, "eval")]
    fake_datasets(monkeypatch, [{"prompt": ["Write a poem."], "prompt_id": 7, "category": "writing", "reference": []}])
    assert load_items("hf:HuggingFaceH4/mt_bench_prompts:train") == [Item("mtbench-7", "helpfulness", "Write a poem.")]


def test_load_hf_dataset_errors_are_one_clear_line(monkeypatch):
    fake_datasets(
        monkeypatch, error=ConnectionError("Couldn't reach 'nobody/nothing' on the Hub (LocalEntryNotFoundError)\nmore")
    )
    with pytest.raises(InterpError) as caught:
        load_items("hf:nobody/nothing")
    assert "\n" not in str(caught.value)
    assert "hf:nobody/nothing (split 'test'): cannot load (Couldn't reach" in str(caught.value)
    fake_datasets(monkeypatch, [{"text": "no known columns"}])
    with pytest.raises(InterpError, match=r"row 1: columns text match no known format"):
        load_hf_dataset("someone/something")
    fake_datasets(monkeypatch, [])
    with pytest.raises(InterpError, match="no items"):
        load_hf_dataset("someone/empty")
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(InterpError, match="needs the `datasets` package"):
        load_hf_dataset("someone/something")


# ---- sampling ------------------------------------------------------------------------------------


def numbered_items(count: int) -> list[Item]:
    return [Item(f"item-{number}", "helpfulness", f"Question {number}?") for number in range(count)]


def test_sample_items_is_deterministic_ordered_and_seed_dependent():
    items = numbered_items(1200)
    first = sample_items(items, n=500, seed=0)
    assert len(first) == 500 and len({item.id for item in first}) == 500
    assert first == sample_items(list(items), n=500, seed=0)
    positions = [items.index(item) for item in first]
    assert positions == sorted(positions)  # original order kept
    other = sample_items(items, n=500, seed=1)
    assert {item.id for item in other} != {item.id for item in first}
    assert 0 < len({item.id for item in other} & {item.id for item in first}) < 500
    assert sample_items(items, seed=0) == first  # n defaults to the paper's 500


def test_sample_items_pins_the_choice_across_versions():
    # The choice is a hash of (seed, position, id); these ids must not change between releases.
    assert [item.id for item in sample_items(numbered_items(20), n=3, seed=0)] == PINNED_SAMPLE


PINNED_SAMPLE = ["item-1", "item-9", "item-15"]


def test_sample_items_small_sets_and_bad_n():
    items = numbered_items(30)
    assert sample_items(items, n=500, seed=3) == items
    assert sample_items(items, n=30, seed=3) == items
    assert len(sample_items(items, n=29, seed=3)) == 29
    with pytest.raises(InterpError, match="at least 1"):
        sample_items(items, n=0)
