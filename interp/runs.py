"""A DBG run: config -> items -> responses -> judging (both orders, attention on the way) -> gold -> summary.

A run directory holds everything in open formats and can be resumed after a kill:
  config.toml            the validated config (a re-run with a different config is refused)
  items.jsonl            the sampled instructions
  responses.jsonl        both models' answers (also cached across runs, see interp.responses)
  judgments.jsonl        one line per (judge, item, order), appended batch by batch
  attention/<judge>/     per-batch safetensors shards, consolidated to attention/<judge>.safetensors
  gold.jsonl             one line per (gold judge, item): P(models[0]'s response wins)
  summary.json           win rates, DBG with bootstrap intervals, position consistency, label checks
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator, Literal, Sequence

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from tqdm.auto import tqdm

from interp.backends import BACKENDS, Backend, make_backend
from interp.data import Item, load_items, sample_items
from interp.errors import InterpError
from interp.inspection import tokenized_judge_prompt
from interp.judge import BiasBuilder, EditBuilder, Judgment, judge_batch, label_tokens
from interp.models import LoadedModel, load_model
from interp.responses import Decoding, Response, generate_responses
from interp.storage import append_jsonl, atomic_write_bytes, atomic_write_text, read_jsonl

ORDERS = ("ab", "ba")  # "ab": models[0]'s response in slot A; "ba": swapped


# ---- config ----------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HTTPJudgeConfig(_Strict):
    name: str
    base_url: str
    model: str
    api_key_env: str | None = None  # name of the environment variable holding the key; never the key
    timeout: float = 60.0
    retries: int = 4
    mode: Literal["chat", "completions"] = "chat"  # completions: raw few-shot prompt, for base models
    top_logprobs: int = Field(20, ge=1)
    concurrency: int = Field(1, ge=1)
    logprobs: bool = True


class GoldConfig(_Strict):
    reference: bool = True
    models: list[str] = Field(default_factory=list)  # local model judges outside the pair
    http: list[HTTPJudgeConfig] = Field(default_factory=list)
    recorded: list[str] = Field(default_factory=list)


class RunConfig(_Strict):
    name: str = "dbg"
    data: str = "builtin"
    n: int = Field(500, ge=1)  # the paper samples 500 instructions
    seed: int = 0
    models: tuple[str, str] = ("smollm2-135m-instruct", "gemma3-270m")
    judges: list[str] | None = None  # default: both models judge
    backend: str = "hf"
    batch_size: int = Field(8, ge=1)
    max_words: int = Field(200, ge=1)
    max_new_tokens: int = Field(256, ge=1)
    ties: bool = False  # A/T/B labels instead of A/B
    attention: Literal["final", "after", "none"] = "final"
    n_boot: int = Field(1000, ge=10)
    gold: GoldConfig = GoldConfig()

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        if value not in BACKENDS:
            raise ValueError(f"unknown backend {value!r}; use one of {', '.join(BACKENDS)}")
        return value

    @property
    def judge_specs(self) -> list[str]:
        return list(self.judges) if self.judges is not None else list(self.models)

    def to_toml(self) -> str:
        return _to_toml(self.model_dump(exclude_none=True))


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(value)


def _to_toml(data: dict) -> str:
    lines, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    for name, table in tables:
        lines.append(f"\n[{name}]")
        arrays = []
        for key, value in table.items():
            if isinstance(value, list) and value and isinstance(value[0], dict):
                arrays.append((key, value))
            else:
                lines.append(f"{key} = {_toml_value(value)}")
        for key, rows in arrays:
            for row in rows:
                lines.append(f"\n[[{name}.{key}]]")
                lines += [f"{k} = {_toml_value(v)}" for k, v in row.items() if v is not None]
    return "\n".join(lines) + "\n"


def validate_config(model: type[BaseModel], data: dict, source: str):
    """A strict pydantic config from parsed data; the first problem as one line naming the key."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        raise InterpError(f"{source}: {where}: {message}") from None


def load_toml_config(path: Path, model: type[BaseModel], what: str = "config file"):
    """Read a TOML file into `model`; a missing file, bad TOML or a bad key is a one-line InterpError."""
    path = Path(path)
    if not path.is_file():
        raise InterpError(f"{what} not found: {path}")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InterpError(f"{path}: not valid TOML ({exc})") from None
    return validate_config(model, data, str(path))


def config_from_dict(data: dict, source: str = "config") -> RunConfig:
    return validate_config(RunConfig, data, source)


def load_config(path: Path) -> RunConfig:
    return load_toml_config(path, RunConfig)


# ---- the run directory -----------------------------------------------------------------------------


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


@dataclass(frozen=True)
class RunPaths:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    @property
    def items(self) -> Path:
        return self.root / "items.jsonl"

    @property
    def responses(self) -> Path:
        return self.root / "responses.jsonl"

    @property
    def judgments(self) -> Path:
        return self.root / "judgments.jsonl"

    @property
    def gold(self) -> Path:
        return self.root / "gold.jsonl"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    def attention_shards(self, judge: str) -> Path:
        return self.root / "attention" / safe_name(judge)

    def attention(self, judge: str) -> Path:
        return self.root / "attention" / f"{safe_name(judge)}.safetensors"

    def attention_index(self, judge: str) -> Path:
        return self.root / "attention" / f"{safe_name(judge)}.json"


def _write_jsonl_atomic(path: Path, records: Sequence[dict]) -> None:
    atomic_write_text(path, "".join(json.dumps(r) + "\n" for r in records))


def prepare_run_dir(config: RunConfig, out: Path) -> RunPaths:
    paths = RunPaths(Path(out))
    paths.root.mkdir(parents=True, exist_ok=True)
    text = config.to_toml()
    if paths.config.exists() and paths.config.read_text() != text:
        raise InterpError(f"{paths.root} holds a run with a different config; use another --out or delete it")
    atomic_write_text(paths.config, text)
    return paths


# ---- judging tasks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeTask:
    item: Item
    order: str
    response_a: str
    response_b: str
    author_a: str
    author_b: str

    @property
    def key(self) -> str:
        return f"{self.item.id}|{self.order}"


def judge_tasks(items: Sequence[Item], responses: dict[str, dict[str, str]], models: Sequence[str]) -> list[JudgeTask]:
    """Every item in both orders; responses[model][item_id] is that model's answer."""
    first, second = models
    tasks = []
    for item in items:
        x, y = responses[first][item.id], responses[second][item.id]
        tasks.append(JudgeTask(item, "ab", x, y, first, second))
        tasks.append(JudgeTask(item, "ba", y, x, second, first))
    return tasks


def tokenizer_fingerprint(tokenizer) -> str:
    vocab = tokenizer.get_vocab()
    digest = hashlib.sha256(json.dumps(sorted(vocab.items())[:5000]).encode() + str(len(vocab)).encode())
    return digest.hexdigest()[:16]


def _judgment_line(judge: str, task: JudgeTask, judgment: Judgment) -> dict:
    return {
        "judge": judge,
        "item_id": task.item.id,
        "task": task.item.task,
        "order": task.order,
        "model_a": task.author_a,
        "model_b": task.author_b,
        "p_a": judgment.probs["A"],
        "p_b": judgment.probs["B"],
        "p_t": judgment.probs.get("T"),
        "label_mass": judgment.label_mass,
        "top_is_label": judgment.top_is_label,
        "top_token": judgment.top_token,
        "n_tokens": judgment.n_tokens,
        "spans": {k: list(v) for k, v in judgment.spans.items()},
    }


def _batches(tasks: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(tasks), size):
        yield tasks[start : start + size]


def run_judging(
    backend: Backend,
    judge: str,
    tasks: Sequence[JudgeTask],
    *,
    judgments_path: Path,
    shard_dir: Path | None,
    batch_size: int,
    ties: bool = False,
    queries: str | None = "final",
    bias_for: Callable[[Sequence[JudgeTask]], BiasBuilder | None] | None = None,
    progress: bool = True,
    edit_for: Callable[[Sequence[JudgeTask]], EditBuilder | None] | None = None,
) -> None:
    """Judge every task not yet on disk; each batch's attention shard is written before its judgment lines.

    `bias_for(chunk)` / `edit_for(chunk)` give the score-bias / residual-edit builder for one batch of tasks.
    """
    model = backend.model
    labels = label_tokens(model.tokenizer, ("A", "T", "B") if ties else ("A", "B"))
    done = {f"{r['item_id']}|{r['order']}" for r in read_jsonl(judgments_path) if r["judge"] == judge}
    todo = [t for t in tasks if t.key not in done]
    prompts = {
        t.key: tokenized_judge_prompt(model, t.item.task, t.item.query, t.response_a, t.response_b) for t in todo
    }
    # One task's prompts together (their judge instructions are a prefix the backend can share), and similar
    # lengths together within a task (less padding).
    todo.sort(key=lambda t: (t.item.task, len(prompts[t.key])))
    bar = tqdm(total=len(todo), desc=f"judging {judge}", unit="judgment", disable=not progress or not todo)
    for chunk in _batches(todo, batch_size):
        chunk_prompts = [prompts[t.key] for t in chunk]
        bias = bias_for(chunk) if bias_for is not None else None
        edit = edit_for(chunk) if edit_for is not None else None
        judgments = judge_batch(backend, chunk_prompts, labels, queries=queries if shard_dir else None, bias=bias, edit=edit)
        if shard_dir is not None:
            _write_shard(shard_dir, chunk, judgments)
        append_jsonl(judgments_path, [_judgment_line(judge, t, j) for t, j in zip(chunk, judgments)])
        bar.update(len(chunk))
    bar.close()


def _write_shard(shard_dir: Path, chunk: Sequence[JudgeTask], judgments: Sequence[Judgment]) -> None:
    keys = [t.key for t in chunk]
    name = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]
    tensors = {
        "mass": torch.stack([j.mass for j in judgments]).contiguous(),
        "span_tokens": torch.stack([j.counts for j in judgments]).contiguous(),
    }
    from safetensors.torch import save

    atomic_write_bytes(shard_dir / f"{name}.safetensors", save(tensors, metadata={"keys": json.dumps(keys)}))


def consolidate_attention(paths: RunPaths, judge: str, model: LoadedModel, items: Sequence[Item], queries: str) -> None:
    """Shards -> one `[item, order, layer, head, span]` array per judge, with a JSON index."""
    from safetensors import safe_open

    by_key: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for shard in sorted(paths.attention_shards(judge).glob("*.safetensors")):
        with safe_open(str(shard), "pt") as handle:
            keys = json.loads(handle.metadata()["keys"])
            mass, counts = handle.get_tensor("mass"), handle.get_tensor("span_tokens")
        for row, key in enumerate(keys):
            by_key[key] = (mass[row], counts[row])
    records = {f"{r['item_id']}|{r['order']}": r for r in read_jsonl(paths.judgments) if r["judge"] == judge}
    shape = (len(items), len(ORDERS), model.n_layers, model.n_heads, 2)
    mass = torch.full(shape, float("nan"))
    counts = torch.zeros(len(items), len(ORDERS), 2)
    for i, item in enumerate(items):
        for o, order in enumerate(ORDERS):
            key = f"{item.id}|{order}"
            if key not in by_key or key not in records:
                raise InterpError(f"attention for {judge} {key} is missing; re-run the judging step")
            mass[i, o], counts[i, o] = by_key[key]
    index = {
        "judge": judge,
        "queries": queries,
        "tokenizer": tokenizer_fingerprint(model.tokenizer),
        "n_layers": model.n_layers,
        "n_heads": model.n_heads,
        "dims": ["item", "order", "layer", "head", "span"],
        "orders": list(ORDERS),
        "spans": ["a", "b"],
        "items": [
            {
                "item_id": item.id,
                "task": item.task,
                "orders": {
                    order: {
                        "model_a": records[f"{item.id}|{order}"]["model_a"],
                        "model_b": records[f"{item.id}|{order}"]["model_b"],
                        "spans": records[f"{item.id}|{order}"]["spans"],
                        "n_tokens": records[f"{item.id}|{order}"]["n_tokens"],
                    }
                    for order in ORDERS
                },
            }
            for item in items
        ],
    }
    from safetensors.torch import save

    atomic_write_bytes(paths.attention(judge), save({"mass": mass, "span_tokens": counts}))
    atomic_write_text(paths.attention_index(judge), json.dumps(index))


# ---- gold ------------------------------------------------------------------------------------------


@dataclass
class ModelJudge:
    """A local model as a gold judge: both orders, P(first better) = mean of its two readings."""

    backend: Backend
    name: str
    batch_size: int = 8

    def p_first(self, pairs) -> list[float]:
        model = self.backend.model
        labels = label_tokens(model.tokenizer)
        prompts = []
        for pair in pairs:
            for a, b in ((pair.response_a, pair.response_b), (pair.response_b, pair.response_a)):
                prompts.append(tokenized_judge_prompt(model, pair.item.task, pair.item.query, a, b))
        results: list[Judgment] = []
        for chunk in _batches(prompts, self.batch_size):
            results += judge_batch(self.backend, chunk, labels, queries=None)
        return [0.5 * (results[2 * i].probs["A"] + results[2 * i + 1].probs["B"]) for i in range(len(pairs))]


# ---- the pipeline ----------------------------------------------------------------------------------


@dataclass
class RunState:
    config: RunConfig
    paths: RunPaths
    items: list[Item]
    responses: dict[str, dict[str, str]]
    loaded: dict[str, LoadedModel]


def _load_cached(spec: str, loaded: dict[str, LoadedModel]) -> LoadedModel:
    if spec not in loaded:
        loaded[spec] = load_model(spec)
    return loaded[spec]


def prepare_items(config: RunConfig, paths: RunPaths) -> list[Item]:
    if paths.items.exists():
        return [Item(**{**r, "aliases": tuple(r.get("aliases", ()))}) for r in read_jsonl(paths.items)]
    items = sample_items(load_items(config.data), n=config.n, seed=config.seed)
    _write_jsonl_atomic(paths.items, [asdict(item) for item in items])
    return items


def read_responses(paths: RunPaths) -> dict[str, dict[str, str]]:
    responses: dict[str, dict[str, str]] = {}
    for record in read_jsonl(paths.responses):
        responses.setdefault(record["model"], {})[record["item_id"]] = record["text"]
    return responses


def prepare_responses(config: RunConfig, paths: RunPaths, items: Sequence[Item], loaded: dict, progress: bool) -> dict[str, dict[str, str]]:
    existing = read_responses(paths)
    if all(set(existing.get(m, {})) >= {i.id for i in items} for m in config.models):
        return existing
    decoding = Decoding(max_words=config.max_words, max_new_tokens=config.max_new_tokens, batch_size=config.batch_size)
    records: list[Response] = []
    for spec in config.models:
        records += generate_responses(_load_cached(spec, loaded), items, decoding, name=spec, progress=progress)
    _write_jsonl_atomic(paths.responses, [asdict(r) for r in records])
    return read_responses(paths)


def run_gold_step(state: RunState, progress: bool) -> dict[str, list[float]]:
    """P(models[0]'s response wins) per item for every gold judge; cached in gold.jsonl per judge."""
    from interp.gold import Pair, ReferenceJudge, RecordedJudge

    config, paths, items = state.config, state.paths, state.items
    first, second = config.models
    pairs = [Pair(item, state.responses[first][item.id], state.responses[second][item.id]) for item in items]
    judges: list = []
    if config.gold.reference:
        judges.append(ReferenceJudge())
    judges += [RecordedJudge(p) for p in config.gold.recorded]
    for spec in config.gold.models:
        if spec in config.models:
            raise InterpError(f"gold model {spec!r} is one of the judged pair; a gold judge must be outside the pair")
        judges.append(ModelJudge(make_backend(_load_cached(spec, state.loaded), "hf"), name=spec, batch_size=config.batch_size))
    if config.gold.http:
        from interp.http_judge import HTTPJudge

        judges += [HTTPJudge.from_config(c) for c in config.gold.http]
    if not judges:
        raise InterpError("no gold judge configured: enable [gold] reference or add models, http or recorded judges")
    existing: dict[str, dict[str, float]] = {}
    for record in read_jsonl(paths.gold):
        existing.setdefault(record["judge"], {})[record["item_id"]] = record["p_first"]
    for judge in tqdm(judges, desc="gold judges", disable=not progress):
        have = existing.get(judge.name, {})
        missing = [(item, pair) for item, pair in zip(items, pairs) if item.id not in have]
        for chunk in _batches(missing, max(config.batch_size, 8)):
            values = judge.p_first([pair for _, pair in chunk])
            append_jsonl(paths.gold, [{"judge": judge.name, "item_id": item.id, "p_first": float(v)} for (item, _), v in zip(chunk, values)])
            have.update({item.id: float(v) for (item, _), v in zip(chunk, values)})
        existing[judge.name] = have
    checks = {judge.name: judge.stats for judge in judges if getattr(judge, "stats", None)}
    if checks:  # e.g. HTTP judges: how often logprobs were missing or the top tokens were not labels
        atomic_write_text(paths.root / "gold_checks.json", json.dumps(checks, indent=2))
    return {judge.name: [existing[judge.name][item.id] for item in items] for judge in judges}


def run_dbg(config: RunConfig, out: Path, *, progress: bool = True, loaded: dict | None = None) -> dict:
    """The whole behavioural pipeline; resumable: finished steps and judgments are read back, not redone."""
    from interp.summary import write_summary

    paths = prepare_run_dir(config, out)
    loaded = loaded if loaded is not None else {}
    items = prepare_items(config, paths)
    responses = prepare_responses(config, paths, items, loaded, progress)
    state = RunState(config, paths, items, responses, loaded)
    tasks = judge_tasks(items, responses, config.models)
    queries = None if config.attention == "none" else config.attention
    for judge in config.judge_specs:
        model = _load_cached(judge, loaded)
        backend = make_backend(model, config.backend)
        run_judging(
            backend,
            judge,
            tasks,
            judgments_path=paths.judgments,
            shard_dir=paths.attention_shards(judge) if queries else None,
            batch_size=config.batch_size,
            ties=config.ties,
            queries=queries,
            progress=progress,
        )
        if queries:
            consolidate_attention(paths, judge, model, items, queries)
    gold = run_gold_step(state, progress)
    return write_summary(state.config, paths, items, gold)
