"""Held-out checks of organisms through the toolkit's own DBG run (`run_dbg`), so the numbers come from the
same code path as any judge's: the answers are the plain models' (cached, adapter off), the judges are the
organisms loaded by `load_model` (shipped alias or adapter folder), gold is the reference judge.

Per judge (P(own) = mean over the two orders of P(the base model's answer wins), as everywhere; the own model
of an organism is its base, `interp.core.models.own_model`):
- position consistency and DBG (hard and soft, paired bootstrap intervals): `interp.metrics.dbg`;
- agreement with gold: hard verdict h in {0, 0.5, 1} against gold's g, mean of 1 - |h - g| (a gold tie
  against a decisive verdict counts half);
- agreement on legitimate pairs (gold prefers the own answer): share with h = 1;
- own rate on unjustified pairs (gold prefers the other answer): share with h = 1;
- bootstrap 95 % intervals over items (seeded) for each rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from interp.config import RunConfig
from interp.core.adapters import adapter_folder
from interp.core.models import ModelCache, resolve_spec
from interp.data import dev_items, load_items
from interp.errors import InterpError
from interp.metrics.bias_lenses import self_preference_rates, subset_rate
from interp.metrics.dbg import dbg_scores, hard_wins, position_consistency
from interp.organisms.config import OrganismConfig
from interp.organisms.data import SPLITS, splits_of, write_items_jsonl
from interp.results.codec import write_organism_metrics
from interp.results.studies import OrganismMetrics
from interp.run.pipeline import run_dbg
from interp.run.store import RUN_MARKERS, RunDir
from interp.run.summary import JudgeVerdicts, judge_verdicts
from interp.storage import check_output_dir, claim_output_dir

# The unseen file: 16 AlpacaEval-format items (the tests' alpacaeval_16.json) followed by 32 more in the same
# style, none of them in any packaged set; 48 read the unseen bar with less noise than 16. Package data, so a
# wheel install finds it.
UNSEEN_FILE = Path(__file__).resolve().parents[1] / "builtin" / "alpacaeval_unseen_48.json"


def judge_metrics(
    run_dir: Path, judge: str, *, n_boot: int = 1000, seed: int = 0, items: Sequence[str] | None = None
) -> dict:
    """Position consistency, DBG, agreement with gold (overall, legitimate, unjustified) of one judge of a run;
    `items` (ids): on those items only (e.g. a test split)."""
    v = judge_verdicts(run_dir, judge, items)
    p_own, gold_own = v.p_own, v.gold_own
    h, g = hard_wins(p_own), hard_wins(gold_own)
    agree = 1 - np.abs(h - g)
    scores = dbg_scores(p_own, gold_own, n_boot=n_boot, seed=seed)
    rates = self_preference_rates(p_own, gold_own, n_boot=n_boot, seed=seed)
    return {
        "judge": judge,
        "own_model": v.own,
        "n_items": len(p_own),
        "position_consistency": position_consistency(v.ab, v.ba),
        "dbg_hard": scores["dbg_hard"],
        "dbg_hard_ci": [float(x) for x in scores["dbg_ci"]],
        "dbg_soft": scores["dbg_soft"],
        "dbg_soft_ci": [float(x) for x in scores["dbg_soft_ci"]],
        "win_rate_own_hard": scores["win_rate_own_hard"],
        "gold_win_rate_own_hard": scores["gold_win_rate_hard"],
        "agreement_with_gold": subset_rate(np.ones_like(h, dtype=bool), agree, n_boot=n_boot, seed=seed),
        "agreement_legitimate": rates["legitimate"],
        "own_rate_unjustified": rates["unjustified"],
        "gold_ties": int((g == 0.5).sum()),
        "slot_a_rate": v.slot_a_rate,
    }


def paired_verdicts(
    run_dir: Path, judge: str, reference: str, items: Sequence[str] | None = None
) -> tuple[JudgeVerdicts, JudgeVerdicts]:
    """Two judges' verdicts on the same items of one run; an error unless they share the own model and gold."""
    ours, theirs = judge_verdicts(run_dir, judge, items), judge_verdicts(run_dir, reference, items)
    if ours.own != theirs.own or not np.array_equal(ours.gold_own, theirs.gold_own):
        raise InterpError(f"{judge} and {reference} have different own models or gold: no paired gap")
    return ours, theirs


def soft_dbg_gap(
    run_dir: Path, judge: str, reference: str, *, n_boot: int = 1000, seed: int = 0, items: Sequence[str] | None = None
) -> dict:
    """`judge`'s soft DBG minus `reference`'s on one run (gold cancels: the mean of P(own) minus P(own)), with a
    paired bootstrap interval over items: the figure the unseen bar is judged on (planted minus null)."""
    ours, theirs = paired_verdicts(run_dir, judge, reference, items)
    return subset_rate(np.ones(len(ours.p_own), dtype=bool), ours.p_own - theirs.p_own, n_boot=n_boot, seed=seed)


def legitimate_gap(
    run_dir: Path, judge: str, reference: str, *, n_boot: int = 1000, seed: int = 0, items: Sequence[str] | None = None
) -> dict:
    """`judge`'s agreement minus `reference`'s on the legitimate pairs (gold prefers the own answer) of one run,
    with a paired bootstrap interval over those pairs: both judges read the same answers and the same gold."""
    ours, theirs = paired_verdicts(run_dir, judge, reference, items)
    picks_own = [(hard_wins(v.p_own) == 1.0).astype(float) for v in (ours, theirs)]
    return subset_rate(hard_wins(ours.gold_own) == 1.0, picks_own[0] - picks_own[1], n_boot=n_boot, seed=seed)


def check_gap_against(judges: Sequence[str], gap_against: str | None) -> None:
    """Refuse a `gap_against` judge that is not one of the evaluated judges."""
    if gap_against is not None and gap_against not in judges:
        raise InterpError(f"gap against {gap_against!r}: not one of the judges ({', '.join(judges)}); name one of them")


def compare_judges(
    run_dir: Path,
    judges: Sequence[str],
    *,
    by_task: bool = False,
    gap_against: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, dict]:
    """`judge_metrics` of each judge of a run; `by_task`: also on each task's items alone (under "by_task"), which
    is where recipes differ (most legitimate pairs are helpfulness ones). `gap_against` (one of `judges`): every
    other judge with the same own model gets its `legitimate_gap` and `soft_dbg_gap` against that one."""
    items = RunDir(Path(run_dir)).read_items()
    tasks = (
        {task: [i.id for i in items if i.task == task] for task in sorted({i.task for i in items})} if by_task else {}
    )
    results = {}
    for judge in judges:
        results[judge] = judge_metrics(run_dir, judge, n_boot=n_boot, seed=seed)
        if tasks:
            results[judge]["by_task"] = {
                task: judge_metrics(run_dir, judge, n_boot=n_boot, seed=seed, items=ids) for task, ids in tasks.items()
            }
    if gap_against is not None:
        own = results[gap_against]["own_model"]
        for judge in judges:
            if judge != gap_against and results[judge]["own_model"] == own:
                for name, gap in (("legitimate_gap", legitimate_gap), ("soft_dbg_gap", soft_dbg_gap)):
                    results[judge][name] = {
                        "against": gap_against,
                        **gap(run_dir, judge, gap_against, n_boot=n_boot, seed=seed),
                    }
    return results


def _eval_markers() -> tuple[str, ...]:
    """What an evaluation folder written before the marker file holds: a run per split."""
    return tuple(f"{split}/{marker}" for split in (*SPLITS, "choice") for marker in RUN_MARKERS)


def check_eval_out(out: Path, split: str, judges: Sequence[str] = (), *, overwrite: bool = False) -> None:
    """Before `organism evaluate` writes its split file: `--out` is new, empty or an evaluation folder (other
    files only with `overwrite`), the split exists and every judge names a model that is there."""
    if split not in (*SPLITS, "choice"):
        raise InterpError(f"split {split!r}: use one of {', '.join((*SPLITS, 'choice'))}")
    check_output_dir(out, markers=_eval_markers(), overwrite=overwrite)
    for judge in judges:
        if adapter_folder(judge) is None:
            resolve_spec(judge)


def split_file(config: OrganismConfig, split: str, folder: Path) -> tuple[str, int]:
    """An items spec (`jsonl:PATH`) of one split of the config's item sets, written under `folder`, and its size.
    `choice` is where recipes are compared: the selection split plus the shipped development set (`dev_items`)."""
    if split not in (*SPLITS, "choice"):
        raise InterpError(f"split {split!r}: use one of {', '.join((*SPLITS, 'choice'))}")
    splits = splits_of(config.split)
    items = splits["selection"] + dev_items() if split == "choice" else splits[split]
    claim_output_dir(folder, _eval_markers())
    return f"jsonl:{write_items_jsonl(items, Path(folder) / f'{split}.jsonl')}", len(items)


@dataclass(frozen=True)
class EvaluationSettings:
    """How `evaluate_judges` runs and reads its DBG run: the authors and their answer lengths, bootstrap draws and
    seed, metrics per task too (`by_task`), and the judge each one's gap is measured against (`gap_against`)."""

    authors: Sequence[str] = ("smollm2-135m-instruct", "gemma3-270m")
    max_words: int = 60
    max_new_tokens: int = 96
    n_boot: int = 1000
    seed: int = 0
    by_task: bool = False
    gap_against: str | None = None


def evaluate_judges(
    judges: Sequence[str],
    items_spec: str,
    n_items: int,
    out: Path,
    *,
    settings: EvaluationSettings = EvaluationSettings(),
    models: ModelCache | None = None,
    progress: bool = False,
    overwrite: bool = False,
) -> dict[str, dict]:
    """One DBG run (`attention = "none"`, reference gold) of `judges` over the items; metrics per judge
    (`compare_judges`)."""
    authors, max_words, max_new_tokens = settings.authors, settings.max_words, settings.max_new_tokens
    n_boot, seed, by_task, gap_against = settings.n_boot, settings.seed, settings.by_task, settings.gap_against
    config = RunConfig(
        name=Path(out).name,
        data=items_spec,
        n=n_items,
        seed=seed,
        models=tuple(authors),
        judges=list(judges),
        max_words=max_words,
        max_new_tokens=max_new_tokens,
        attention="none",
        n_boot=n_boot,
    )
    check_gap_against(judges, gap_against)
    run_dbg(config, Path(out), progress=progress, models=models, overwrite=overwrite)
    results = compare_judges(Path(out), judges, by_task=by_task, gap_against=gap_against, n_boot=n_boot, seed=seed)
    write_organism_metrics(Path(out), OrganismMetrics(judges=results))
    return results


def held_out(
    config: OrganismConfig,
    judge: str,
    out: Path,
    *,
    unseen: Path | None = UNSEEN_FILE,
    models: ModelCache | None = None,
) -> dict:
    """The manifest's held-out figures of one judge: the test split (demo answer settings) and the unseen file."""
    out = Path(out)
    test, n_test = split_file(config, "test", out)
    result = {"test": evaluate_judges([judge], test, n_test, out / "test", models=models)[judge]}
    if unseen is not None and Path(unseen).is_file():
        spec = f"alpacaeval:{unseen}"
        result["unseen"] = evaluate_judges([judge], spec, len(load_items(spec)), out / "unseen", models=models)[judge]
    return result
