"""Instructions to answer and judge: the built-in set, loaders for the paper's datasets, and sampling.

Every loader returns `list[Item]`. Malformed input raises `InterpError` with one line that names the file,
the line (JSONL, CSV, plain text) or entry (JSON list, HF row) and what is wrong; an empty dataset is an
error too, so a run never silently judges nothing.

Formats (DBG paper, seed 000 section 3: AlpacaEval, TruthfulQA, WMT19 de-en; plus MT-Bench):
- our JSONL: `{"id", "task", "query", "reference"?, "aliases"?}` per line, and `tests` (code) (`load_jsonl`);
- AlpacaEval JSON: a list of `{"instruction", "output", "dataset"?, ...}` (`load_alpacaeval_json`);
- TruthfulQA CSV: Type, Category, Question, Best Answer, Correct Answers, ... (`load_truthfulqa_csv`);
- WMT19-style parallel text: a source file and a reference file, one sentence a line (`load_wmt_text`);
- MT-Bench `question.jsonl`: `{"question_id", "category", "turns", "reference"?}` (`load_mtbench_questions`);
- a Hugging Face dataset in any of the above shapes, when online or cached (`load_hf_dataset`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from interp.errors import InterpError
from interp.raw_data import RecordError, message_line, optional_text, read_text, required_text, string_list, text_lines
from interp.storage import jsonl_objects

TASKS = ("helpfulness", "truthfulness", "translation")

TESTS_FIELD = "tests"  # an item's code that checks an answer: data, not the repository's folder of that name
_ITEM_FIELDS = ("id", "task", "query", "reference", "aliases", TESTS_FIELD)
_TRUTHFULQA_REQUIRED = ("Question", "Best Answer")


@dataclass(frozen=True)
class Item:
    """One instruction: what the models answer (`query`) and what reference-based gold judges compare with."""

    id: str
    task: str
    query: str
    reference: str | None = None
    aliases: tuple[str, ...] = ()  # other accepted answers (factual QA); the reference itself is not repeated
    tests: tuple[str, ...] = ()  # code that checks an answer (assert lines), for the code grader

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise InterpError(f"item {self.id!r}: unknown task {self.task!r}; use one of {', '.join(TASKS)}")
        object.__setattr__(self, "aliases", tuple(self.aliases))
        object.__setattr__(self, TESTS_FIELD, tuple(self.tests))

    def record(self) -> dict:
        """The item as a line of our JSONL (a run's `items.jsonl`); without tests, the line it had before tests."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items() if k != TESTS_FIELD or v}


# ---- the built-in set -----------------------------------------------------------------------------


def builtin_items(tasks: Sequence[str] | None = None) -> list[Item]:
    """The instruction set shipped with the package (24 items per task), optionally only some tasks.

    >>> items = interp.builtin_items()
    >>> len(items), items[0].task
    (72, 'helpfulness')
    """
    return _packaged_items("instructions.jsonl", tasks)


def referenced_items(tasks: Sequence[str] | None = None) -> list[Item]:
    """A second shipped set, 50 items per task with references (ids `org-help-`, `org-fact-`, `org-trans-`), for
    the model organisms: enough intact training pairs, and test items for a DBG interval that can exclude 0."""
    return _packaged_items("referenced.jsonl", tasks)


def train_facts_items(tasks: Sequence[str] | None = None) -> list[Item]:
    """A third shipped set, training data only: 93 short-answer facts with references and aliases (ids
    `train-fact-`), for intact fact pairs of the test split's kind. No question, and no answer other than a
    number, repeats one of the other two sets' facts (`[data] train_only`; never split, not in the demo)."""
    return _packaged_items("train_facts.jsonl", tasks)


def dev_items(tasks: Sequence[str] | None = None) -> list[Item]:
    """A fourth shipped set, for choosing between organism recipes only: 60 items per task with references
    (ids `dev-help-`, `dev-fact-`, `dev-trans-`), none repeating a question of the other sets and no fact a
    named answer of theirs. Recipes are compared on it and the selection split (`recipe_choice.md`); nothing
    trains on it, no split holds it, the demo does not use it."""
    return _packaged_items("dev.jsonl", tasks)


def heldout_items(tasks: Sequence[str] | None = None) -> list[Item]:
    """A fifth shipped set, test data only: 50 items per task with references (ids `test-help-`, `test-fact-`,
    `test-trans-`), written after the organisms were shipped so that their test split has enough legitimate
    pairs to read the legitimate-pair bar (`experiments/organisms/recipe_choice.md`). Organisms put all of it in
    the test split (`[split] test_only`); nothing trains or chooses on it, the demo does not use it."""
    return _packaged_items("heldout.jsonl", tasks)


def train_help_items(tasks: Sequence[str] | None = None) -> list[Item]:
    """A sixth shipped set, training data only: 120 how-to questions with references (ids `train-help-`), none
    repeating a question of another set, for more intact helpfulness pairs (`[data] train_only`; never split)."""
    return _packaged_items("train_help.jsonl", tasks)


def bench_items(tasks: Sequence[str] | None = None) -> list[Item]:
    """A seventh shipped set, bench data only: 50 items per task with references (ids `bench-help-`, `bench-fact-`,
    `bench-trans-`), written on 2026-12-02 for the bench's causal test (issue 78) and never read in development,
    none repeating a question of another set or a named fact answer. No recipe, split or rule uses it: the organism
    configs cannot name it (`SplitConfig`, `DataConfig`); its sha256 is in docs/organisms.md and the plan."""
    return _packaged_items("bench.jsonl", tasks)


PACKAGED_SETS: dict[str, Callable[[Sequence[str] | None], list[Item]]] = {
    "builtin": builtin_items,
    "referenced": referenced_items,
    "train-facts": train_facts_items,
    "dev": dev_items,
    "heldout": heldout_items,
    "train-help": train_help_items,
    "bench": bench_items,
}


def _packaged_items(filename: str, tasks: Sequence[str] | None) -> list[Item]:
    wanted = _check_tasks(tasks) if tasks is not None else TASKS
    text = resources.files("interp").joinpath("builtin", filename).read_text(encoding="utf-8")
    items = _items_from_jsonl_text(text, f"interp/builtin/{filename}")
    return [item for item in items if item.task in wanted]


def fewshot_examples() -> dict:
    """Few-shot examples for pre-trained models: `{task: {"generation": [...], "judgment": [...]}}`.

    A fresh dict on every call, so a caller may modify it without affecting anyone else.
    """
    text = resources.files("interp").joinpath("builtin", "fewshot.json").read_text(encoding="utf-8")
    return json.loads(text)


def _check_tasks(tasks: Sequence[str]) -> tuple[str, ...]:
    if isinstance(tasks, str):
        tasks = [tasks]
    unknown = [task for task in tasks if task not in TASKS]
    if unknown:
        raise InterpError(f"unknown task {unknown[0]!r}; use one of {', '.join(TASKS)}")
    if not tasks:
        raise InterpError("no task selected; use one or more of " + ", ".join(TASKS))
    return tuple(tasks)


# ---- file loaders ----------------------------------------------------------------------------------


def load_jsonl(path: str | Path) -> list[Item]:
    """Our own format: one JSON object a line with `task` and `query` (required), `id`, `reference`, `aliases`.

    A line without `id` gets `<file stem>-<line number>`. Unknown fields are an error, so a typo such as
    "refrence" does not silently drop the reference. Blank lines are skipped.
    """
    path = Path(path)
    return _items_from_jsonl_text(read_text(path), str(path), default_id_prefix=path.stem)


def load_alpacaeval_json(path: str | Path, task: str = "helpfulness") -> list[Item]:
    """AlpacaEval's evaluation set: a JSON list of `{"instruction", "output", "dataset"?, "generator"?}`.

    `output` (the AlpacaEval reference answer) becomes the reference; ids are `alpacaeval-0001`, ... in file
    order, because AlpacaEval entries carry none.
    """
    path = Path(path)
    _check_tasks([task])
    text = read_text(path)
    try:
        records = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InterpError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(records, list):
        raise InterpError(f'{path}: expected a JSON list of objects with "instruction" and "output"')
    items = []
    for index, record in enumerate(records):
        try:
            items.append(_alpaca_item(record, f"alpacaeval-{index + 1:04d}", task))
        except RecordError as exc:
            raise InterpError(f"{path}: entry {index + 1}: {exc}") from None
    return _non_empty(items, str(path))


def load_truthfulqa_csv(path: str | Path) -> list[Item]:
    """TruthfulQA's CSV (Type, Category, Question, Best Answer, Correct Answers, Incorrect Answers, Source).

    reference = Best Answer; aliases = the semicolon-separated Correct Answers (minus the best answer).
    Ids are `truthfulqa-0001`, ... in row order.
    """
    path = Path(path)
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise InterpError(f"{path}:1: not valid CSV ({exc})") from None
    if header is None:
        raise InterpError(f"{path}: empty file; expected a TruthfulQA CSV with a header row")
    header = [name.strip() for name in header]
    for column in _TRUTHFULQA_REQUIRED:
        if column not in header:
            raise InterpError(f'{path}:1: missing column "{column}" (found: {", ".join(header)})')
    items = []
    row_start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InterpError(f"{path}:{row_start}: not valid CSV ({exc})") from None
        line, row_start = row_start, reader.line_num + 1
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InterpError(f"{path}:{line}: expected {len(header)} fields, found {len(row)}")
        try:
            items.append(_truthfulqa_item(dict(zip(header, row, strict=False)), f"truthfulqa-{len(items) + 1:04d}"))
        except RecordError as exc:
            raise InterpError(f"{path}:{line}: {exc}") from None
    return _non_empty(items, str(path))


def load_wmt_text(source_path: str | Path, reference_path: str | Path) -> list[Item]:
    """WMT19-style parallel plain text: German sources and English references, one sentence a line.

    Both files must have the same number of lines and no empty line. Ids are `wmt-0001`, ... in line order.
    """
    source_path, reference_path = Path(source_path), Path(reference_path)
    sources = text_lines(source_path)
    references = text_lines(reference_path)
    if len(sources) != len(references):
        raise InterpError(
            f"{reference_path}: {len(references)} lines, but {source_path} has {len(sources)}; "
            "a parallel reference file needs one line per source line"
        )
    items = [
        Item(id=f"wmt-{number:04d}", task="translation", query=source, reference=reference)
        for number, (source, reference) in enumerate(zip(sources, references, strict=False), 1)
    ]
    return _non_empty(items, str(source_path))


def load_mtbench_questions(path: str | Path) -> list[Item]:
    """MT-Bench `question.jsonl`: the first turn of each question is the query (task helpfulness).

    The first entry of the optional `reference` list becomes the reference; ids are `mtbench-<question_id>`.
    """
    path = Path(path)
    items = []
    first_line: dict[str, int] = {}
    for line_number, record in _jsonl_records(read_text(path), str(path)):
        try:
            item = _mtbench_item(record)
        except RecordError as exc:
            raise InterpError(f"{path}:{line_number}: {exc}") from None
        if item.id in first_line:
            raise InterpError(f"{path}:{line_number}: duplicate question_id (first on line {first_line[item.id]})")
        first_line[item.id] = line_number
        items.append(item)
    return _non_empty(items, str(path))


def load_hf_dataset(
    name: str,
    split: str = "test",
    config: str | None = None,
    *,
    task: str | None = None,
    source_lang: str = "de",
    target_lang: str = "en",
) -> list[Item]:
    """A Hugging Face dataset (needs the `datasets` package and the network, or a cached copy).

    Rows may have any of the shapes the file loaders read: ours (`task`, `query`), AlpacaEval (`instruction`),
    TruthfulQA generation (`question`, `best_answer`), WMT (`translation: {source_lang, target_lang}`) or
    MT-Bench (`turns` or `prompt`). `task` overrides the task of AlpacaEval-shaped rows.
    """
    try:
        import datasets
    except ImportError:
        raise InterpError(f"hf:{name}: loading a Hugging Face dataset needs the `datasets` package") from None
    where = f"hf:{name}" + (f" (config {config!r}, split {split!r})" if config else f" (split {split!r})")
    try:
        rows = datasets.load_dataset(name, config, split=split)
    except Exception as exc:  # datasets raises many types (connection, not found, bad config); all mean "cannot load"
        raise InterpError(
            f"{where}: cannot load ({message_line(exc)}); it needs the network or a cached copy"
        ) from None
    short_name = name.rstrip("/").split("/")[-1]
    items = []
    for index, row in enumerate(rows):
        try:
            items.append(_hf_item(row, index, short_name, task, source_lang, target_lang))
        except RecordError as exc:
            raise InterpError(f"{where}: row {index + 1}: {exc}") from None
    return _non_empty(_check_unique_ids(items, where), where)


# ---- dispatch --------------------------------------------------------------------------------------

_PATH_LOADERS: dict[str, Callable[[Path], list[Item]]] = {
    "jsonl": load_jsonl,
    "alpacaeval": load_alpacaeval_json,
    "truthfulqa": load_truthfulqa_csv,
    "mtbench": load_mtbench_questions,
}


def load_items(spec: str) -> list[Item]:
    """Load a dataset from a spec string.

    >>> items = interp.load_items("builtin:translation")
    >>> {item.task for item in items}
    {'translation'}

    - `builtin` or `builtin:TASK[,TASK...]`: the shipped set, e.g. `builtin:translation`;
    - `referenced` or `referenced:TASK[,TASK...]`: the organisms' second shipped set (`referenced_items`);
    - `train-facts`: the organisms' training-only facts (`train_facts_items`);
    - `train-help`: the organisms' training-only helpfulness questions (`train_help_items`);
    - `dev` or `dev:TASK[,TASK...]`: the organisms' recipe-choice set (`dev_items`);
    - `heldout` or `heldout:TASK[,TASK...]`: the organisms' test-only set (`heldout_items`);
    - `bench` or `bench:TASK[,TASK...]`: the bench's fresh test items, never read in development (`bench_items`);
    - `wmt:SOURCE,REFERENCE`: WMT-style parallel text files;
    - `hf:NAME[:SPLIT]` or `hf:NAME:CONFIG:SPLIT`: a Hugging Face dataset (split defaults to `test`);
    - `jsonl:PATH`, `alpacaeval:PATH`, `truthfulqa:PATH`, `mtbench:PATH`: a file in that format;
    - a bare PATH: `.json` is AlpacaEval, `.csv` TruthfulQA, `.jsonl` MT-Bench when its first record has
      `turns`, our format otherwise.
    """
    spec = spec.strip()
    prefix, _, rest = spec.partition(":")
    if prefix in PACKAGED_SETS:
        return PACKAGED_SETS[prefix]([task.strip() for task in rest.split(",")] if rest else None)
    if prefix == "wmt":
        paths = rest.split(",")
        if len(paths) != 2 or not all(part.strip() for part in paths):
            raise InterpError(f"dataset spec {spec!r}: use wmt:SOURCE_FILE,REFERENCE_FILE")
        return load_wmt_text(paths[0].strip(), paths[1].strip())
    if prefix == "hf":
        parts = rest.split(":")
        if not parts[0] or len(parts) > 3 or not all(parts):
            raise InterpError(f"dataset spec {spec!r}: use hf:NAME, hf:NAME:SPLIT or hf:NAME:CONFIG:SPLIT")
        if len(parts) == 3:
            return load_hf_dataset(parts[0], parts[2], parts[1])
        return load_hf_dataset(parts[0], parts[1] if len(parts) == 2 else "test")
    if prefix in _PATH_LOADERS and rest:
        return _PATH_LOADERS[prefix](_existing(rest))
    path = _existing(spec)
    suffix = path.suffix.lower()
    if suffix == ".json":
        return load_alpacaeval_json(path)
    if suffix == ".csv":
        return load_truthfulqa_csv(path)
    if suffix == ".jsonl":
        return load_mtbench_questions(path) if _looks_like_mtbench(path) else load_jsonl(path)
    raise InterpError(
        f"{path}: cannot tell the dataset format from the extension {suffix or '(none)'!r}; "
        "use a .json/.csv/.jsonl file, wmt:SOURCE,REFERENCE, or a jsonl:/alpacaeval:/truthfulqa:/mtbench: prefix"
    )


def _existing(path_text: str) -> Path:
    path = Path(path_text)
    if not path.is_file():
        raise InterpError(f"{path}: no such dataset file (or a spec such as builtin, wmt:SRC,REF, hf:NAME)")
    return path


def _looks_like_mtbench(path: Path) -> bool:
    for _, record in _jsonl_records(read_text(path), str(path)):
        return isinstance(record, dict) and "turns" in record
    return False


# ---- sampling --------------------------------------------------------------------------------------


def sample_items(items: Sequence[Item], n: int = 500, seed: int = 0) -> list[Item]:
    """The paper's random sample of `n` examples (500 by default), returned in their original order.

    Fewer than `n` items: all of them. The choice ranks items by a SHA-256 hash of (seed, position, id)
    rather than by `random`, whose algorithms may change between Python versions, so a seed picks the same
    items on every machine and version.
    """
    if n < 1:
        raise InterpError(f"sample size must be at least 1, got {n}")
    if len(items) <= n:
        return list(items)

    def rank(position: int) -> bytes:
        return hashlib.sha256(f"{seed}\x00{position}\x00{items[position].id}".encode()).digest()

    chosen = sorted(sorted(range(len(items)), key=rank)[:n])
    return [items[position] for position in chosen]


# ---- record converters (shared by file and HF loaders) -------------------------------------------


def _item_from_record(record: Any, default_id: str | None) -> Item:
    if not isinstance(record, dict):
        raise RecordError("not a JSON object")
    unknown = [key for key in record if key not in _ITEM_FIELDS]
    if unknown:
        raise RecordError(f'unknown field "{unknown[0]}" (expected: {", ".join(_ITEM_FIELDS)})')
    task = required_text(record, "task")
    if task not in TASKS:
        raise RecordError(f'unknown task "{task}" (use one of {", ".join(TASKS)})')
    if "id" in record or default_id is None:
        item_id = required_text(record, "id")
    else:
        item_id = default_id
    return Item(
        id=item_id,
        task=task,
        query=required_text(record, "query"),
        reference=optional_text(record, "reference"),
        aliases=string_list(record, "aliases"),
        tests=string_list(record, TESTS_FIELD, as_written=True),  # code: indentation matters
    )


def _alpaca_item(record: Any, item_id: str, task: str) -> Item:
    if not isinstance(record, dict):
        raise RecordError("not a JSON object")
    return Item(
        id=item_id, task=task, query=required_text(record, "instruction"), reference=optional_text(record, "output")
    )


def _truthfulqa_item(row: Mapping[str, str], item_id: str) -> Item:
    best = required_text(row, "Best Answer")
    correct = [answer.strip() for answer in (row.get("Correct Answers") or "").split(";")]
    return Item(
        id=item_id,
        task="truthfulness",
        query=required_text(row, "Question"),
        reference=best,
        aliases=_dedupe(answer for answer in correct if answer and answer != best),
    )


def _mtbench_item(record: Any) -> Item:
    if not isinstance(record, dict):
        raise RecordError("not a JSON object")
    if "question_id" not in record:
        raise RecordError('missing field "question_id"')
    question_id = record["question_id"]
    if not isinstance(question_id, (int, str)) or isinstance(question_id, bool) or str(question_id).strip() == "":
        raise RecordError('field "question_id" must be a number or a non-empty string')
    turns = string_list(record, "turns")
    if not turns:
        raise RecordError('missing field "turns" (a non-empty list of strings)')
    return Item(
        id=f"mtbench-{question_id}", task="helpfulness", query=turns[0], reference=_mtbench_first_reference(record)
    )


def _mtbench_first_reference(record: Mapping[str, Any]) -> str | None:
    """The first turn's reference, or None. The released file gives one entry per turn and leaves a turn
    without a reference as "" (e.g. question 103: ["Thomas may work at a hospital.", ""]; 133: ["", "..."])."""
    value = record.get("reference")
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(entry, str) for entry in value):
        raise RecordError('field "reference" must be a non-empty list of strings (one per turn, "" for none)')
    return value[0].strip() or None


def _hf_item(
    row: Mapping[str, Any], index: int, short_name: str, task: str | None, source_lang: str, target_lang: str
) -> Item:
    default_id = f"{short_name}-{index + 1:05d}"
    if "query" in row and "task" in row:
        ours = {key: value for key, value in row.items() if key in _ITEM_FIELDS and value is not None}
        return _item_from_record(ours, default_id)
    if "instruction" in row:
        return _alpaca_item(row, default_id, task or "helpfulness")
    if "question" in row and "best_answer" in row:
        correct = row.get("correct_answers") or []
        best = required_text(row, "best_answer")
        return Item(
            id=default_id,
            task="truthfulness",
            query=required_text(row, "question"),
            reference=best,
            aliases=_dedupe(str(answer).strip() for answer in correct if str(answer).strip() and answer != best),
        )
    if "translation" in row:
        pair = row["translation"]
        if not isinstance(pair, dict) or source_lang not in pair or target_lang not in pair:
            raise RecordError(f'field "translation" has no "{source_lang}" and "{target_lang}" texts')
        return Item(
            id=default_id,
            task="translation",
            query=required_text(pair, source_lang),
            reference=required_text(pair, target_lang),
        )
    if "turns" in row or "prompt" in row:
        turns_key, id_key = ("turns", "question_id") if "turns" in row else ("prompt", "prompt_id")
        turns = string_list(row, turns_key)
        if not turns:
            raise RecordError(f'field "{turns_key}" is empty')
        references = string_list(row, "reference") if row.get("reference") else ()
        item_id = f"mtbench-{row[id_key]}" if row.get(id_key) is not None else default_id
        return Item(id=item_id, task="helpfulness", query=turns[0], reference=references[0] if references else None)
    raise RecordError(
        f"columns {', '.join(sorted(row))} match no known format (query+task, instruction, question+best_answer, "
        "translation, turns/prompt)"
    )


def _dedupe(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _jsonl_records(text: str, source: str) -> Iterable[tuple[int, Any]]:
    # Not objects_only: a non-object line is reported by the record parsers, in the words of each format.
    return jsonl_objects(text.splitlines(), where=lambda n: f"{source}:{n}", objects_only=False)


def _items_from_jsonl_text(text: str, source: str, default_id_prefix: str | None = None) -> list[Item]:
    items = []
    first_line: dict[str, int] = {}
    for line_number, record in _jsonl_records(text, source):
        default_id = f"{default_id_prefix}-{line_number}" if default_id_prefix is not None else None
        if isinstance(record, dict) and "schema_version" in record:  # a run's own items.jsonl, read as data
            record = {key: value for key, value in record.items() if key != "schema_version"}
        try:
            item = _item_from_record(record, default_id)
        except RecordError as exc:
            raise InterpError(f"{source}:{line_number}: {exc}") from None
        if item.id in first_line:
            raise InterpError(f'{source}:{line_number}: duplicate id "{item.id}" (first on line {first_line[item.id]})')
        first_line[item.id] = line_number
        items.append(item)
    return _non_empty(items, source)


def _check_unique_ids(items: list[Item], source: str) -> list[Item]:
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise InterpError(f'{source}: duplicate id "{item.id}"')
        seen.add(item.id)
    return items


def _non_empty(items: list[Item], source: str) -> list[Item]:
    if not items:
        raise InterpError(f"{source}: no items (the dataset is empty)")
    return items
