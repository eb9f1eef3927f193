"""The steering table: can we push a judge to be fair? Five rows per judge, each under the causal test.

Masking asks "what if the judge looked less at its own answer?"; steering asks "can we push it to be fair?".
`steering_table` re-judges the run under: no intervention (the run's own judgments), self-mask (alpha 0 on
the self span, every layer and head), other-emphasis (`interp.hooks.emphasis`: alpha `emphasis_alpha` on the other
span, top-k heads by own-minus-other attention or all), direction removal (project_out, coefficient 1) and
direction reversal (add, `coefficient` times the direction's norm: the default -1 moves a typical own-span
activation onto the other-span class mean along u), the direction from `interp.locate.directions`.
Each row has DBG (hard, with its bootstrap CI), mean P(own), the paired change of P(own) against no
intervention with its bootstrap CI, and agreement with gold (with a bootstrap CI over items). Returned as a
`SteeringTable` and written to RUN/steering/tables/<key>/table.json and table.csv (`table_paths`) and the report
section RUN/figures/steering_section.html.
Coefficients given here and to the steering sweep are in units of the direction's norm (scale-free across
layers); `interp.hooks.steering.steer` itself takes the absolute coefficient on the unit direction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from interp.analysis.attention_stats import heads_table, top_heads
from interp.config import PlacementKeys
from interp.core.models import ModelCache, own_model
from interp.engine.judges import baseline, judge_pool
from interp.engine.variants import Variant, check_variants, digest, judge_variant, self_judges
from interp.errors import InterpError
from interp.hooks.emphasis import emphasis_spec
from interp.hooks.spec import AttentionIntervention
from interp.hooks.steering import EDIT_POSITIONS, EditPositions, ResidualSteering
from interp.locate.directions import (
    DirectionPosition,
    DirectionSplit,
    SteeringDirection,
    check_layer,
    compute_direction,
    steering_split,
)
from interp.metrics.behaviour import behaviour, gold_agreement_ci, paired_effect
from interp.metrics.mirror import mirror_shares
from interp.report.steering import steering_section
from interp.results.causal import Reused
from interp.results.codec import write_steering_table
from interp.results.studies import DirectionProbe, SteeringRow, SteeringTable, TableSettings
from interp.run.store import Run, RunDir, read_run
from interp.storage import write_csv

ROWS = ("none", "self-mask", "other-emphasis", "direction-removal", "direction-reversal")


def emphasis_heads(run_dir: Path, judge: str, k: int) -> dict[int, list[int]]:
    """The top-k heads by own-minus-other attention (`interp.analysis.attention_stats.top_heads`) as a layer -> heads
    table."""
    if k < 1:
        raise InterpError(f"k_heads must be at least 1, got {k}")
    table = heads_table(top_heads(run_dir, judge, k))
    if not table:
        raise InterpError(
            f"{run_dir}: no head has finite own-minus-other attention for {judge}; pass k_heads=None for all heads"
        )
    return table


def attention_levers(emphasis_alpha: float, heads: dict[int, list[int]] | None = None) -> list[Variant]:
    """The two attention rows of the steering table: the self span masked, the other span emphasised."""
    return [
        Variant(
            "self-mask",
            (AttentionIntervention(target="self", alpha=0.0, name="self-mask"),),
            description="alpha 0 on the self span, all layers and heads",
        ),
        Variant(
            "other-emphasis",
            (emphasis_spec(emphasis_alpha, heads=heads),),
            description=f"alpha {emphasis_alpha:g} on the other span, {_heads_text(heads)}",
        ),
    ]


def direction_steering(
    direction: SteeringDirection, mode: str, coefficient: float, positions: EditPositions
) -> ResidualSteering:
    """Steering along `direction` with `coefficient` in units of its norm (mode "add") or as is ("project_out")."""
    absolute = coefficient * direction.norm if mode == "add" else coefficient
    return ResidualSteering(direction.layer, float(absolute), mode, positions, direction.vector)


def direction_variants(
    direction: SteeringDirection, *, coefficient: float, positions: EditPositions = "all"
) -> list[Variant]:
    """Direction removal (project_out, coefficient 1) and reversal (add, `coefficient` x the direction's norm)."""
    reversal = direction_steering(direction, "add", coefficient, positions)
    return [
        Variant(
            "direction-removal",
            (direction_steering(direction, "project_out", 1.0, positions),),
            description=f"project out the {direction.position} direction at layer {direction.layer} ({positions} "
            "positions)",
        ),
        Variant(
            "direction-reversal",
            (reversal,),
            description=f"add {coefficient:+g} x norm ({reversal.coefficient:+.3g}) x unit {direction.position} "
            "direction at layer "
            f"{direction.layer} ({positions} positions)",
        ),
    ]


def _heads_text(heads) -> str:
    if heads is None:
        return "all layers and heads"
    return (
        f"{sum(len(h) for h in heads.values())} top heads ("
        + ", ".join(f"{layer}.{h}" for layer, hs in heads.items() for h in hs)
        + ")"
    )


def row(judge: str, variant: Variant | None, before, after, run: Run) -> SteeringRow:
    """One table row: behaviour under the variant and its paired effect against the run's own judgments."""
    n_boot, seed = run.config.n_boot, run.config.seed
    gold_own = run.gold_own(own_model(judge))
    scores = behaviour(after, gold_own, n_boot=n_boot, seed=seed)
    return SteeringRow(
        judge=judge,
        intervention=variant.name if variant is not None else "none",
        description=variant.description if variant is not None else "the run's own judgments (no re-judging)",
        variant=variant.identity() if variant is not None else None,
        dbg_hard=scores["dbg_hard"],
        dbg_ci=scores["dbg_ci"],
        dbg_soft=scores["dbg_soft"],
        mean_p_own=scores["mean_p_own"],
        win_rate_own_hard=scores["win_rate_own_hard"],
        effect=paired_effect(before, after, n_boot=n_boot, seed=seed),
        gold_agreement=scores["gold_agreement"],
        gold_agreement_ci=gold_agreement_ci(after, gold_own, n_boot=n_boot, seed=seed),
        n_items=int(len(after)),
        mirror=mirror_shares(before, after, gold_own),
    )


@dataclass(frozen=True)
class SteeringSettings:
    """The settings of a steering table (its "settings" record): `layer`: the decoder block of the direction (None =
    the middle block, n_layers // 2), its `position`, `train_fraction` and `seed` (`compute_direction`);
    `coefficient`: the reversal's coefficient in units of the direction's norm (negative), edited at `positions`;
    `emphasis_alpha`: the other-emphasis factor, on every layer and head (`k_heads` None) or on the top-k heads by
    own-minus-other attention."""

    layer: int | None = None
    position: DirectionPosition = "spans"
    coefficient: float = -1.0
    emphasis_alpha: float = 4.0
    k_heads: int | None = None
    positions: EditPositions = "all"
    train_fraction: float = 0.7
    seed: int = 0


def steering_table(
    run_dir: Path,
    judge: str | Sequence[str] | None = None,
    *,
    settings: SteeringSettings | None = None,
    backend: str | None = None,
    where: PlacementKeys | None = None,
    models: ModelCache | None = None,
    progress: bool = True,
    write: bool = True,
) -> SteeringTable:
    """The five-row steering table per judge (see the module docstring), read by attribute
    (`table.rows[0].effect.ci`); writes table.json/.csv (where: `table_paths`) and the section unless `write` is
    False.

    `judge`: one judge, several, or None = every judge of the run that is also an author. `settings`: the layer,
    coefficient, emphasis and split (`SteeringSettings`; default `SteeringSettings()`). Every setting is checked
    against every judge model before any judging. Re-judged judgments are kept under RUN/variants/ (resumable).
    """
    s = settings if settings is not None else SteeringSettings()
    layer, position, coefficient, emphasis_alpha = s.layer, s.position, s.coefficient, s.emphasis_alpha
    k_heads, positions, train_fraction, seed = s.k_heads, s.positions, s.train_fraction, s.seed
    if not (isinstance(coefficient, (int, float)) and math.isfinite(coefficient)):
        raise InterpError(f"coefficient must be a finite number, got {coefficient!r}")
    if positions not in EDIT_POSITIONS:
        raise InterpError(f"positions must be one of {', '.join(EDIT_POSITIONS)}, not {positions!r}")
    run = read_run(run_dir)
    names = self_judges(run, [judge] if isinstance(judge, str) else judge)
    steering_split([i.id for i in run.items], train_fraction, seed)  # bad fractions fail now
    pool = judge_pool(run, backend, where=where, models=models)
    plans = {}
    for name in names:  # check everything before any model work beyond loading
        model = pool.model(name)
        chosen = check_layer(layer if layer is not None else model.n_layers // 2, model)
        heads = emphasis_heads(run.dir.root, name, k_heads) if k_heads is not None else None
        attention = attention_levers(emphasis_alpha, heads)
        check_variants(model, attention)
        plans[name] = (chosen, attention)
    rows, probes = [], {}
    with run.dir.writer():
        for name, (chosen, attention) in plans.items():
            direction = compute_direction(
                run,
                name,
                chosen,
                position=position,
                split=DirectionSplit(train_fraction=train_fraction, seed=seed),
                judges=pool,
            )
            probes[name] = DirectionProbe(**direction.probe_record())
            before = baseline(run, name)
            rows.append(row(name, None, before, before, run))
            runner = pool.runner(name, run)
            for variant in [*attention, *direction_variants(direction, coefficient=coefficient, positions=positions)]:
                rows.append(
                    row(name, variant, before, judge_variant(run, name, runner, variant, progress=progress), run)
                )
        table = SteeringTable(
            run_dir=str(run.dir.root),
            n_items=len(run.items),
            settings=TableSettings(
                layer=layer,
                position=position,
                coefficient=coefficient,
                coefficient_units="the direction's norm",
                emphasis_alpha=emphasis_alpha,
                k_heads=k_heads,
                positions=positions,
                train_fraction=train_fraction,
                seed=seed,
                backend=backend or run.config.backend,
            ),
            probe=probes,
            rows=rows,
            reused=Reused(
                responses=sum(len(v) for v in run.responses.values()),
                responses_generated=0,
                gold_verdicts=run.n_gold_verdicts,
                gold_judges=run.gold_judges,
            ),
        )
        if write:
            table = write_table(table, run)
    return table


CSV_FIELDS = (
    "judge",
    "intervention",
    "description",
    "dbg_hard",
    "dbg_lo",
    "dbg_hi",
    "dbg_soft",
    "mean_p_own",
    "effect",
    "effect_lo",
    "effect_hi",
    "gold_agreement",
    "gold_agreement_lo",
    "gold_agreement_hi",
    "n_items",
    "unjustified_flipped_share",
    "legitimate_kept_share",
)


def _csv_row(r: SteeringRow) -> dict:
    (dbg_lo, dbg_hi), (effect_lo, effect_hi) = r.dbg_ci, r.effect.ci
    gold_lo, gold_hi = r.gold_agreement_ci
    return {
        "judge": r.judge,
        "intervention": r.intervention,
        "description": r.description,
        "dbg_hard": r.dbg_hard,
        "dbg_lo": dbg_lo,
        "dbg_hi": dbg_hi,
        "dbg_soft": r.dbg_soft,
        "mean_p_own": r.mean_p_own,
        "effect": r.effect.mean,
        "effect_lo": effect_lo,
        "effect_hi": effect_hi,
        "gold_agreement": r.gold_agreement,
        "gold_agreement_lo": gold_lo,
        "gold_agreement_hi": gold_hi,
        "n_items": r.n_items,
        "unjustified_flipped_share": r.mirror.unjustified_flipped_share,
        "legitimate_kept_share": r.mirror.legitimate_kept_share,
    }


def table_paths(table: SteeringTable) -> dict[str, Path]:
    """Where a steering table is written: RUN/steering/tables/<key>/table.json ("json") and table.csv ("csv"),
    the key a hash of the settings and the rows' variants."""
    key = digest({"settings": table.settings.to_json(), "variants": [r.variant for r in table.rows]})
    folder = RunDir(Path(table.run_dir)).steering / "tables" / key
    return {"json": folder / "table.json", "csv": folder / "table.csv"}


def write_table(table: SteeringTable, run: Run) -> SteeringTable:
    """Write the table's json and csv (`table_paths`) and RUN/figures/steering_section.html (+ effect figure);
    returns the table as written."""
    paths = table_paths(table)
    written = write_steering_table(paths["json"], table)
    write_csv(paths["csv"], [_csv_row(r) for r in written.rows], CSV_FIELDS)
    steering_section(written, run.dir.figures)
    return written
