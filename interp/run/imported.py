"""Responses read from a file, so that any model's answers (GPT-4's, a fine-tune's) can be one side of a pair.

Two formats, by extension:

- `.json`: AlpacaEval's `model_outputs.json`, a list of `{"instruction", "output", "generator"?}`; an answer
  belongs to the run's item whose query is the same instruction (white space at the ends aside);
- `.jsonl`: one `{"item_id", "text"}` per line (`"response"` or `"output"` also name the answer); a
  `responses.jsonl` of another run works when `"model"` names the model to take.

An answer's reasoning blocks (`<think>...</think>` and the other tags of `interp.run.reasoning`) are removed
before it is capped and judged; what was removed travels in `Response.reasoning`.

Every item of the run needs an answer that is not empty (or white space only), and an instruction may not
carry two different answers: each problem is one line naming the file and the item, before anything is written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

from interp.data import Item
from interp.errors import InterpError
from interp.metrics.tables import iter_jsonl
from interp.run.responses import Response, final_answer

ANSWER_FIELDS = ("text", "response", "output")


def _records(path: Path) -> list:
    if not path.is_file():
        raise InterpError(f"response file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            data = json.loads(text)
            if not isinstance(data, list):
                raise InterpError(
                    f'{path}: expected a JSON list of {{"instruction", "output"}} objects (AlpacaEval '
                    "model_outputs.json)"
                )
            return data
        if path.suffix == ".jsonl":
            return [record for _, record in iter_jsonl(path)]
    except UnicodeDecodeError:
        raise InterpError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InterpError(f"{path}: not valid JSON ({exc})") from None
    raise InterpError(
        f'{path}: use a .json file (AlpacaEval model_outputs.json) or a .jsonl file of {{"item_id", "text"}}'
    )


def _answer(record, path: Path) -> str:
    if isinstance(record, dict):
        for name in ANSWER_FIELDS:
            if isinstance(record.get(name), str):
                return record[name]
    raise InterpError(f"{path}: a record has no answer ({', '.join(ANSWER_FIELDS)}): {str(record)[:120]}")


def imported_responses(path: str | Path, items: Sequence[Item], model: str, *, max_words: int) -> list[Response]:
    """`model`'s answers to `items` from the file, in item order, capped at `max_words` like generated ones."""
    path = Path(path)
    records = _records(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    answers: dict[str, str] = {}
    if path.suffix == ".json":
        by_query = {item.query.strip(): item.id for item in items}
        for record in records:
            instruction = record.get("instruction") if isinstance(record, dict) else None
            if not isinstance(instruction, str):
                raise InterpError(f'{path}: a record has no "instruction": {str(record)[:120]}')
            item_id = by_query.get(instruction.strip())
            if item_id is not None:
                answer = _answer(record, path)
                if answers.setdefault(item_id, answer) != answer:
                    raise InterpError(f"{path}: two different answers to the instruction of item {item_id}")
    else:
        for record in records:
            if not isinstance(record, dict) or not isinstance(record.get("item_id"), str):
                raise InterpError(f'{path}: every line needs an "item_id": {str(record)[:120]}')
            if record.get("model", model) == model:
                if record["item_id"] in answers:  # the last would win silently: which one is the answer?
                    raise InterpError(
                        f"{path}: two lines answer item {record['item_id']!r}"
                        + (f" for {model}" if "model" in record else "")
                        + "; keep one answer per item"
                    )
                answers[record["item_id"]] = _answer(record, path)
    missing = [item.id for item in items if item.id not in answers]
    if missing:
        raise InterpError(
            f"{path} has no answer of {model} for {len(missing)} of the run's items (first: {missing[0]})"
        )
    final = {item.id: final_answer(answers[item.id].strip(), max_words) for item in items}
    empty = [item.id for item in items if not final[item.id][0].strip()]
    if empty:
        reasoning = " (all of it reasoning)" if final[empty[0]][1] else ""
        raise InterpError(
            f"{path}: the answer of {model} to item {empty[0]} is empty{reasoning} ({len(empty)} of the "
            "run's items); import a real answer or drop the item"
        )
    key = import_key(path, digest)
    return [Response(item.id, model, final[item.id][0], -1, key, reasoning=final[item.id][1]) for item in items]


def import_key(path: Path, digest: str | None = None) -> str:
    """The cache key imported answers carry in responses.jsonl: a hash of the file they were read from."""
    return f"import:{digest or hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]}"


def check_imports_unchanged(imports: dict[str, str], rows: Sequence[dict], where: Path) -> None:
    """A resumed run's imported answers are those of its files now: a file edited since the run imported it
    (its hash differs from the key its answers carry) is one line; the run's judgments are of the old answers."""
    stored: dict[str, set] = {}
    for row in rows:  # only answers read from a file carry an import key (a restyled run's rewrites carry their own)
        if str(row.get("cache_key") or "").startswith("import:"):
            stored.setdefault(row.get("model"), set()).add(row.get("cache_key"))
    for model, file in imports.items():
        if stored.get(model) and Path(file).is_file() and stored[model] != {import_key(Path(file))}:
            raise InterpError(
                f"{file}: the answers of {model} changed since {where} imported them; its judgments are of the old "
                "answers: use another --out (or restore the file)"
            )
