"""The one reader and writer of result files, with their schema version and the migrations from older files.

Every result file carries `schema_version` (`SCHEMA_VERSION`). A file without one was written before it
(version 0) and is migrated on read:

- a judge's (and the design's) test level was `alpha` (the name a spec uses for its mask strength): now
  `test_alpha`;
- a judge's test without a count of control judges was the single-control design's sign-flip test against one control
  judge (`control_judge`): its `test.design` says so, its one control is listed under `test.controls`, and the
  report does not describe it as Crawford-Howell;
- a judge's Holm-adjusted p was missing where one judge was tested: now `p_holm` = its `p_value`;
- a judge's reliability flag was missing from summary.json: now computed by the rule that writes it
  (`interp.metrics.dbg.judge_reliability`), a pointwise judge's from its score mass (`label_mass_reliability`);
- organism_metrics.json held its judges at the top level: now under `judges`;
- a run's adapters.json held its fingerprints at the top level (now under `fingerprints`), prompts.json and
  gold_checks.json their judges (now under `judges`); identity.json reads as it was;
- an attention index named its read-out positions `queries` (now `readout`), the oldest none (read at the final
  position: `readout = "final"`); one without `spans` held the two answers' (`["a", "b"]`), an item without a
  task has the empty one.

A kind may be at a later version than `SCHEMA_VERSION` (its model's `schema_version` default, `current_version`);
its files step up from version 1 through `LATER_MIGRATIONS`:

- an organism's manifest (version 2) names the attention-routed route `pattern` (where the planted heads look),
  beside `content`, `output`, `mlp` and `direction`; versions 0 and 1 named it `attention`;
- an explanation (version 2) has one-sided p-values adjusted by the multiplicity plan (`multiplicity`); a version-1
  file, two-sided with Holm over every candidate, reads with `multiplicity` saying so.

A run's familiarity lens (`familiarity/<judge>-<key>.json` per judge, `familiarity.json`) is read and
written here too.

The studies' files (explain.json, validation.json, restyle.json, steering's table.json, attention_summary.json,
organism_metrics.json), an organism's manifest.json and a run's bookkeeping files (identity.json, adapters.json,
prompts.json, gold_checks.json) are read and written here too.

Every record of a JSONL file a run writes (items, responses, gold, judgments, a variant's judgments,
correctness, pointwise, recognition, reasoning, rewrites) carries `schema_version` as a field (`append_records`,
`write_records`); `read_records` takes it off, migrates a version-0 record (gold.jsonl's `p_first` is now
`p_first_model`) and refuses a later version in one line.

Readers get objects (`interp.results`); no reader outside this module parses these files or falls back from
one key name to another. A file that is not valid JSON, or not a result of its kind, is one `InterpError` line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from pydantic import ValidationError

from interp.errors import InterpError
from interp.results.base import ResultModel, plain_json
from interp.results.causal import CausalResult
from interp.results.explain import Explanation
from interp.results.familiarity import FamiliarityResult, FamiliarityScores
from interp.results.organisms import OrganismManifest
from interp.results.rows import SWEEP_RESULT_COLUMNS, LocalizeRow, SweepRow, VariantRecord
from interp.results.run_files import AdapterFingerprints, AttentionIndex, GoldChecks, JudgePrompts, RunIdentity
from interp.results.studies import (
    AttentionSummary,
    DirectionSidecar,
    OrganismMetrics,
    RestyleResult,
    SteeringTable,
    ValidationResult,
)
from interp.results.summary import RunSummary
from interp.storage import append_jsonl, atomic_write_text, read_jsonl_lines, write_jsonl_atomic

SCHEMA_VERSION = 1
RESULT_FILE = "result.json"
SUMMARY_FILE = "summary.json"
VARIANT_FILE = "variant.json"
VALIDATION_FILE = "validation.json"
RESTYLE_FILE = "restyle.json"
ORGANISM_METRICS_FILE = "organism_metrics.json"
MANIFEST_FILE = "manifest.json"
EXPLAIN_FILE = "explain.json"

Model = TypeVar("Model", bound=ResultModel)


# ---- migrations: version 0 (no schema_version) -> 1 ---------------------------------------------------


def _migrate_judge_test(record: dict | ResultModel) -> dict | ResultModel:
    if isinstance(record, ResultModel):  # an object a writer built: the current version already
        return record
    record = dict(record)
    test = record.get("test")
    if isinstance(test, dict) and "n_controls" not in test and "design" not in test:
        record["test"] = test | {"design": "sign-flip permutation test against one control judge"}
        if isinstance(test.get("control_judge"), str) and "controls" not in test:
            record["test"]["controls"] = [test["control_judge"]]
    if "alpha" in record and "test_alpha" not in record:
        record["test_alpha"] = record.pop("alpha")
    if "p_holm" not in record and "p_value" in record:
        record["p_holm"] = record["p_value"]
    return record


def _migrate_causal(data: dict) -> dict:
    data = data | {"judges": {judge: _migrate_judge_test(r) for judge, r in (data.get("judges") or {}).items()}}
    design = data.get("design")
    if isinstance(design, dict) and "alpha" in design and "test_alpha" not in design:
        data["design"] = {("test_alpha" if key == "alpha" else key): value for key, value in design.items()}
    return data


def _migrate_summary(data: dict) -> dict:
    from interp.metrics.dbg import judge_reliability, label_mass_reliability

    judges = {}
    for judge, scores in (data.get("judges") or {}).items():
        scores = dict(scores)
        if "unreliable_because" not in scores:
            scores["unreliable_because"] = list(
                judge_reliability(scores.get("position_consistency"), scores.get("mean_label_mass"))
            )
            scores["reliable"] = not scores["unreliable_because"]
        judges[judge] = scores
    pointwise = {
        judge: entry
        if "unreliable_because" in entry
        else entry | {"unreliable_because": label_mass_reliability(entry["mean_label_mass"])}
        for judge, entry in (data.get("pointwise") or {}).items()
    }
    return data | {"judges": judges} | ({"pointwise": pointwise} if pointwise else {})


def _migrate_organism_metrics(data: dict) -> dict:
    return {"judges": data}


def _migrate_attention_index(data: dict) -> dict:
    data = dict(data)
    if "readout" not in data:
        data["readout"] = data.pop("queries", "final")
    if "spans" not in data:  # before a judge's rationale was a span: the two answers
        data["spans"] = ["a", "b"]
    items = data.get("items") or []
    data["items"] = [item if not isinstance(item, dict) or "task" in item else item | {"task": ""} for item in items]
    return data


def _nest(field: str) -> Callable[[dict], dict]:
    """A migration for a file that held its map at the top level before its schema version: now under `field`."""
    return lambda data: {field: data}


MIGRATIONS: dict[type[ResultModel], Callable[[dict], dict]] = {
    CausalResult: _migrate_causal,
    RunSummary: _migrate_summary,
    VariantRecord: lambda data: data,
    OrganismMetrics: _migrate_organism_metrics,
    OrganismManifest: lambda data: data,  # the shipped manifests (version 0) read as they are
    RunIdentity: lambda data: data,
    AdapterFingerprints: _nest("fingerprints"),
    JudgePrompts: _nest("judges"),
    GoldChecks: _nest("judges"),
    AttentionIndex: _migrate_attention_index,
    DirectionSidecar: lambda data: data,
}


def _migrate_manifest_route(data: dict) -> dict:
    return data | {"planted_route": "pattern"} if data.get("planted_route") == "attention" else data


def _migrate_explanation_plan(data: dict) -> dict:
    """An explanation before the power budget (schema 1): every candidate's p two-sided, Holm over all of them
    (random sets included); said in `multiplicity`, the candidates' `alternative` and `role` left None."""
    plan = {"rule": "schema 1: two-sided p, Holm over every candidate (random sets included)", "hypotheses": []}
    return data | {"multiplicity": data.get("multiplicity") or plan}


# kind -> {version n: the migration from n to n + 1}, for kinds past `SCHEMA_VERSION`
LATER_MIGRATIONS: dict[type[ResultModel], dict[int, Callable[[dict], dict]]] = {
    OrganismManifest: {1: _migrate_manifest_route},
    Explanation: {1: _migrate_explanation_plan},
}


def current_version(kind: type[ResultModel]) -> int:
    """The schema version `kind`'s files are written at: its model's `schema_version` default, else `SCHEMA_VERSION`."""
    field = kind.model_fields.get("schema_version")
    return field.default if field is not None and isinstance(field.default, int) else SCHEMA_VERSION


# ---- objects from data, data from objects ---------------------------------------------------------------


def parse(kind: type[Model], data: dict | ResultModel, where: str = "a result") -> Model:
    """A result object from its data as written (any schema version this codec knows), migrated."""
    if isinstance(data, kind):
        return data
    if isinstance(data, ResultModel):
        data = data.to_json()
    if not isinstance(data, dict):
        raise InterpError(f"{where}: not a {kind.__name__} (a JSON object), got {type(data).__name__}")
    version = data.get("schema_version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:  # a bool is an int in Python
        raise InterpError(f"{where}: schema_version {version!r} is not a version (a whole number from 0)")
    current = current_version(kind)
    if version > current:
        raise InterpError(
            f"{where}: schema_version {version!r} is newer than this interp reads ({current}); update interp"
        )
    if version < SCHEMA_VERSION and kind in MIGRATIONS:
        data = MIGRATIONS[kind](data) | {"schema_version": SCHEMA_VERSION}
    for step in range(max(version, SCHEMA_VERSION), current):
        data = LATER_MIGRATIONS[kind][step](data) | {"schema_version": step + 1}
    try:
        return kind.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(part) for part in first["loc"])
        raise InterpError(f"{where}: not a {kind.__name__} ({at}: {first['msg']})") from None


def dump(result: ResultModel) -> dict:
    """A result as the JSON data written to disk, with its schema version."""
    data = result.to_json()
    return (
        {"schema_version": current_version(type(result)), **{k: v for k, v in data.items() if k != "schema_version"}}
        if "schema_version" in type(result).model_fields
        else data
    )


def dumps(result: ResultModel) -> str:
    """A result as the indented JSON text written to disk, with its schema version."""
    return json.dumps(dump(result), indent=2)


def _read(path: Path, kind: type[Model], hint: str) -> Model:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise InterpError(f"{path}: no such file{hint}") from None
    except OSError as exc:
        raise InterpError(f"{path}: cannot read it ({exc.strerror}){hint}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InterpError(f"{path}: not valid JSON ({exc}){hint}") from None
    return parse(kind, data, str(path))


def built(kind: type[Model], result: Model | dict, where: str = "a result") -> Model:
    """A result as the object the codec writes, from its data as a writer builds it (the current schema, numpy
    numbers and all): the data as JSON would give it back, parsed. An object is returned as it is."""
    if not isinstance(result, dict):
        return parse(kind, result, where)
    data = json.loads(json.dumps(result, default=plain_json))  # numpy numbers as the plain numbers they are
    return parse(kind, data | {"schema_version": current_version(kind)}, where)


def _write(path: Path, kind: type[Model], result: Model | dict) -> Model:
    """Write a result (an object, or its data as a writer builds it: the current schema) atomically."""
    result = built(kind, result, str(path))
    atomic_write_text(Path(path), dumps(result))
    return result


# ---- the files ----------------------------------------------------------------------------------


def read_causal(folder: Path) -> CausalResult:
    """`folder/result.json` of a causal test (`RUN/interventions/<label>-<key>/`)."""
    return _read(Path(folder) / RESULT_FILE, CausalResult, "; run `interp intervene` again")


def check_causal_replaceable(folder: Path) -> None:
    """A causal test's `result.json` may be written over: absent, damaged (it is made again), or of a version this
    interp writes; one written by a newer interp is refused in one line, never replaced by an older version's."""
    path = Path(folder) / RESULT_FILE
    version, current = stored_version(path), current_version(CausalResult)
    if version is not None and version > current:
        raise InterpError(
            f"{path}: schema_version {version!r} is newer than this interp reads ({current}); update interp"
        )


def write_causal(folder: Path, result: CausalResult | dict) -> CausalResult:
    """Write `folder/result.json` of a causal test atomically; returns it as an object."""
    return _write(Path(folder) / RESULT_FILE, CausalResult, result)


def read_causal_results(run_dir: Path) -> list[CausalResult]:
    """Every causal test of a run, in the order of their folder names."""
    folder = Path(run_dir) / "interventions"
    return [read_causal(p.parent) for p in sorted(folder.glob(f"*/{RESULT_FILE}"))] if folder.is_dir() else []


def read_summary(path: Path) -> RunSummary:
    """A run's `summary.json`."""
    return _read(path, RunSummary, "; rebuild it with `interp dbg` on the run's config")


def write_summary(path: Path, summary: RunSummary | dict) -> RunSummary:
    """Write a run's `summary.json` atomically; returns it as an object."""
    return _write(path, RunSummary, summary)


def read_variant(folder: Path) -> VariantRecord:
    """`folder/variant.json` of a re-judging variant (`RUN/variants/<key>/`)."""
    return _read(Path(folder) / VARIANT_FILE, VariantRecord, "")


def write_variant(folder: Path, record: VariantRecord | dict) -> VariantRecord:
    """Write `folder/variant.json` of a re-judging variant atomically; returns it as an object."""
    return _write(Path(folder) / VARIANT_FILE, VariantRecord, record)


def sweep_rows(rows: Iterable[dict | SweepRow]) -> list[SweepRow]:
    """Sweep rows (as written to, or read from, results.csv: CSV cells are text) as objects: the judge and the
    result columns are fields, every other column is the point; a row that is a `SweepRow` already stays."""
    fields = ("judge", *SWEEP_RESULT_COLUMNS)
    return [
        row
        if isinstance(row, SweepRow)
        else SweepRow.model_validate(
            {k: (None if v == "" else v) for k, v in row.items() if k in fields}
            | {"point": {k: v for k, v in row.items() if k not in fields and v not in (None, "")}}
        )
        for row in rows
    ]


def localize_rows(rows: Iterable[dict]) -> list[LocalizeRow]:
    """Localisation rows (one method's score for one layer and head) as objects."""
    return [LocalizeRow.model_validate(row) for row in rows]


def read_explanation(folder: Path) -> Explanation:
    """`folder/explain.json` of one `interp explain` (`RUN/explain/<judge>-<key>/`)."""
    return _read(Path(folder) / EXPLAIN_FILE, Explanation, "; run `interp explain` again")


def write_explanation(folder: Path, result: Explanation | dict) -> Explanation:
    """Write `folder/explain.json` of one `interp explain` atomically; returns it as an object."""
    return _write(Path(folder) / EXPLAIN_FILE, Explanation, result)


def read_explanations(run_dir: Path) -> list[Explanation]:
    """Every explain.json of a run (for the report), newest first."""
    folder = Path(run_dir) / "explain"
    files = sorted(folder.glob(f"*/{EXPLAIN_FILE}"), key=lambda p: p.stat().st_mtime, reverse=True)
    return [read_explanation(p.parent) for p in files] if folder.is_dir() else []


def read_validation(out: Path) -> ValidationResult:
    """`out/validation.json` of `interp organism validate`."""
    return _read(Path(out) / VALIDATION_FILE, ValidationResult, "; run `interp organism validate` again")


def write_validation(out: Path, result: ValidationResult | dict) -> ValidationResult:
    """Write `out/validation.json` of `interp organism validate` atomically; returns it as an object."""
    return _write(Path(out) / VALIDATION_FILE, ValidationResult, result)


def read_restyle(out: Path) -> RestyleResult:
    """`out/restyle.json` of `interp restyle` (the derived run's folder)."""
    return _read(Path(out) / RESTYLE_FILE, RestyleResult, "; run `interp restyle` again")


def write_restyle(out: Path, result: RestyleResult | dict) -> RestyleResult:
    """Write `out/restyle.json` of `interp restyle` atomically; returns it as an object."""
    return _write(Path(out) / RESTYLE_FILE, RestyleResult, result)


def read_steering_table(path: Path) -> SteeringTable:
    """A steering table (`RUN/steering/tables/<key>/table.json`)."""
    return _read(path, SteeringTable, "; run `interp steer` again")


def write_steering_table(path: Path, table: SteeringTable | dict) -> SteeringTable:
    """Write a steering table atomically; returns it as an object."""
    return _write(path, SteeringTable, table)


def read_attention_summary(path: Path) -> AttentionSummary:
    """`RUN/figures/attention_summary.json`."""
    return _read(path, AttentionSummary, "; rebuild the run's report")


def write_attention_summary(path: Path, summary: AttentionSummary | dict) -> AttentionSummary:
    """Write `RUN/figures/attention_summary.json` atomically; returns it as an object."""
    return _write(path, AttentionSummary, summary)


def read_organism_metrics(out: Path) -> OrganismMetrics:
    """`out/organism_metrics.json` of `interp organism evaluate`."""
    return _read(Path(out) / ORGANISM_METRICS_FILE, OrganismMetrics, "; run `interp organism evaluate` again")


def write_organism_metrics(out: Path, metrics: OrganismMetrics | dict) -> OrganismMetrics:
    """Write `out/organism_metrics.json` of `interp organism evaluate` atomically; returns it as an object."""
    return _write(Path(out) / ORGANISM_METRICS_FILE, OrganismMetrics, metrics)


def read_organism_manifest(folder: Path) -> OrganismManifest:
    """`folder/manifest.json` of an organism adapter (trained, or shipped under interp/builtin/adapters/)."""
    return _read(Path(folder) / MANIFEST_FILE, OrganismManifest, "; train the organism again")


def write_organism_manifest(folder: Path, manifest: OrganismManifest | dict) -> OrganismManifest:
    """Write `folder/manifest.json` of an organism adapter atomically; returns it as an object."""
    return _write(Path(folder) / MANIFEST_FILE, OrganismManifest, manifest)


# ---- the files a run keeps beside its results (`interp.results.run_files`) and a direction's sidecar -----------

_HINTS = {
    RunIdentity: "; it is written by `interp dbg` (use another --out)",
    AdapterFingerprints: "; it is written by `interp dbg` (use another --out)",
    JudgePrompts: "; it is written by `interp dbg` (use another --out)",
    GoldChecks: "; run `interp dbg` again",
    AttentionIndex: "; re-run the judging step",
    DirectionSidecar: "; compute the direction again (`interp steer`)",
}


def read_file(path: Path, kind: type[Model]) -> Model:
    """A run's bookkeeping file (identity.json, adapters.json, prompts.json, gold_checks.json, an attention index) or
    a steering direction's sidecar, as its `kind`: `codec.read_file(paths.identity, RunIdentity)`."""
    return _read(path, kind, _HINTS.get(kind, ""))


def stored_version(path: Path) -> int | None:
    """The `schema_version` a result file was written with (None: absent, unreadable, or written before schema
    versions), without parsing it as any kind: what a reader needs to tell an older file from a newer one."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    version = data.get("schema_version") if isinstance(data, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def write_file(path: Path, kind: type[Model], data: Model | dict) -> Model:
    """Write one of the files `read_file` reads (an object, or its data as the writer builds it), atomically."""
    return _write(path, kind, data)


# ---- a run's familiarity lens (`interp.run.familiarity`) ------------------------------------------------


def read_familiarity_scores(path: Path) -> FamiliarityScores:
    """One judge's answer log-probabilities (`RUN/familiarity/<judge>-<key>.json`)."""
    return _read(path, FamiliarityScores, "; run `interp metrics familiarity` again")


def write_familiarity_scores(path: Path, scores: FamiliarityScores | dict) -> FamiliarityScores:
    """Write one judge's answer log-probabilities atomically (after each answer: a killed job keeps them)."""
    return _write(path, FamiliarityScores, scores)


def read_familiarity(path: Path) -> FamiliarityResult:
    """The familiarity lens of a run (`RUN/familiarity.json`)."""
    return _read(path, FamiliarityResult, "; run `interp metrics familiarity` again")


def write_familiarity(path: Path, result: FamiliarityResult | dict) -> FamiliarityResult:
    """Write the familiarity lens of a run atomically; returns it as an object."""
    return _write(path, FamiliarityResult, result)


# ---- record files: items, responses, gold, judgments and every other JSONL a run writes -------------------

RECORD_VERSION = SCHEMA_VERSION  # the `schema_version` field of every record a JSONL file holds


def _migrate_gold(record: dict) -> dict:
    """Version 0 gold.jsonl named P(models[0]'s response wins) `p_first`, a word that also meant slot A (a gold
    judge's `p_slot_a`): now `p_first_model`."""
    if "p_first" in record and "p_first_model" not in record:
        record = {("p_first_model" if key == "p_first" else key): value for key, value in record.items()}
    return record


RECORD_MIGRATIONS: dict[str, Callable[[dict], dict]] = {"gold": _migrate_gold}


def versioned_records(records: Iterable[dict]) -> list[dict]:
    """Each record with its `schema_version` field first (a field of every record, not a header line, so an
    append-only file resumed by a later version stays one readable file, record by record)."""
    return [
        {"schema_version": RECORD_VERSION, **{k: v for k, v in r.items() if k != "schema_version"}} for r in records
    ]


def append_records(path: Path, records: Iterable[dict]) -> None:
    """Append whole records to a JSONL file in one write and fsync (`interp.storage.append_jsonl`), versioned."""
    append_jsonl(path, versioned_records(records))


def write_records(path: Path, records: Iterable[dict]) -> None:
    """A whole JSONL file of versioned records at once (temp file + rename)."""
    write_jsonl_atomic(path, versioned_records(records))


def migrated_record(record: dict, kind: str | None = None, where: str = "") -> dict:
    """One record as this version reads it: its `schema_version` taken off (none: version 0, migrated by
    `RECORD_MIGRATIONS[kind]`); a later version than this one reads is one line."""
    version = record.get("schema_version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise InterpError(f"{where}: schema_version must be a whole number, not {version!r}")
    if version > RECORD_VERSION:
        raise InterpError(
            f"{where}: a record of schema_version {version}, written by a newer interp (this one reads up to "
            f"{RECORD_VERSION}); upgrade interp to read it"
        )
    record = {key: value for key, value in record.items() if key != "schema_version"}
    migrate = RECORD_MIGRATIONS.get(kind or "")
    return migrate(record) if migrate is not None and version < 1 else record


def read_record_lines(path: Path, kind: str | None = None) -> list[tuple[int, dict]]:
    """(line number, record) of every complete line of a JSONL file a run wrote, each migrated
    (`migrated_record`); a torn last line is skipped, the file left as it is."""
    return [(n, migrated_record(r, kind, f"{path}:{n}")) for n, r in read_jsonl_lines(path)]


def read_records(path: Path, kind: str | None = None) -> list[dict]:
    """The records of a JSONL file a run wrote (`read_record_lines`)."""
    return [record for _, record in read_record_lines(path, kind)]
