"""A DBG run: config -> items -> responses -> judging (both orders, attention on the way) -> gold -> summary.

`run_dbg` is resumable: finished steps and judgments are read back from the run directory (`RunDir`), not
redone. Everything is validated before the first byte is written, and the whole write holds the run's lock.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Collection, Mapping, Sequence

from tqdm.auto import tqdm

from interp.config import RunConfig
from interp.core.adapters import adapter_fingerprint
from interp.core.backends import check_backend_fits, make_backend
from interp.core.model_files import check_distinct, one_model, spec_content_key
from interp.core.models import ALIASES, LoadedModel, ModelCache, check_finite_output, prepare_weights
from interp.core.placement import placement_of
from interp.core.timings import Timings
from interp.data import Item, load_items, sample_items
from interp.errors import InterpError
from interp.results import codec
from interp.results.run_files import AdapterFingerprints, GoldChecks, JudgePrompts, RunIdentity
from interp.results.summary import RunSummary
from interp.run.attention import consolidate_attention
from interp.run.correctness import check_gradable, grade_run_answers
from interp.run.gold import (
    GoldJudge,
    ModelJudge,
    Pair,
    RecordedJudge,
    ReferenceJudge,
    check_gold_judges,
    gold_verdicts,
)
from interp.run.gold.human import human_labels
from interp.run.gold.protocol import ReportsChecks
from interp.run.imported import check_imports_unchanged, imported_responses
from interp.run.judging import JudgingOptions, batches, judge_prompt_record, judge_tasks, run_judging
from interp.run.pointwise import consolidate_pointwise_attention, pointwise_tasks, run_pointwise_judging
from interp.run.reasoning import reasoning_row
from interp.run.responses import Response, check_generation_lengths, decoding_of, generate_responses
from interp.run.server_judging import run_server_judging
from interp.run.server_responses import server_responses
from interp.run.store import RunDir, empty_answers
from interp.run.summary import write_summary
from interp.storage import atomic_write_text


def adapter_fingerprints(config: RunConfig) -> dict[str, str]:
    """Model spec -> fingerprint of its adapter weights, for every local model of the run that loads one."""
    specs = dict.fromkeys([*config.models, *config.judge_specs, *config.gold.models])
    local = [s for s in specs if s not in config.imports and config.server(s) is None]
    return {spec: fingerprint for spec in local if (fingerprint := adapter_fingerprint(spec)) is not None}


def file_weights(config: RunConfig) -> dict[str, str]:
    """Model spec -> content key of the files it names, for every local model of the run given as a model folder
    or a .gguf file (`interp.core.model_files`; an adapter folder is in `adapter_fingerprints`)."""
    specs = dict.fromkeys([*config.models, *config.judge_specs, *config.gold.models])
    local = [s for s in specs if s not in config.imports and config.server(s) is None]
    keys = {spec: spec_content_key(spec) for spec in local}
    return {spec: key for spec, key in keys.items() if key is not None and not key.startswith("adapter:")}


def check_adapters(config: RunConfig, paths: RunDir) -> dict[str, dict[str, str]]:
    """A run's judgments and answers are keyed by the weights that made them, not by the model's name or folder:
    the adapter weights' fingerprints, and the content of a model folder's or .gguf file's files, must be those
    recorded (a spec a run written before the check has no record of is recorded at its next write). Returns
    the current record (`adapters.json`'s fields)."""
    current = {"fingerprints": adapter_fingerprints(config), "weights": file_weights(config)}
    if not paths.config.is_file():
        return current
    record = codec.read_file(paths.adapters, AdapterFingerprints) if paths.adapters.is_file() else None
    recorded = record.fingerprints if record is not None else {}
    changed = sorted(
        name
        for name in set(recorded) | set(current["fingerprints"])
        if recorded.get(name) != current["fingerprints"].get(name)
    )
    if changed:
        raise InterpError(
            f"{paths.root} was judged with other adapter weights for {', '.join(changed)} than are installed now; "
            "its judgments are not theirs: use another --out"
        )
    weights = record.weights if record is not None else {}
    # an author that judges nothing matters until its answers are written (responses.jsonl is written whole)
    used = {*config.judge_specs, *config.gold.models, *(() if paths.responses.is_file() else config.models)}
    changed = sorted(
        name for name in weights if name in used & set(current["weights"]) and weights[name] != current["weights"][name]
    )
    if changed:
        raise InterpError(
            f"{paths.root} was made with other files in {', '.join(changed)} than are there now (weights, tokenizer "
            "or config changed in place); its answers and judgments are not theirs: use another --out"
        )
    return current


def check_resumable(config: RunConfig, paths: RunDir) -> dict[str, dict[str, str]]:
    """A run directory may be resumed only by a config whose results would be the same (and the same weights:
    `check_adapters`, whose record is returned)."""
    if paths.config.is_file() and paths.read_config().identity() != config.identity():
        raise InterpError(f"{paths.root} holds a run with a different config; use another --out or delete it")
    return check_adapters(config, paths)


def sampled_items(config: RunConfig, paths: RunDir) -> list[Item]:
    """The run's items: read back when the run has them, else loaded and sampled (nothing written)."""
    if paths.items.is_file():
        stored = paths.read_items()
        check_items_unchanged(config, paths, stored)
        return stored
    return sample_items(load_items(config.data), n=config.n, seed=config.seed)


def check_items_unchanged(config: RunConfig, paths: RunDir, stored: Sequence[Item]) -> None:
    """A resumed run's items are those its data gives now (the same sample of the same ids, queries, references),
    and its imported answers those of its files (`imported.check_imports_unchanged`); an edit since the run
    started is one line (use another --out), never ignored. A data file removed since is not checked."""
    try:
        fresh = sample_items(load_items(config.data), n=config.n, seed=config.seed)
    except InterpError:
        fresh = None
    if fresh is not None:
        what = [[(i.id, i.task, i.query, i.reference) for i in items] for items in (stored, fresh)]
        if what[0] != what[1]:
            changed = next((a[0] for a, b in zip(*what, strict=False) if a != b), None) or "the sample"
            raise InterpError(
                f"the items of {config.data} changed since {paths.root} was started (first: {changed}); its "
                "answers and judgments are of the old items: use another --out"
            )
    if paths.responses.is_file():
        check_imports_unchanged(config.imports, codec.read_records(paths.responses), paths.root)


def prepare_responses(
    config: RunConfig,
    paths: RunDir,
    items: Sequence[Item],
    models: ModelCache,
    progress: bool,
    answers: Mapping[str, Sequence[Response]] | None = None,
) -> dict[str, dict[str, str]]:
    """The run's responses: read back when complete, else generated, asked for or imported per model (`answers`:
    given records that stand for a model's answers, e.g. a restyled run's rewrites)."""
    existing = paths.read_responses()
    if all(set(existing.get(m, {})) >= {i.id for i in items} for m in config.models):
        if config.empty_answers == "refuse":
            check_answers_not_empty(existing, items)
        return existing
    decoding = decoding_of(config)
    records = []
    for spec in config.models:
        if answers is not None and spec in answers:
            records += list(answers[spec])
        elif spec in config.imports:
            records += imported_responses(config.imports[spec], items, spec, max_words=config.max_words)
        elif config.server(spec) is not None:
            records += server_responses(config.server(spec), items, decoding, progress=progress)
        else:
            records += generate_responses(
                models.get(spec), items, decoding, name=spec, progress=progress, treatment=config.answers == "treatment"
            )
    if config.empty_answers == "refuse":
        check_answers_not_empty(_by_model(records), items)
    write_responses(paths, records)
    return paths.read_responses()


def write_responses(paths: RunDir, records: Sequence[Response]) -> None:
    """responses.jsonl (the judged text, and the length of the reasoning removed from it), and for each author
    with any reasoning removed, `reasoning/<author>.jsonl` with what was removed (`interp.run.reasoning`)."""
    rows = []
    removed: dict[str, list[dict]] = {}
    for record in records:
        line = reasoning_row(record.item_id, record.reasoning)
        rows.append(
            {k: v for k, v in asdict(record).items() if k != "reasoning"}
            | {"reasoning_chars": line["chars"], "reasoning_words": line["words"]}
        )
        if record.reasoning:
            removed.setdefault(record.model, []).append(line)
    for model, lines in removed.items():
        codec.write_records(paths.reasoning(model), lines)
    codec.write_records(paths.responses, rows)


def _by_model(records) -> dict[str, dict[str, str]]:
    answers: dict[str, dict[str, str]] = {}
    for record in records:
        answers.setdefault(record.model, {})[record.item_id] = record.text
    return answers


def check_answers_not_empty(responses: dict[str, dict[str, str]], items: Sequence[Item]) -> None:
    """Every answer to be judged holds text: an empty (or white-space) answer gives empty spans, a verdict on
    nothing and a DBG of +0.0 that means nothing, so it is refused before any judging, naming the model and items."""
    for model, empty in empty_answers(responses, items).items():
        shown = ", ".join(empty[:5]) + (", ..." if len(empty) > 5 else "")
        raise InterpError(
            f"{model} gave an empty answer to {len(empty)} of the run's {len(items)} items ({shown}); nothing was "
            "judged: raise max_new_tokens, fix the model's generation (its EOS, its chat template), drop those items, "
            'or set empty_answers = "judge" to judge them as they are'
        )


def gold_judges(config: RunConfig, models: ModelCache) -> list[GoldJudge]:
    """The configured gold judges, in a fixed order: reference, recorded, local models, HTTP."""
    judges: list[GoldJudge] = []
    if config.gold.reference:
        judges.append(ReferenceJudge())
    judges += [RecordedJudge(p) for p in config.gold.recorded]
    for spec in config.gold.models:
        if spec in config.models:
            raise InterpError(f"gold model {spec!r} is one of the judged pair; a gold judge must be outside the pair")
        judges.append(ModelJudge(make_backend(models.get(spec), "hf"), name=spec, batch_size=config.batch_size))
    if config.gold.http:
        from interp.run.gold.http import HTTPJudge

        judges += [HTTPJudge.from_config(c) for c in config.gold.http]
    check_gold_judges(judges)
    return judges


def run_gold_step(
    config: RunConfig,
    paths: RunDir,
    items: Sequence[Item],
    responses: dict,
    models: ModelCache,
    progress: bool,
    judges: Sequence[GoldJudge] | None = None,
) -> dict[str, list[float]]:
    """P(models[0]'s response wins) per item for every gold judge; cached in gold.jsonl per judge."""
    first, second = config.models
    pairs = {item.id: Pair(item, responses[first][item.id], responses[second][item.id]) for item in items}
    judges = judges if judges is not None else gold_judges(config, models)
    existing = paths.read_gold()
    for judge in tqdm(judges, desc="gold judges", disable=not progress):
        have = existing.setdefault(judge.name, {})
        missing = [item for item in items if item.id not in have]
        for chunk in batches(missing, max(config.batch_size, 8)):
            values = gold_verdicts(judge, [pairs[item.id] for item in chunk])
            codec.append_records(
                paths.gold,
                [
                    {"judge": judge.name, "item_id": item.id, "p_first_model": v}
                    for item, v in zip(chunk, values, strict=False)
                ],
            )
            have.update({item.id: v for item, v in zip(chunk, values, strict=False)})
    checks = {judge.name: judge.stats for judge in judges if isinstance(judge, ReportsChecks) and judge.stats}
    if checks:  # e.g. HTTP judges: how often logprobs were missing or the top tokens were not labels
        codec.write_file(paths.gold_checks, GoldChecks, {"judges": checks})
    return {judge.name: [existing[judge.name][item.id] for item in items] for judge in judges}


def _checked_gold_judges(config: RunConfig, paths: RunDir, items, models: ModelCache) -> list:
    """The run's gold judges, their human labels and HTTP endpoint checked before any judged model loads."""
    judges = gold_judges(config, models)
    if config.gold.human:  # human labels that check gold: a bad file is one line before any model loads
        human_labels(config.gold.human, items, config.models)
    if config.gold.http:  # before the judged models load: a wrong URL fails in seconds
        check_http_gold(judges, paths, items)
    return judges


def _judge_every_judge(
    config: RunConfig, paths: RunDir, models: ModelCache, work: tuple, progress: bool, timings: Timings
) -> None:
    """Each of the config's judges over the run's tasks (`work`: items, responses, tasks), one timed step each:
    on a server, pointwise, or pairwise with the attention readout consolidated per judge."""
    items, responses, tasks = work
    readout = None if config.attention == "none" else config.attention
    runners = judge_backends(config, models)
    for judge in config.judge_specs:
        with timings.step(f"judging {judge}"):
            if config.server(judge) is not None:  # DBG only: a server returns no attention
                run_server_judging(config.server(judge), tasks, judgments_path=paths.judgments, progress=progress)
                continue
            model = models.get(judge)
            if config.mode == "pointwise":
                judge_pointwise(config, paths, runners[judge], judge, items, responses, readout, progress)
                continue
            run_judging(
                runners[judge],
                judge,
                tasks,
                judgments_path=paths.judgments,
                shard_dir=paths.attention_shards(judge) if readout else None,
                options=JudgingOptions(
                    batch_size=config.batch_size,
                    ties=config.ties,
                    readout=readout,
                    progress=progress,
                    cot=config.cot,
                    rationale_tokens=config.rationale_tokens,
                ),
            )
            if readout:
                consolidate_attention(paths, judge, model, items, readout)


def run_dbg(
    config: RunConfig,
    out: Path,
    *,
    progress: bool = True,
    models: ModelCache | None = None,
    overwrite: bool = False,
    timings: Timings | None = None,
    answers: Mapping[str, Sequence[Response]] | None = None,
) -> RunSummary:
    """The whole behavioural pipeline (returns the run's `summary.json` as a `RunSummary`); resumable: finished steps
    and judgments are read back, not redone.

    Everything (output location, config, data, models, prompt lengths, gold judges, imported answers) is
    checked before the first byte is written, so a failure leaves the run directory as it was. The config
    is saved with the dtype its models run in (resolved from `device`/`dtype` on this machine), so a resume
    in another precision is refused like any other change of config. `out` may be new, empty or a run to
    resume; a folder holding other files is refused unless `overwrite` (`RunDir.check_output`). `timings`
    collects the seconds of each step (loading models, generation, judging per judge, gold, summary). `answers`:
    an author's answers given as records (a restyled run's rewrites, `interp.studies.restyle`): written as
    its responses, never generated.
    """
    timings = timings if timings is not None else Timings()
    paths = RunDir(Path(out))
    paths.check_output(overwrite=overwrite)
    check_source_names(config)
    check_distinct_models(config)
    placement = placement_of(config)
    config = config.model_copy(update={"dtype": placement.dtype})
    adapters = check_resumable(config, paths)
    paths.check_not_locked()  # fail at once, before loading models, when another process writes this run
    items = sampled_items(config, paths)
    check_gradable(items, config.grader)
    models = models if models is not None else ModelCache(placement)
    judges = _checked_gold_judges(config, paths, items, models)
    with timings.step("load and check models"):
        check_models(config, paths, items, models, given=set(answers or ()))
    for judge in judges:  # a missing reference answer is found here, not after responses and judgments are written
        if isinstance(judge, ReferenceJudge):
            judge.check_items(items)
    prompts = judge_prompts(config, paths, items, models)
    with paths.writer():
        codec.write_file(paths.adapters, AdapterFingerprints, {k: dict(sorted(v.items())) for k, v in adapters.items()})
        atomic_write_text(paths.config, config.to_toml())
        codec.write_file(paths.identity, RunIdentity, {"config_identity": config.identity_hash()})
        if not paths.items.is_file():
            codec.write_records(paths.items, [item.record() for item in items])
        with timings.step("generation"):
            responses = prepare_responses(config, paths, items, models, progress, answers)
        with timings.step("grading"):
            grade_run_answers(paths.correctness, items, responses, config.models, config.grader)
        tasks = judge_tasks(items, responses, config.models)
        codec.write_file(paths.prompts, JudgePrompts, {"judges": prompts})
        _judge_every_judge(config, paths, models, (items, responses, tasks), progress, timings)
        with timings.step("gold"):
            gold = run_gold_step(config, paths, items, responses, models, progress, judges)
        with timings.step("summary"):
            sizes = {
                spec: models.models[spec].n_parameters
                for spec in (*config.models, *config.judge_specs)
                if spec in models.models
            }
            return write_summary(config, paths, items, gold, placement.record(), sizes)


def judge_pointwise(
    config: RunConfig,
    paths: RunDir,
    backend,
    judge: str,
    items: Sequence[Item],
    responses: dict,
    readout: str | None,
    progress: bool,
) -> None:
    """SALIERI's pointwise judging of every author's answers by one judge, and its attention consolidated."""
    shards = paths.pointwise_attention(judge, "") if readout else None
    tasks = pointwise_tasks(items, responses, config.models)
    run_pointwise_judging(
        backend,
        judge,
        tasks,
        out=(paths.pointwise, shards),
        batch_size=config.batch_size,
        max_rationale_tokens=config.rationale_tokens,
        readout=readout,
        progress=progress,
    )
    if readout:
        consolidate_pointwise_attention(paths, judge, backend.model, items, config.models, readout)


def judge_prompts(config: RunConfig, paths: RunDir, items: Sequence[Item], models: ModelCache) -> dict:
    """What prompts.json holds: what each local judge reads (`judging.judge_prompt_record`). A run judged under
    other prompts (another version of the toolkit) is refused (`check_judged_prompts`)."""
    local = {judge: models.get(judge) for judge in config.judge_specs if config.server(judge) is None}
    record = judge_prompt_records(config, items, local)
    check_judged_prompts(paths, record)
    return record


def judge_prompt_records(config: RunConfig, items: Sequence[Item], models: Mapping[str, LoadedModel]) -> dict:
    """Judge name -> what it reads in this run as this version builds it (`judging.judge_prompt_record`), for
    each judge of `models`."""
    tasks = [item.task for item in items]
    return {
        judge: judge_prompt_record(model, tasks, ties=config.ties, cot=config.cot, mode=config.mode)
        for judge, model in models.items()
    }


def check_judged_prompts(paths: RunDir, record: Mapping[str, dict]) -> None:
    """The one check that a run's judgments were made under the prompts this version builds (`record`, from
    `judge_prompt_records`, for some or all of its judges): a judged run whose prompts.json differs for any of
    them is refused, since its judgments and new ones (a resumed run's, a re-judging's) would not compare."""
    judged = paths.judgments.is_file() or paths.pointwise.is_file()
    if not judged or not paths.prompts.is_file():
        return
    try:
        stored = codec.read_file(paths.prompts, JudgePrompts).judges
    except InterpError:  # not a prompts file this version reads: not the prompts it builds
        stored = None
    if stored is None or any(stored.get(judge) != prompts for judge, prompts in record.items()):
        raise InterpError(
            f"{paths.root} was judged under other judge prompts than this version builds ({paths.prompts}); "
            "its judgments would not compare with new ones: use another --out, or re-make the run"
        )


def judge_backends(config: RunConfig, models: ModelCache) -> dict:
    """The backend of each local judge. With the hf backend, judges whose lower layers hold the same weights (a
    base model and its organisms) share those layers' pass (`shared_trunk.trunk_backends`)."""
    local = {judge: models.get(judge) for judge in config.judge_specs if config.server(judge) is None}
    if config.backend == "hf":
        # imported here: the hf backend loads transformers, which must not configure its logging before the CLI
        # quiets it (`import interp.run.pipeline` stays light)
        from interp.core.backends.shared_trunk import trunk_backends

        return trunk_backends(local)
    return {judge: make_backend(model, config.backend) for judge, model in local.items()}


def check_models(
    config: RunConfig, paths: RunDir, items: Sequence[Item], models: ModelCache, given: Collection[str] = ()
) -> None:
    """Load every local model the run needs (a missing one fails here), check that each judge fits the backend,
    that each generation prompt still to run, plus max_new_tokens, fits its model's context, and read every
    imported answer file (`given`: authors whose answers are given, not generated)."""
    existing = paths.read_responses()
    decoding = decoding_of(config)
    unanswered = {spec: [item for item in items if item.id not in existing.get(spec, {})] for spec in config.models}
    # an author whose answers are all in the run is not loaded (nor converted): a resumed run judges on a machine
    # that lacks the authors' weights
    local = [*(m for m in config.models if unanswered[m]), *config.judge_specs, *config.gold.models]
    skip = set(config.imports) | set(given) | set(models.models)
    prepare_weights(spec for spec in local if spec not in skip and config.server(spec) is None)
    used = []  # local models that will answer or judge
    for spec in config.models:
        missing = unanswered[spec]
        if not missing or config.server(spec) is not None or spec in given:
            continue
        if spec in config.imports:
            imported_responses(config.imports[spec], missing, spec, max_words=config.max_words)
        else:
            check_generation_lengths(
                models.get(spec), missing, decoding, name=spec, treatment=config.answers == "treatment"
            )
            used.append(spec)
    for spec in config.judge_specs:  # a judge the backend cannot hook fails here, before any answer is generated
        if config.server(spec) is None:
            check_backend_fits(models.get(spec), config.backend)
            used.append(spec)
    for spec in config.gold.models:
        check_backend_fits(models.get(spec), "hf", probe=False)  # a gold judge gives verdicts only
        used.append(spec)
    for spec in dict.fromkeys(used):
        check_finite_output(models.get(spec))


def check_source_names(config: RunConfig) -> None:
    """An imported or served model named like a built-in alias would silently stand in for that model."""
    for kind, names in (("imported model", config.imports), ("server", [server.name for server in config.servers])):
        shadowing = [name for name in names if name in ALIASES]
        if shadowing:
            raise InterpError(f"{kind} {shadowing[0]!r} has the name of a built-in model alias; give it another name")


def check_distinct_models(config: RunConfig) -> None:
    """A pair of one model (`/m/j` and `/m/../m/j/`: DBG 0 against itself), a judge named twice, or a gold model
    that is an author or a judge (gold would agree with itself) is refused in one line (`model_files.one_model`)."""
    first, second = config.models
    if one_model(first, second):
        raise InterpError(f"models {first!r} and {second!r} are one model; a pair needs two different authors")
    check_distinct(config.judge_specs, "judges")
    check_distinct(config.gold.models, "[gold] models")
    for spec in config.gold.models:
        for other in (*config.models, *config.judge_specs):
            if one_model(spec, other):
                role = "one of the judged pair" if other in config.models else "a judge of the run"
                raise InterpError(
                    f"gold model {spec!r} is {role} ({other!r}); a gold judge must be outside the pair and the judges"
                )


def check_http_gold(judges: Sequence[GoldJudge], paths: RunDir, items: Sequence[Item]) -> None:
    """An HTTP gold judge with verdicts still to fetch must answer before the run writes anything."""
    from interp.run.gold.http import HTTPJudge

    have = paths.read_gold()
    for judge in judges:
        if isinstance(judge, HTTPJudge) and not set(have.get(judge.name, {})) >= {item.id for item in items}:
            judge.check_reachable()
