"""Style rewriting as an intervention on the answers (DBG paper, Section 4.2 and Appendix A.3): `interp restyle`.

Both authors' answers of a finished run are rewritten into one style by a rewriter that is neither an author,
a judge nor a gold judge of the run; the rewrites become the answers of a derived run (a run of its own in
`--out`: config.toml, responses.jsonl, judgments with attention, gold, summary.json, report.html), judged and
gold-judged again by the run's own judges. Per judge, DBG before (the source run) and after (the derived run)
is tested with the judge-level test of `interp intervene` (`interp.causal.judge_test.judge_level_test`): the
judge's change of P(own) against the spread of its control judges' changes, and the share of its DBG gap over
them that the rewrite removes. The semantic check: each original's cosine similarity to its rewrite under a
local embedding model (`interp.core.embeddings`), rewrites below `threshold` flagged, and a 2-D map of
originals and rewrites per author. Everything lands in `--out`/restyle.json.

Keys and resuming: the derived run's name carries a hash of the source run's identity and answers, the
style, the rewriter (its weights' fingerprint, or the served model), the rewrite prompt and the rewrites, so a
different restyle never resumes another's folder; rewrites and embeddings are cached on disk and the derived run resumes
as any run does, so running the command again rewrites, embeds and judges nothing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from interp.causal.design import TestDesign, judge_identity, resolve_controls
from interp.causal.judge_test import JudgeTestOptions, holm_judges, judge_level_fields, judge_level_test
from interp.config import PlacementKeys, RunConfig
from interp.core.embeddings import cached_embeddings, cosine_pairs
from interp.core.models import ModelCache, model_identity, own_model
from interp.core.placement import placement_of
from interp.engine.variants import check_rejudgeable, check_run_prompts, own_probabilities, self_judges
from interp.errors import InterpError
from interp.metrics.causal_test import ALPHA, N_FLIPS
from interp.results.codec import built, write_records, write_restyle
from interp.results.studies import RestyleResult
from interp.results.summary import RunSummary
from interp.run.pipeline import run_dbg
from interp.run.responses import decoding_of
from interp.run.rewriting import Original, Rewriter, as_responses, check_style, rewrite
from interp.run.store import Run, RunDir, read_run

SIMILARITY_THRESHOLD = 0.90
"""Rewrites whose cosine similarity to their original is below this are flagged. Measured with the default
embedder on the 16 AlpacaEval-format answers of tests/fixtures: an answer against another instruction's answer
0.52-0.82, an answer against its own first third 0.96-0.99 (docs/restyle.md)."""

DEFAULT_EMBEDDER = "smollm2-135m-instruct"


@dataclass(frozen=True)
class RestyleOptions:
    """What a restyle does: the style, the rewriter (None: the `plain` normaliser; `rewriter_url`: the
    rewriter is that OpenAI-compatible server's model), the embedding model and threshold of the semantic
    check, the control judges of the judge-level test (None: automatic, among the run's judges) and its level."""

    style: str = "plain"
    rewriter: str | None = None
    rewriter_url: str | None = None
    embedder: str = DEFAULT_EMBEDDER
    threshold: float = SIMILARITY_THRESHOLD
    control_judges: tuple[str, ...] | None = None
    test_alpha: float = ALPHA
    projection: str = "auto"

    def __post_init__(self) -> None:
        check_style(self.style, self.rewriter)
        if self.rewriter_url is not None and self.rewriter is None:
            raise InterpError(
                "--rewriter-url names where the rewriter is served: give --rewriter MODEL (the served model's name) too"
            )
        if not -1 < self.threshold < 1:
            raise InterpError(f"--threshold {self.threshold} must be a cosine similarity between -1 and 1 (exclusive)")
        if not 0 < self.test_alpha < 1:
            raise InterpError(f"--test-alpha {self.test_alpha} must be between 0 and 1")
        if self.projection not in ("auto", "tsne", "pca"):
            raise InterpError(f"--projection {self.projection!r}: use auto, tsne or pca")


def check_rewriter(config: RunConfig, rewriter: Rewriter) -> None:
    """The rewriter is none of the run's authors, judges or gold judges (by what it loads, an organism by the
    answers it owns, a served model by its name): its own style would favour some of them."""
    if rewriter.model is None:
        return
    name = rewriter.model
    served = {server.model for server in config.servers} | {judge.model for judge in config.gold.http}
    roles = [
        ("an author", config.models),
        ("a judge under test", config.judge_specs),
        ("a gold judge", config.gold.models),
    ]
    for role, specs in roles:
        for spec in specs:
            same = (
                name == spec
                if rewriter.url
                else judge_identity(name) == judge_identity(spec)
                or model_identity(own_model(name)) == model_identity(own_model(spec))
            )
            if same:
                raise InterpError(
                    f"--rewriter {name!r} is {role} of this run ({spec!r}); the rewriter must be neither an "
                    "author nor a judge (nor a gold judge): its style would favour itself"
                )
    if rewriter.url and name in served:
        raise InterpError(
            f"--rewriter {name!r} is served to this run as an author, judge or gold judge; the rewriter "
            "must be none of them"
        )


def derived_config(source: Run, key: str, where: PlacementKeys | None) -> RunConfig:
    """The source config for the rewrites: named after the restyle's key, without human labels (they judged the
    originals); placed where `where` says."""
    config = source.config
    if config.gold.recorded:
        raise InterpError(
            "this run's gold includes recorded verdicts, which judged the original answers, not their "
            "rewrites; restyle a run whose gold judges can judge again"
        )
    update: dict = {"name": f"{config.name}-restyle-{key[:10]}", "gold": config.gold.model_copy(update={"human": None})}
    if where is not None:
        update |= where.model_dump(include={"device", "dtype", "device_map"}, exclude_none=True)
    return config.model_copy(update=update)


def _controls(source: Run, judge: str, named: tuple[str, ...] | None) -> list[str]:
    """The judge's control judges among the run's judges (they need judgments before and after the rewrite)."""
    controls = resolve_controls(source, judge, TestDesign(control_judges=named))
    if named is None:
        return [c for c in controls if c in source.config.judge_specs]
    outside = [c for c in controls if c not in source.config.judge_specs]
    if outside:
        raise InterpError(
            f"--control-judge {outside[0]!r} did not judge this run; a restyle's control judges are judges "
            "of the run (judged before and after)"
        )
    return controls


def _check_out(source: Run, out: Path, overwrite: bool) -> RunDir:
    paths = RunDir(Path(out))
    if paths.root.resolve() == source.dir.root.resolve():
        raise InterpError(f"--out {out} is the source run; a restyle writes a derived run of its own")
    paths.check_output(overwrite=overwrite)
    paths.check_not_locked()
    return paths


def _similarity(values: np.ndarray, flagged: list[str], threshold: float) -> dict:
    return {
        "n": int(values.size),
        "mean": float(values.mean()),
        "min": float(values.min()),
        "n_flagged": len(flagged),
        "flagged": flagged,
        "threshold": threshold,
    }


def semantic_check(
    originals: Sequence[Original], texts: Sequence[str], model, threshold: float, progress: bool = False
) -> tuple[dict, np.ndarray, np.ndarray]:
    """Cosine similarity of each original to its rewrite (`cached_embeddings`); per author and overall: mean,
    min and the rewrites below `threshold`; and, as a yardstick, each original against the next item's
    original of the same author (unrelated answers). Returns the record and both embedding matrices."""
    before = cached_embeddings(model, [o.text for o in originals], progress=progress)
    after = cached_embeddings(model, list(texts), progress=progress)
    cosine = cosine_pairs(before, after)
    authors = list(dict.fromkeys(o.author for o in originals))
    record: dict = {"per_author": {}, "per_item": []}
    for author in authors:
        rows = [i for i, o in enumerate(originals) if o.author == author]
        flagged = [originals[i].item.id for i in rows if cosine[i] < threshold]
        record["per_author"][author] = _similarity(cosine[rows], flagged, threshold)
        if len(rows) > 1:
            record["per_author"][author]["unrelated_mean"] = float(
                cosine_pairs(before[rows], np.roll(before[rows], 1, axis=0)).mean()
            )
    flagged_all = [f"{o.author}/{o.item.id}" for o, c in zip(originals, cosine, strict=False) if c < threshold]
    record["overall"] = _similarity(cosine, flagged_all, threshold)
    record["per_item"] = [
        {"author": o.author, "item_id": o.item.id, "cosine": float(c), "flagged": bool(c < threshold)}
        for o, c in zip(originals, cosine, strict=False)
    ]
    return record, before, after


def restyle_key(source: Run, rewriter: Rewriter, fingerprint: str | None, texts: Sequence[str]) -> str:
    """What determines the derived run: the source run's config identity and answers, the rewriter and its
    rewrites (so a changed normaliser, or a rewrite no longer cached and made again otherwise, is a new run)."""
    answers = {author: source.responses[author] for author in source.config.models}
    payload = {
        "source": source.config.identity_hash(),
        "answers": answers,
        "rewriter": rewriter.record(fingerprint),
        "rewrites": list(texts),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def _judge_record(
    source: Run,
    derived: Run,
    judge: str,
    controls: list[str],
    before_summary: RunSummary,
    after_summary: RunSummary,
    similarity: dict,
    options: RestyleOptions,
) -> dict:
    own = own_model(judge)
    items = source.items

    def p_own(run: Run, who: str) -> np.ndarray:
        return own_probabilities(run, who, run.dir.read_judgments(who), items, own)

    before, after = p_own(source, judge), p_own(derived, judge)
    control_before = np.array([p_own(source, c) for c in controls]).reshape(len(controls), len(items))
    control_after = np.array([p_own(derived, c) for c in controls]).reshape(len(controls), len(items))
    test_options = JudgeTestOptions(
        test_alpha=options.test_alpha, n_flips=N_FLIPS, n_boot=source.config.n_boot, seed=source.config.seed
    )
    test, gap = judge_level_test(
        before, after, source.gold_own(own), derived.gold_own(own), control_before, control_after, test_options
    )
    b, a = before_summary.judges[judge], after_summary.judges[judge]
    record = {
        "own": own,
        "dbg_before": b.dbg_hard,
        "dbg_after": a.dbg_hard,
        "dbg_before_ci": b.dbg_ci,
        "dbg_after_ci": a.dbg_ci,
        "dbg_soft_before": b.dbg_soft,
        "dbg_soft_after": a.dbg_soft,
        "p_own_before": float(before.mean()),
        "p_own_after": float(after.mean()),
    }
    record |= judge_level_fields(judge, test, gap, controls, N_FLIPS, len(items))
    record["similarity"] = {k: v for k, v in similarity["per_author"][own].items() if k != "flagged"}
    return record


def restyle_run(
    run_dir: Path,
    out: Path,
    options: RestyleOptions = RestyleOptions(),
    *,
    where: PlacementKeys | None = None,
    progress: bool = True,
    overwrite: bool = False,
    models: ModelCache | None = None,
) -> RestyleResult:
    """Rewrite a finished run's answers, judge the rewrites in a derived run at `out`, test DBG before and after
    per judge and check the rewrites' meaning; write `out`/restyle.json (returned as the `RestyleResult` written,
    read by attribute: `result.judges[judge].test.p_value`), `out`/restyle/rewrites.jsonl, the figures and the
    derived run's report (`RunDir(out).report`). Every input is checked before `out` is written."""
    from interp.report.build import build_report

    source, before_summary, rewriter = _checked_source(run_dir, options)
    names = self_judges(source, None)
    controls = {judge: _controls(source, judge, options.control_judges) for judge in names}
    paths = _check_out(source, out, overwrite)
    config = derived_config(source, "0" * 24, where)
    models = models if models is not None else ModelCache(placement_of(config))
    for judge in [j for j in source.config.judge_specs if source.config.server(j) is None]:
        check_run_prompts(source, judge, models.get(judge))  # its judgments are the "before" of every test
    embedder = models.get(options.embedder)
    local = models.get(rewriter.model) if rewriter.model is not None and rewriter.url is None else None
    originals = [
        Original(author, item, source.responses[author][item.id]) for author in config.models for item in source.items
    ]
    decoding = decoding_of(config)
    texts = rewrite(originals, rewriter, decoding, model=local, progress=progress)
    key = restyle_key(source, rewriter, local.fingerprint() if local is not None else None, texts)
    config = derived_config(source, key, where)
    empty = [f"{o.author}/{o.item.id}" for o, t in zip(originals, texts, strict=False) if not t.strip()]
    if empty and config.empty_answers == "refuse":
        raise InterpError(
            f"the rewriter gave an empty rewrite of {len(empty)} answers ({', '.join(empty[:3])}); nothing "
            "was judged: try another rewriter or style"
        )
    similarity, vectors_before, vectors_after = semantic_check(originals, texts, embedder, options.threshold, progress)
    after_summary = run_dbg(
        config,
        paths.root,
        progress=progress,
        models=models,
        overwrite=overwrite,
        answers=as_responses(originals, texts, rewriter),
    )
    derived = read_run(paths.root)
    result = {
        "source_run": str(source.dir.root),
        "derived_run": str(paths.root),
        "key": key,
        "restyle": rewriter.record(local.fingerprint() if local is not None else None)
        | ({"url": rewriter.url} if rewriter.url else {}),
        "gold_judges": derived.gold_judges,
        "embedder": {
            "model": options.embedder,
            "pooling": "mean of the last hidden layer",
            "proxy_for": "gte-multilingual-base [CLS] (the paper's)",
        },
        "threshold": options.threshold,
        "n_items": len(source.items),
        "test": {
            "kind": "between-judge",
            "claim": "the rewrite changes the judge's self-preference beyond its control judges' change",
            "controls": controls,
            "alpha": options.test_alpha,
        },
        "similarity": {k: v for k, v in similarity.items() if k != "per_item"},
        "judges": {
            judge: _judge_record(
                source, derived, judge, controls[judge], before_summary, after_summary, similarity, options
            )
            for judge in names
        },
    }
    holm_judges(result, names)
    with paths.writer():
        written = _write_restyle(
            paths,
            built(RestyleResult, result, "restyle.json"),
            (source, similarity, originals, texts),
            (vectors_before, vectors_after),
            options,
        )
        build_report(paths.root)
    return written


def restyle_options(**fields) -> RestyleOptions:
    """`RestyleOptions` from a command's or a caller's keywords (control judges as `--control-judge` reads them)."""
    from interp.causal.design import parse_control_judges

    fields["control_judges"] = parse_control_judges(fields.get("control_judges"))
    return RestyleOptions(**fields)


def _checked_source(run_dir: Path, options: RestyleOptions):
    """(the source run, its summary, the rewriter): a finished pairwise run and a rewriter that can rewrite it."""
    source = read_run(run_dir)
    before_summary = source.dir.read_summary() if source.dir.summary.is_file() else None
    if before_summary is None:
        raise InterpError(f"{run_dir} has no summary.json; finish the run with `interp dbg` first")
    check_rejudgeable(source)  # a pointwise run has no pairwise verdicts to test before and after
    rewriter = Rewriter(options.style, options.rewriter, options.rewriter_url)
    check_rewriter(source.config, rewriter)
    return source, before_summary, rewriter


def _write_restyle(
    paths, result: RestyleResult, texts_of: tuple, vectors: tuple, options: RestyleOptions
) -> RestyleResult:
    """restyle/rewrites.jsonl, the figures and restyle.json: `result` with the projection and the figures it
    names, as written. `texts_of`: the source run, the similarity check, the originals and their rewrites;
    `vectors`: their embeddings before and after."""
    from interp.report.restyle import restyle_section

    source, similarity, originals, texts = texts_of
    vectors_before, vectors_after = vectors
    rows = [
        row | {"original": o.text, "rewrite": t}
        for row, o, t in zip(similarity["per_item"], originals, texts, strict=False)
    ]
    write_records(paths.root / "restyle" / "rewrites.jsonl", rows)
    files, projection = restyle_section(
        result, source.dir.root, paths, vectors_before, vectors_after, [o.author for o in originals], options.projection
    )
    figures = {k: str(v) for k, v in files.items()}
    return write_restyle(paths.root, result.model_copy(update={"projection": projection, "figures": figures}))
