"""The causal test (DESIGN.md section 4): re-run only judging under an intervention, compare with controls.

Responses and gold verdicts are read from the run directory, never regenerated. For a self-span spec the
controls are the same spec on the other response's span and on a random span of equal length. The
intervention "has a causal effect on self-preference" only when the self-span effect on P(own response
wins) has an interval that excludes zero and lies beyond the intervals of every control effect.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from interp.backends import make_backend
from interp.data import Item
from interp.errors import InterpError
from interp.gold import aggregate_gold
from interp.metrics import bootstrap_ci, dbg, hard_win_rate
from interp.models import LoadedModel, load_model
from interp.runs import RunConfig, RunPaths, config_from_dict, judge_tasks, read_responses, run_judging, safe_name
from interp.storage import atomic_write_text, read_jsonl
from interp.summary import p_first_wins

CONTROL_TARGETS = ("other", "random")


@dataclasses.dataclass
class Run:
    """A finished DBG run read back from disk."""

    config: RunConfig
    paths: RunPaths
    items: list[Item]
    responses: dict[str, dict[str, str]]
    gold_first: np.ndarray  # aggregated gold P(models[0]'s response wins) per item
    gold_judges: list[str]

    @property
    def n_gold_verdicts(self) -> int:
        return len(self.items) * len(self.gold_judges)


def load_run(run_dir: Path) -> Run:
    import tomllib

    paths = RunPaths(Path(run_dir))
    for required in (paths.config, paths.items, paths.responses, paths.gold):
        if not required.is_file():
            raise InterpError(f"{run_dir} is not a finished run ({required.name} missing); run `interp dbg` or `interp demo` first")
    config = config_from_dict(tomllib.loads(paths.config.read_text()), str(paths.config))
    items = [Item(**{**r, "aliases": tuple(r.get("aliases", ()))}) for r in read_jsonl(paths.items)]
    responses = read_responses(paths)
    per_judge: dict[str, dict[str, float]] = {}
    for record in read_jsonl(paths.gold):
        per_judge.setdefault(record["judge"], {})[record["item_id"]] = record["p_first"]
    missing = [name for name, values in per_judge.items() if set(values) < {i.id for i in items}]
    if not per_judge or missing:
        raise InterpError(f"{run_dir}: gold verdicts are incomplete; resume the run with `interp dbg`")
    gold_first = np.array(aggregate_gold({name: [values[i.id] for i in items] for name, values in per_judge.items()}))
    return Run(config, paths, items, responses, gold_first, list(per_judge))


def own_probabilities(records: Sequence[dict], run: Run, judge: str) -> np.ndarray:
    """Per item, the judge's P(its own response wins), mean over both orders."""
    ab, ba = p_first_wins(records, run.items, run.config.models[0])
    p_first = (ab + ba) / 2
    return p_first if judge == run.config.models[0] else 1 - p_first


def gold_agreement(p_own: np.ndarray, gold_own: np.ndarray) -> float:
    """Share of items where the judge's hard verdict picks the gold winner (ties count half)."""
    judge_pick, gold_pick = np.sign(p_own - 0.5), np.sign(gold_own - 0.5)
    return float(np.mean(np.where(judge_pick == gold_pick, 1.0, np.where((judge_pick == 0) | (gold_pick == 0), 0.5, 0.0))))


def paired_effect(before: np.ndarray, after: np.ndarray, *, n_boot: int, seed: int) -> dict:
    """Mean per-instruction change of P(own wins), with a bootstrap interval over instructions."""
    diff = after - before
    lo, hi = bootstrap_ci(lambda idx: float(diff[idx].mean()), len(diff), n_boot=n_boot, seed=seed)
    return {"mean": float(diff.mean()), "ci": [lo, hi]}


def behaviour(p_own: np.ndarray, gold_own: np.ndarray, *, n_boot: int, seed: int) -> dict:
    scores = dbg(p_own, gold_own, n_boot=n_boot, seed=seed)
    return {
        "dbg_hard": scores["dbg_hard"],
        "dbg_soft": scores["dbg_soft"],
        "dbg_ci": list(scores["dbg_ci"]),
        "dbg_soft_ci": list(scores["dbg_soft_ci"]),
        "mean_p_own": float(p_own.mean()),
        "win_rate_own_hard": hard_win_rate(p_own),
        "gold_agreement": gold_agreement(p_own, gold_own),
    }


def causal_verdict(effects: dict[str, dict]) -> tuple[bool, str]:
    """DESIGN.md 4: causal only if the self effect's interval excludes 0 and clears every control's interval."""
    main_key = "self" if "self" in effects else next(iter(effects))
    main = effects[main_key]
    lo, hi = main["ci"]
    controls = {k: v for k, v in effects.items() if k != main_key}
    if lo <= 0 <= hi:
        return False, f"no causal effect shown: the {main_key} effect {100 * main['mean']:+.1f} pts has an interval containing 0"
    if not controls:
        return False, f"effect {100 * main['mean']:+.1f} pts [{100 * lo:+.1f}, {100 * hi:+.1f}], but no controls were run (they run for target = \"self\"), so no causal claim"
    downward = hi < 0
    beyond = all((hi < c["ci"][0]) if downward else (lo > c["ci"][1]) for c in controls.values())
    control_text = ", ".join(f"{name} {100 * c['mean']:+.1f} [{100 * c['ci'][0]:+.1f}, {100 * c['ci'][1]:+.1f}]" for name, c in controls.items())
    text = f"self-span effect {100 * main['mean']:+.1f} pts [{100 * lo:+.1f}, {100 * hi:+.1f}] vs controls {control_text}"
    if beyond:
        return True, "causal effect on self-preference: " + text
    return False, "no causal effect beyond the controls: " + text


def intervention_variants(spec) -> dict[str, object]:
    """The spec plus, for a self-span spec, the same spec on the other span and on a random span."""
    if spec.target != "self":
        return {"target": spec}
    return {"self": spec} | {target: dataclasses.replace(spec, target=target) for target in CONTROL_TARGETS}


def rejudge(
    run: Run, judge: str, runner, spec, judgments_path: Path, *, tasks=None, progress: bool = True, edit_for=None
) -> np.ndarray:
    """Judge every task of the run under `spec` (resumable at `judgments_path`); P(own wins) per item.

    `spec` None = no attention intervention; `edit_for(chunk)` (optional) gives a residual-edit builder per
    batch of tasks (activation steering, see `interp.steering`).
    """
    from hooks.apply import bias_builder

    model = runner.model
    run_judging(
        runner,
        judge,
        tasks if tasks is not None else judge_tasks(run.items, run.responses, run.config.models),
        judgments_path=judgments_path,
        shard_dir=None,
        batch_size=run.config.batch_size,
        ties=run.config.ties,
        queries=None,
        bias_for=(
            (lambda chunk: bias_builder(spec, model, judge_model=judge, authors=[(t.author_a, t.author_b) for t in chunk]))
            if spec is not None
            else None
        ),
        progress=progress,
        edit_for=edit_for,
    )
    return own_probabilities([r for r in read_jsonl(judgments_path) if r["judge"] == judge], run, judge)


def intervene_run(
    run_dir: Path,
    spec,
    *,
    judges: Sequence[str] | None = None,
    backend: str | None = None,
    out_name: str | None = None,
    with_controls: bool = True,
    progress: bool = True,
    loaded: dict[str, LoadedModel] | None = None,
) -> dict:
    """Re-judge the run under `spec` (and its controls); write result.json next to the judgments."""
    from hooks.spec import validate_against

    run = load_run(run_dir)
    config = run.config
    judges = list(judges) if judges is not None else [j for j in config.judge_specs if j in config.models]
    if not judges:
        raise InterpError("no judge of this run is one of its two models: self-preference needs a judge that is also an author")
    loaded = loaded if loaded is not None else {}
    variants = intervention_variants(spec)
    if not with_controls:
        variants = dict(list(variants.items())[:1])
    out_dir = run.paths.root / "interventions" / safe_name(out_name or spec.label)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "spec.toml", spec.to_toml())
    tasks = judge_tasks(run.items, run.responses, config.models)
    baseline_records = read_jsonl(run.paths.judgments)
    result: dict = {
        "spec": spec.to_dict(),
        "run_dir": str(run.paths.root),
        "n_items": len(run.items),
        "reused": {
            "responses": sum(len(v) for v in run.responses.values()),
            "responses_generated": 0,
            "gold_verdicts": run.n_gold_verdicts,
            "gold_judges_rerun": 0,
            "gold_judges": run.gold_judges,
        },
        "judges": {},
    }
    for judge in judges:  # every spec is checked against every judge before any judging starts
        if judge not in loaded:
            loaded[judge] = load_model(judge)
        for variant in variants.values():
            validate_against(variant, loaded[judge].n_layers, loaded[judge].n_heads)
    for judge in judges:
        model = loaded[judge]
        runner = make_backend(model, backend or config.backend)
        gold_own = run.gold_first if judge == config.models[0] else 1 - run.gold_first
        before = own_probabilities([r for r in baseline_records if r["judge"] == judge], run, judge)
        judge_result = {"before": behaviour(before, gold_own, n_boot=config.n_boot, seed=config.seed), "variants": {}, "effects": {}}
        for name, variant in variants.items():
            after = rejudge(run, judge, runner, variant, out_dir / safe_name(name) / "judgments.jsonl", tasks=tasks, progress=progress)
            judge_result["variants"][name] = {"spec": variant.to_dict()} | behaviour(after, gold_own, n_boot=config.n_boot, seed=config.seed)
            judge_result["effects"][name] = paired_effect(before, after, n_boot=config.n_boot, seed=config.seed)
        causal, text = causal_verdict(judge_result["effects"])
        judge_result["causal"], judge_result["verdict"] = causal, f"{judge}: {text}"
        result["judges"][judge] = judge_result
    atomic_write_text(out_dir / "result.json", json.dumps(result, indent=2))
    return result


def effect_figure(results: Sequence[dict]):
    """Paired change of P(own wins) per judge and target, with bootstrap intervals."""
    import matplotlib.pyplot as plt

    rows = [(judge, name, effect) for result in results for judge, r in result["judges"].items() for name, effect in r["effects"].items()]
    fig, ax = plt.subplots(figsize=(6.5, 0.6 + 0.45 * len(rows)))
    for y, (judge, name, effect) in enumerate(rows):
        lo, hi = effect["ci"]
        color = "tab:red" if name in ("self", "target") else "tab:gray"
        ax.errorbar(100 * effect["mean"], y, xerr=[[100 * (effect["mean"] - lo)], [100 * (hi - effect["mean"])]], fmt="o", color=color, capsize=3)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), [f"{judge}: {name}" for judge, name, _ in rows], fontsize=8)
    ax.set_xlabel("change of P(own response wins), points (95% bootstrap CI)")
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


def intervention_section(results: Sequence[dict], figures: Path) -> Path:
    """Write figures/intervention_section.html (title line + body) and the effect plot as PNG and PDF."""
    from interp.plots import png_data_uri, save_figure, table_html

    paths = save_figure(effect_figure(results), figures / "intervention_effects")
    rows, verdicts = [], []
    for result in results:
        for judge, r in result["judges"].items():
            before = r["before"]
            for name, after in r["variants"].items():
                effect = r["effects"][name]
                rows.append(
                    [
                        judge,
                        name,
                        json.dumps({k: v for k, v in after["spec"].items() if v is not None and k not in ("seed", "emphasis")}),
                        f"{100 * before['dbg_hard']:+.1f} -> {100 * after['dbg_hard']:+.1f}",
                        f"{before['mean_p_own']:.3f} -> {after['mean_p_own']:.3f}",
                        f"{100 * effect['mean']:+.2f} [{100 * effect['ci'][0]:+.2f}, {100 * effect['ci'][1]:+.2f}]",
                        f"{100 * before['gold_agreement']:.0f}% -> {100 * after['gold_agreement']:.0f}%",
                    ]
                )
            verdicts.append(r["verdict"])
        reused = result["reused"]
    table = table_html(["judge", "target", "spec", "DBG hard (pts)", "mean P(own)", "paired change of P(own), pts (95% CI)", "agreement with gold"], rows)
    body = (
        f"<p><img src='{png_data_uri(paths['png'])}' alt='intervention effects'></p>{table}"
        + "".join(f"<p><b>{v}</b></p>" for v in verdicts)
        + f"<p class='note'>Responses reused: {reused['responses']} (generated: {reused['responses_generated']}); gold verdicts reused: "
        f"{reused['gold_verdicts']} from {', '.join(reused['gold_judges'])} (re-run: {reused['gold_judges_rerun']}). Only judging was re-run.</p>"
    )
    path = figures / "intervention_section.html"
    atomic_write_text(path, "Causal test: attention interventions with controls\n" + body)
    return path
