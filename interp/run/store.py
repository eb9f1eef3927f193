"""The run directory: every path of a DBG run, a typed reader for each file, and its one-writer lock.

A run directory holds everything in open formats and can be resumed after a kill:
  config.toml            the validated config (a re-run whose results would differ is refused)
  identity.json          a hash of the config as run (`RunConfig.identity_hash`), kept apart from config.toml:
                         a config.toml edited after the run no longer matches it, and the run is refused
  adapters.json          model spec -> fingerprint of the adapter weights it loaded (organisms; a re-run or
                         re-judging with other weights under the same name is refused)
  items.jsonl            the sampled instructions
  responses.jsonl        both models' answers (also cached across runs, see interp.run.responses), each with the
                         length of the reasoning removed from it (`reasoning_chars`, `reasoning_words`)
  reasoning/<author>.jsonl   the reasoning blocks removed from an author's answers before judging
                         (`interp.run.reasoning`): item_id, removed text, chars, words; only for authors with any
  prompts.json           each local judge's prompt per task as it reads it (placeholders for the texts), its
                         style and the labels read (A/T/B with ties: Chen et al.'s three-way prompt)
  judgments.jsonl        one JudgmentRecord per (judge, item, order), appended batch by batch
  pointwise.jsonl        mode = "pointwise": one 1-5 rubric judgment per (judge, item, author)
  correctness.jsonl      grader set: one graded answer per (item, author) (`interp.run.correctness`)
  attention/<judge>/     per-batch safetensors shards, consolidated to attention/<judge>.safetensors + .json
                         (<judge>: `keyed_label`, the judge's label plus a hash of its exact name)
  gold.jsonl             one line per (gold judge, item): P(models[0]'s response wins)
  gold_checks.json       counters of judges that report them (HTTP judges: missing logprobs, non-labels)
  summary.json           win rates, DBG with bootstrap intervals, position consistency, label checks
  variants/<key>/        judgments re-made under one intervention or steering variant (key: a hash of
                         everything that determines them; variant.json says what it is)
  interventions/, sweeps/, steering/   result tables of the experiments over the run
  figures/, report.html  figures (PNG, PDF, HTML sections) and the report
  .interp.lock           the writer's lock (an OS lock: it dies with the process)
  .interp-output         marks the folder as the toolkit's (`interp.storage.check_output_dir`): a folder
                         holding other files is not written into without --overwrite

Names given by the user (judges, intervention and sweep names) become file names through
`interp.storage.path_label` only; where the name is the file's key (a judge's attention), `keyed_label`.

Readers never write; a torn last line left by a killed writer is skipped until the writer repairs it.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from interp.config import RunConfig, read_toml, validate_config
from interp.data import Item
from interp.errors import InterpError
from interp.metrics.dbg import p_own_from_first
from interp.results import codec
from interp.results.run_files import RunIdentity
from interp.results.summary import RunSummary
from interp.run.gold.protocol import aggregate_gold
from interp.run.records import JudgmentRecord, read_judgments
from interp.storage import (
    check_output_dir,
    check_writable_dir,
    claim_output_dir,
    keyed_label,
    path_label,
)

LOCK_NAME = ".interp.lock"
# What only a run holds, for runs written before the marker file: its lock file (made before anything else) and
# identity.json. Not config.toml, adapters.json or report.html: a user may keep files of those names in a folder.
RUN_MARKERS = (LOCK_NAME, "identity.json")


def _attention_file(folder: Path, judge: str, suffix: str, *, write: bool = False) -> Path:
    """folder/<label>-<hash><suffix>. A run written before the hash holds folder/<label><suffix> (or, before
    `path_label`, an ASCII-only label), read when it is the one there; `load_attention` then checks that its
    index names this judge, since two judges could share that older name."""
    path = folder / f"{keyed_label(judge)}{suffix}"
    if write or path.exists():  # a writer always uses the current name, never an older run's file
        return path
    for older in (
        folder / f"{path_label(judge)}{suffix}",
        folder / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', judge)}{suffix}",
    ):
        if older.name not in ("", ".", "..") and older.exists():
            return older
    return path


def migrate_gold_record(record: dict) -> dict:
    """A version-0 gold.jsonl record as this version reads it (`interp.results.codec`'s gold migration)."""
    return codec.migrated_record(record, "gold")


@dataclass(frozen=True)
class RunDir:
    """A run's folder and the path of every file in it; it reads them, and `writer()` holds the run's lock."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    # ---- paths ------------------------------------------------------------------------------------

    @property
    def config(self) -> Path:
        """The run's config.toml."""
        return self.root / "config.toml"

    @property
    def identity(self) -> Path:
        """identity.json: the config's identity hash, checked on resume."""
        return self.root / "identity.json"

    @property
    def adapters(self) -> Path:
        """adapters.json: the fingerprints of the judges' adapters."""
        return self.root / "adapters.json"

    @property
    def items(self) -> Path:
        """items.jsonl: the sampled items."""
        return self.root / "items.jsonl"

    @property
    def responses(self) -> Path:
        """responses.jsonl: every author's answers."""
        return self.root / "responses.jsonl"

    @property
    def reasoning_dir(self) -> Path:
        """The folder of the reasoning removed from answers, one file per author."""
        return self.root / "reasoning"

    def reasoning(self, model: str) -> Path:
        """The reasoning removed from `model`'s answers (named by `keyed_label`)."""
        return self.reasoning_dir / f"{keyed_label(model)}.jsonl"

    @property
    def judgments(self) -> Path:
        """judgments.jsonl: every judge's verdicts, one line per pair and order."""
        return self.root / "judgments.jsonl"

    @property
    def gold(self) -> Path:
        """gold.jsonl: the gold judges' verdicts."""
        return self.root / "gold.jsonl"

    @property
    def prompts(self) -> Path:
        """prompts.json: the judge prompts as each judge's tokenizer renders them."""
        return self.root / "prompts.json"

    @property
    def gold_checks(self) -> Path:
        """gold_checks.json: how often an HTTP gold judge's logprobs were missing or off-label."""
        return self.root / "gold_checks.json"

    @property
    def correctness(self) -> Path:
        """correctness.jsonl: the grader's verdict on each answer."""
        return self.root / "correctness.jsonl"

    @property
    def summary(self) -> Path:
        """summary.json: the run's scores."""
        return self.root / "summary.json"

    @property
    def report(self) -> Path:
        """report.html."""
        return self.root / "report.html"

    @property
    def figures(self) -> Path:
        """The figures folder."""
        return self.root / "figures"

    @property
    def attention_dir(self) -> Path:
        """The folder of the judges' span attention."""
        return self.root / "attention"

    def attention_shards(self, judge: str) -> Path:
        """The folder of the judge's attention shards (one per judged batch, consolidated at the end)."""
        return _attention_file(self.attention_dir, judge, "")

    def attention(self, judge: str, *, write: bool = False) -> Path:
        """The judge's attention arrays; `write`: the current layout's name, never an older run's file."""
        return _attention_file(self.attention_dir, judge, ".safetensors", write=write)

    def attention_index(self, judge: str, *, write: bool = False) -> Path:
        """The judge's attention index (items, orders, spans); `write`: the current layout's name."""
        return _attention_file(self.attention_dir, judge, ".json", write=write)

    @property
    def pointwise(self) -> Path:
        """SALIERI's pointwise judgments (`interp.run.pointwise`): one line per (judge, item, author)."""
        return self.root / "pointwise.jsonl"

    def recognition(self, judge: str, key: str) -> Path:
        """Preference Leakage's recognition probe of one judge under the settings `key` names
        (`interp.run.recognition.recognition_key`): another setting is another file, never the first one's lines."""
        return self.root / "recognition" / f"{keyed_label(judge)}-{key}.jsonl"

    def familiarity_scores(self, judge: str, key: str) -> Path:
        """One judge's answer log-probabilities under the settings `key` names (`interp.run.familiarity`)."""
        return self.root / "familiarity" / f"{keyed_label(judge)}-{key}.json"

    @property
    def familiarity(self) -> Path:
        """familiarity.json: the familiarity lens of the run (`interp metrics familiarity`)."""
        return self.root / "familiarity.json"

    def pointwise_attention(self, judge: str, suffix: str = ".safetensors") -> Path:
        """A pointwise judge's attention: shards (suffix ""), arrays (".safetensors") and index (".json")."""
        return _attention_file(self.attention_dir, judge, f".pointwise{suffix}", write=True)

    def variant(self, key: str) -> Path:
        """Folder of one re-judging variant, named by its identity hash (see interp.engine.variants)."""
        return self.root / "variants" / key

    def intervention(self, label: str, key: str) -> Path:
        """Folder of one causal test, named by its label and identity hash."""
        return self.root / "interventions" / f"{path_label(label)}-{key}"

    def sweep(self, name: str, key: str) -> Path:
        """Folder of one sweep, named by its name and identity hash."""
        return self.root / "sweeps" / f"{path_label(name)}-{key}"

    def steering_sweep(self, name: str, key: str) -> Path:
        """Folder of one steering sweep, named by its name and identity hash."""
        return self.steering / "sweeps" / f"{path_label(name)}-{key}"

    @property
    def steering(self) -> Path:
        """The steering folder (directions, tables, sweeps)."""
        return self.root / "steering"

    @property
    def lock_file(self) -> Path:
        """The lock a writing process holds."""
        return self.root / LOCK_NAME

    # ---- readers ----------------------------------------------------------------------------------

    def read_config(self) -> RunConfig:
        """The run's config; refused when config.toml was edited after the run (its identity no longer matches
        identity.json), since the results in the folder were made under the config as it was."""
        config = validate_config(RunConfig, read_toml(self.config, "run config"), str(self.config))
        recorded = self.read_identity()
        if recorded is not None and recorded != config.identity_hash():
            raise InterpError(
                f"{self.config} was edited after the run was made (it no longer matches "
                f"{self.identity.name}); its results "
                "were made under the config as run: restore config.toml, or run the new config with another --out"
            )
        return config

    def read_identity(self) -> str | None:
        """The recorded hash of the config as run; None for a run written before it was recorded. A run whose
        adapters.json carries a schema version was written after identity.json was (every such run has one): its
        identity.json missing is one line, not a run read without the check that its config.toml is the one run."""
        if not self.identity.is_file():
            if self.adapters.is_file() and codec.stored_version(self.adapters) is not None:
                raise InterpError(
                    f"{self.identity} is missing (the run's version writes it): restore it, or run the config again "
                    "with another --out; without it, an edited config.toml would pass for the one run"
                )
            return None
        try:
            return codec.read_file(self.identity, RunIdentity).config_identity
        except InterpError:
            raise InterpError(
                f"{self.identity}: not a run identity file; it is written by `interp dbg` (use another --out)"
            ) from None

    def read_items(self) -> list[Item]:
        """The run's items, in order."""
        return [Item(**record) for record in codec.read_records(self.items, "items")]

    def read_responses(self) -> dict[str, dict[str, str]]:
        """`responses[model][item_id]` = that model's answer."""
        responses: dict[str, dict[str, str]] = {}
        for record in codec.read_records(self.responses, "responses"):
            responses.setdefault(record["model"], {})[record["item_id"]] = record["text"]
        return responses

    def read_reasoning(self) -> dict[str, dict[str, dict]]:
        """`reasoning[model][item_id]` = {"text", "chars", "words"}: what was removed from that answer before
        judging; only answers that had any, of the authors whose file exists."""
        found: dict[str, dict[str, dict]] = {}
        for model in self.read_responses():
            path = self.reasoning(model)
            if path.is_file():
                found[model] = {
                    r["item_id"]: {k: r[k] for k in ("text", "chars", "words")}
                    for r in codec.read_records(path, "reasoning")
                }
        return found

    def read_judgments(self, judge: str | None = None) -> list[JudgmentRecord]:
        """The judgments (one judge's with `judge`), as records."""
        return read_judgments(self.judgments, judge=judge)

    def read_gold(self) -> dict[str, dict[str, float]]:
        """`gold[judge][item_id]` = P(models[0]'s response wins) from that gold judge."""
        gold: dict[str, dict[str, float]] = {}
        for record in codec.read_records(self.gold, "gold"):
            gold.setdefault(record["judge"], {})[record["item_id"]] = record["p_first_model"]
        return gold

    def read_summary(self) -> RunSummary:
        """The run's scores (`interp.results.codec.read_summary`: older files migrated)."""
        if not self.summary.is_file():
            raise InterpError(f"{self.root} has no summary.json; run `interp dbg` or `interp demo` first")
        return codec.read_summary(self.summary)

    # ---- the writer ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def writer(self) -> Iterator["RunDir"]:
        """Hold the run's write lock for the block; a second writer gets a one-line error naming the holder.

        Call it only after every input has been validated: it creates the directory and its lock file. The lock
        is re-entrant within a process (a step that writes calls it too, under a job that already holds it).
        """
        check_writable_dir(self.root)
        self.check_layout()
        claim_output_dir(self.root, RUN_MARKERS)
        lock = self._acquire()
        try:
            yield self
        finally:
            lock.release()

    def check_output(self, *, overwrite: bool = False) -> None:
        """`--out` for a run (`interp.storage.check_output_dir`): a new or empty folder, or a run to resume;
        a folder of other files only with `overwrite`."""
        check_output_dir(self.root, markers=RUN_MARKERS, overwrite=overwrite)
        self.check_layout()

    def check_not_nested(self) -> None:
        """`--out` of `interp dbg` is not inside another run's folder (`runA/sub`): its files would be mixed with
        that run's (its variants, interventions, report), and an `--overwrite` of one would reach the other. One
        line naming the run it lies in; the toolkit's own nested runs (an organism's evaluation, a validation)
        are made by their commands, not by this check's callers."""
        root = self.root.expanduser().resolve()
        for parent in root.parents:
            if any((parent / name).is_file() for name in RUN_MARKERS):
                raise InterpError(
                    f"{self.root} lies inside the run {parent}; pass an --out beside it, not in it (its files "
                    "would be mixed with that run's)"
                )

    def check_layout(self) -> None:
        """Each of the run's sub-folders is a folder where it exists: a file in its place is one line, before
        anything is written (not a NotADirectoryError once work has been done)."""
        folders = [
            self.attention_dir,
            self.figures,
            self.steering,
            self.steering / "sweeps",
            self.steering / "directions",
        ]
        folders += [self.root / name for name in ("variants", "interventions", "sweeps", "reasoning")]
        for folder in folders:
            if folder.exists() and not folder.is_dir():
                raise InterpError(
                    f"{folder} is a file where the run keeps a folder; move it away, or use another run directory"
                )

    def check_not_locked(self) -> None:
        """Fail at once, naming the holder, when another process writes the run; writes nothing.

        For a job that validates slowly (loading models) before it takes the lock with `writer()`.
        """
        if self.lock_file.is_file():
            self._acquire().release()

    def _acquire(self):
        from filelock import FileLock, Timeout

        lock = FileLock(str(self.lock_file), is_singleton=True)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            raise InterpError(
                f"{self.root} is being written by another interp process (pid {lock_holder(self.lock_file)}); "
                "wait for it to finish or use another --out"
            ) from None
        return lock


def lock_holder(lock_file: Path) -> str:
    """The pid holding an OS lock on `lock_file`, read from /proc/locks (Linux); "unknown" elsewhere.

    The lock file's content is never written, so taking the lock leaves the run directory's bytes as they were.
    """
    try:
        inode = Path(lock_file).stat().st_ino
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[1] in ("FLOCK", "POSIX") and fields[5].rsplit(":", 1)[-1] == str(inode):
                return fields[4]
    except OSError:
        pass
    return "unknown"


# ---- a finished run --------------------------------------------------------------------------------


@dataclass
class Run:
    """A finished DBG run read back from disk: what every experiment over the run holds fixed."""

    config: RunConfig
    dir: RunDir
    items: list[Item]
    responses: dict[str, dict[str, str]]
    gold_first: np.ndarray  # aggregated gold P(models[0]'s response wins) per item
    gold_judges: list[str]

    @property
    def n_gold_verdicts(self) -> int:
        """Gold verdicts the run holds: one per item and gold judge."""
        return len(self.items) * len(self.gold_judges)

    def gold_own(self, own_model: str) -> np.ndarray:
        """Gold P(own_model's response wins) per item."""
        return p_own_from_first(self.gold_first, own_model, self.config.models[0])


def empty_answers(responses: dict[str, dict[str, str]], items) -> dict[str, list[str]]:
    """model -> the ids of the run's items it answered with nothing (white space only), for models with any;
    `responses` as `RunDir.read_responses` gives them."""
    found = {
        model: [i.id for i in items if i.id in answers and not answers[i.id].strip()]
        for model, answers in responses.items()
    }
    return {model: ids for model, ids in found.items() if ids}


def check_finished(run_dir: Path) -> RunDir:
    """A finished run holds its config, items, responses and gold verdicts (gold is the step after judging: a
    run killed while judging has none). The one test every command that reads a run as finished applies."""
    paths = RunDir(Path(run_dir))
    for required in (paths.config, paths.items, paths.responses, paths.gold):
        if not required.is_file():
            raise InterpError(
                f"{run_dir} is not a finished run ({required.name} missing); run `interp dbg` or `interp demo` first"
            )
    return paths


def read_run(run_dir: Path) -> Run:
    """The inputs every experiment over a finished run holds fixed (a `Run`; the notebook's `interp.load_run`
    wraps it with the scores in a `RunResult`). Raises InterpError when a required file is missing."""
    paths = check_finished(run_dir)
    paths.check_layout()
    config = paths.read_config()
    items = paths.read_items()
    per_judge = paths.read_gold()
    missing = [name for name, values in per_judge.items() if set(values) < {i.id for i in items}]
    if not per_judge or missing:
        raise InterpError(f"{run_dir}: gold verdicts are incomplete; resume the run with `interp dbg`")
    gold_first = np.array(aggregate_gold({name: [values[i.id] for i in items] for name, values in per_judge.items()}))
    return Run(config, paths, items, paths.read_responses(), gold_first, list(per_judge))
