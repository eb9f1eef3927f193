"""The intervention test from a notebook: `interp.intervene(run, ...)` runs the causal test of `interp intervene`
(`interp.causal.intervene`) and returns it typed, as an `InterventionResult` of one `JudgeIntervention` per
judge with its `Effect`s; the spec's keys and the mask choice are checked before anything runs.

    result = interp.intervene(run, target="self", alpha=0.0)   # InterventionResult
    result.judges["smollm2-135m-judge"].causal                  # the self-preference verdict
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from interp.api.argument_types import check_flag, check_int, check_list, check_number, check_text
from interp.api.judge import Judge
from interp.api.runs import held_judges, hold_judge, run_root
from interp.causal.design import design_from_options, parse_control_judges
from interp.causal.intervene import intervene_run
from interp.config import PlacementKeys, gb_bytes
from interp.core.cache_dir import check_cache_root
from interp.engine.executor import Execution, check_executor
from interp.errors import InterpError
from interp.hooks.nodes import as_intervention, node_keys
from interp.hooks.spec import KEYS as SPEC_KEYS
from interp.hooks.spec import AttentionIntervention
from interp.results.causal import Behaviour, CausalResult, JudgeTest
from interp.run.store import read_run


@dataclass(frozen=True)
class Effect:
    """A paired change of P(own response wins), mean over instructions, with its bootstrap interval."""

    mean: float
    ci: tuple[float, float]


@dataclass(frozen=True)
class JudgeIntervention:
    """One judge under an intervention and its control judges.

    Attributes:
        judge: the judge.
        causal: the self-preference verdict: True / False from the between-judge test (Holm-adjusted when
            several judges were tested), None when there is none (`reason` says why: fewer than 3 controls).
        reason: why `causal` is None.
        verdict: the verdict in words, with its numbers; it says which claim it makes.
        effects: variant name ("self"; "other", "random" with span controls) -> change of the judge's P(own).
        before: behaviour without the intervention (`Behaviour`: DBG, mean P(own), win rate, gold agreement).
        after: variant name -> behaviour under it.
        within: the within-judge effect ("changes this judge's verdicts"): mean change of P(own), its interval
            and its sign-flip p.
        p_within: the within-judge sign-flip p.
        p_value: the between-judge p (Crawford-Howell; with random head sets, the larger of it and their rank
            p), raw; None without a between-judge test.
        p_holm: p_value Holm-adjusted over the judges tested together (= p_value for one judge): the
            decision's p; None without a between-judge test.
        test_alpha: the test's level.
        controls: the control judges.
        gap_before, gap_after: the judge's DBG minus the controls' mean DBG, before and under the mask
            (estimate and multi-bootstrap interval).
        share_removed: 1 - gap_after / gap_before with its interval, only where the gap before is significant.
        n_test: test items.
    """

    judge: str
    causal: bool | None
    reason: str | None
    verdict: str
    effects: dict[str, Effect]
    before: Behaviour
    after: dict[str, dict]
    within: Effect
    p_within: float
    p_value: float | None
    p_holm: float | None
    test_alpha: float
    controls: tuple[str, ...]
    gap_before: dict | None
    gap_after: dict | None
    share_removed: dict | None
    n_test: int

    @classmethod
    def of(cls, judge: str, record: JudgeTest) -> "JudgeIntervention":
        """One judge's record of a `CausalResult`, as the notebook reads it."""
        within = record.within_judge
        return cls(
            judge=judge,
            causal=record.causal,
            reason=record.reason,
            verdict=record.verdict,
            effects={name: Effect(e.mean, tuple(e.ci or (None, None))) for name, e in record.effects.items()},
            before=record.before,
            after=record.variants,
            within=Effect(within.effect, tuple(within.ci or (None, None))) if within else Effect(None, (None, None)),
            p_within=within.p_value if within else None,
            p_value=record.p_value,
            p_holm=record.p_holm,
            test_alpha=record.test_alpha,
            controls=tuple(record.control_names),
            gap_before=record.gap_before.to_json() if record.gap_before else None,
            gap_after=record.gap_after.to_json() if record.gap_after else None,
            share_removed=record.share_removed.to_json() if record.share_removed else None,
            n_test=record.n_test,
        )


@dataclass(frozen=True)
class InterventionResult:
    """The causal test of one spec over a run (what `interp intervene` writes to result.json).

    Attributes:
        spec: the intervention.
        run_dir: the run.
        n_items: instructions re-judged.
        backend: the backend the judges ran on.
        judges: judge -> its result.
        result: result.json as the typed `CausalResult` (every number the test wrote, the test included).
    """

    spec: AttentionIntervention
    run_dir: Path
    n_items: int
    backend: str
    judges: dict[str, JudgeIntervention]
    result: CausalResult = field(repr=False)

    @property
    def raw(self) -> dict:
        """result.json as the JSON data written."""
        return self.result.to_json()

    def frame(self) -> pd.DataFrame:
        """One row per judge and variant: effect on P(own), its interval, and the judge's verdict."""
        return pd.DataFrame(
            [
                {
                    "judge": judge,
                    "variant": name,
                    "effect": e.mean,
                    "ci_low": e.ci[0],
                    "ci_high": e.ci[1],
                    "causal": r.causal,
                }
                for judge, r in self.judges.items()
                for name, e in r.effects.items()
            ]
        )


def intervene(
    run: Any,
    /,
    spec: AttentionIntervention | Mapping[str, Any] | str | Path | None = None,
    *,
    all_layers: bool = False,
    top_heads: int | None = None,
    selection_share: float | None = None,
    split_seed: int = 0,
    control_judge: Any = None,
    random_head_sets: int | None = None,
    test_alpha: float = 0.05,
    specificity: str = "margin",
    judges: Sequence[Any] | None = None,
    backend: str | None = None,
    with_controls: bool = False,
    items: Sequence[str] | None = None,
    device: str = "auto",
    progress: bool = True,
    executor: str = "local",
    max_memory: float | None = None,
    **keys: Any,
) -> InterventionResult:
    """The causal test over a run (responses and gold fixed), as `interp intervene` runs it.

    >>> spec = interp.AttentionIntervention(target="self", alpha=0.0, layers=[20, 21])
    >>> spec.target, spec.alpha
    ('self', 0.0)
    >>> result = interp.intervene("runs/demo", spec)  # doctest: +SKIP
    >>> result.frame()[["judge", "causal"]]  # doctest: +SKIP

    Masks the judge's own answer (`all_layers`, its `top_heads` chosen on a seeded `selection_share` of the
    items, or `spec`), compares the judge's change of P(own) with the spread of at least 3 control judges'
    changes under the same mask of the same answer (Crawford-Howell, df = k - 1; an organism's null family
    by default) and, for chosen heads, with random head sets of the same size (`interp.metrics.judge_level`),
    Holm-adjusted over the judges tested.

    Give exactly one mask: a spec (or its keys), `all_layers`, or `top_heads`. `alpha` is a spec key, the
    mask's strength (0 masks); the test's level is `test_alpha`, as the CLI's `--test-alpha`.

    Args:
        run: a run directory or a loaded run.
        spec: an `AttentionIntervention`, a table of its keys, a TOML file, or leave it out and pass keys.
        all_layers: mask the own answer at every layer and head.
        top_heads: mask the judge's K heads with the largest own-minus-other attention.
        selection_share: share of the items that choose heads; the rest test them.
        split_seed: seed of the selection / test split.
        control_judge: control judges reading the same pairs and writing neither answer, as `judges` takes
            them (names or `Judge` objects), or a comma-separated string ("none" for none; default: for an
            organism, the other null organisms of its base, in the run and shipped). At least 3 for a
            self-preference verdict.
        random_head_sets: random head sets of the same size, for `top_heads` (default: the fewest that can
            reach the test's level after Holm over the tested judges).
        test_alpha: the test's level (`alpha` is the spec's mask strength).
        specificity: the specificity check a causal verdict requires, as the CLI's `--specificity`: "margin" (the
            margin-adjusted intercept test, `interp.metrics.specificity`; the only one, and "none" is refused).
        judges: judges to test, by name in the run or as `Judge` objects (a held judge is used as it is, not
            loaded again: its backend, and its open `applying` and `hooks` blocks run in every judgment of the
            test, its baseline included, and are part of every key; a block that cannot run is one line);
            default: every judge whose own answers are in the run.
        backend: "hf", "transformer_lens" or "nnsight" (default: the run's).
        with_controls: also the other-span and random-span masks (descriptive).
        items: split or test on these item ids only.
        device: where the judges run ("cpu", "cuda", "auto", ...).
        progress: show progress bars.
        executor: where the (judge, variant) tasks run: "local" (this process) or "ray" (a Ray cluster,
            `interp.engine.executor`).
        max_memory: GB of judge models held at once; a control is let go once judged beyond it (default: half
            the memory available).
        **keys: spec keys (`target`, `alpha`, `layers`, `heads`, `queries`, `seed`, `name`, `emphasis`), or a node
            spec's (`site`, `op`, `layers`, `heads`, `positions`, ...: `interp.hooks.nodes`).

    Returns:
        The decision, its numbers and the effects per judge.

    Raises:
        InterpError: no mask or more than one, an unknown keyword, or a bad value.
    """
    check_flag(all_layers, "all_layers")
    check_int(top_heads, "top_heads", minimum=1, optional=True)
    check_number(selection_share, "selection_share", optional=True)
    check_int(split_seed, "split_seed")
    check_int(random_head_sets, "random_head_sets", minimum=0, optional=True)
    check_number(test_alpha, "test_alpha")
    check_text(specificity, "specificity")
    check_list(judges, "judges", objects=(Judge,))
    check_text(backend, "backend", optional=True)
    check_flag(with_controls, "with_controls")
    check_list(items, "items")
    check_text(device, "device")
    check_where_it_runs(executor, max_memory)
    check_cache_root()  # an INTERP_CACHE that cannot be the cache: one line before anything is written
    check_mask_choice(spec, keys, all_layers=all_layers, top_heads=top_heads)
    design = design_from_options(
        spec_given=spec is not None or bool(keys),
        all_layers=all_layers,
        top_heads=top_heads,
        control_judge=None,
        selection_share=selection_share,
        split_seed=split_seed,
        random_head_sets=random_head_sets,
        test_alpha=test_alpha,
        span_controls=with_controls,
        specificity=specificity,
    )
    spec = as_intervention(spec, **keys) if design.heads == "spec" else None
    root = run_root(run)
    known = read_run(root).config.judge_specs
    held: dict[str, Judge] = {}
    names = [hold_judge(judge, held, known) for judge in judges] if judges is not None else None
    given = [control_judge] if isinstance(control_judge, (str, Judge)) else control_judge
    controls = [hold_judge(entry, held, known) for entry in given] if given is not None else None
    if controls is not None and not all(isinstance(c, str) for c in controls):
        raise InterpError(
            "control_judge takes judges' names or Judge objects, not "
            f"{', '.join(type(c).__name__ for c in controls if not isinstance(c, str))}"
        )
    design = dataclasses.replace(design, control_judges=parse_control_judges(controls))
    where = PlacementKeys(device=device)
    result = intervene_run(
        root,
        spec,
        design=design,
        judges=names,
        items=items,
        execution=Execution(
            backend=backend,
            where=where,
            max_memory=gb_bytes(max_memory),
            executor=executor,
            progress=progress,
            held=held_judges(held) or None,
        ),
    )
    per_judge = {judge: JudgeIntervention.of(judge, record) for judge, record in result.judges.items()}
    return InterventionResult(
        as_intervention(result.spec), Path(result.run_dir), result.n_items, result.backend, per_judge, result
    )


def check_mask_choice(spec: Any, keys: Mapping[str, Any], *, all_layers: bool, top_heads: int | None) -> None:
    """Exactly one mask, and every keyword known: nothing the caller passed is dropped without a word."""
    allowed = set(SPEC_KEYS) | set(node_keys(keys.get("op")))
    unknown = sorted(set(keys) - allowed)
    if unknown:
        raise InterpError(
            f"intervene() got unknown keyword {unknown[0]!r}; its own keywords are all_layers, top_heads, "
            "selection_share, "
            "split_seed, control_judge, random_head_sets, test_alpha, specificity, judges, backend, with_controls, "
            "items, device, progress; "
            f"spec keys are {', '.join(SPEC_KEYS)}; a node spec's are {', '.join(node_keys(keys.get('op')))}"
        )
    chosen = "all_layers=True" if all_layers else f"top_heads={top_heads}" if top_heads is not None else None
    if chosen is None or (spec is None and not keys):
        return
    if "alpha" in keys:
        raise InterpError(
            f"alpha={keys['alpha']} is a spec's mask strength, and {chosen} takes no spec (it masks with alpha 0); "
            "for the test's level pass test_alpha="
        )
    given = "a spec" if spec is not None else f"spec key {sorted(keys)[0]!r}"
    raise InterpError(
        f"{chosen} chooses the mask itself, so {given} would be dropped; give a spec (or its keys), "
        "all_layers or top_heads, one of them"
    )


def check_where_it_runs(executor: str, max_memory: float | None) -> None:
    """`executor` and `max_memory` (GB) of a Python call that runs causal tests: a bad one is one line."""
    check_executor(executor)
    check_number(max_memory, "max_memory", optional=True)
    if max_memory is not None and max_memory < 0:
        raise InterpError(f"max_memory must be at least 0 GB, not {max_memory}")
    gb_bytes(max_memory)  # infinite or NaN: one line
