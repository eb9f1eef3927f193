"""The route a head set uses, tested between judges: the tested judge's pattern-minus-content contrast against its
control judges' own contrasts (each control patched at its own matched set), as the total is tested.

Per judge j and item i, with per-item DBG under the pattern patch and under the content patch, the contrast is
c_j(i) = DBG_j(content)(i) - DBG_j(pattern)(i): how much more of the judge's DBG the pattern patch removes than the
content patch. x_j = mean_i c_j(i). The share difference is (x_J - mean_C x_C) / G, G the gap before.

- `route_between_judges`: Crawford-Howell on the contrast with the tested judge's own variance added.
  H0: J's contrast is one more draw from its controls' normal distribution of contrasts (the judge's pattern and
  content parts remove the same share). t = (x_J - mean_C) / sqrt(s_C^2 (k + 1) / k + v_J), k - 1 df, where
  v_J = var_i(c_J) / n is the variance over items of J's mean contrast (the item bootstrap's variance, in closed
  form). The controls' spread s_C already holds the controls' own item noise; v_J adds the tested judge's, which
  is larger wherever the patches move J and leave its controls alone (the controls then agree to a fraction of a
  point, and Crawford-Howell without v_J rejects any contrast J's item noise gives). Adding all of v_J rather
  than its excess over the controls' item noise makes the test conservative by that part, never liberal.
  One-sided in the direction of the route it names: `p_pattern` = P(T >= t), `p_content` = P(T <= t). Either
  route may be named, so the route hypothesis's p is twice the smaller one (`p_route`, at most 1): naming either
  route under equal shares has probability at most the level, each at most half of it.
- `route_call`: the verdict. "pattern" (or "content") only where the total part is causal with its share's
  interval above 0, `p_route` (adjusted by the multiplicity plan, `interp.metrics.power_budget`) is at most the
  level with the contrast in that route's direction, and the named route carries at least half of the total (its
  share at least half of the total's share: a pattern share of 0.1 against a content share of -0.1 is not
  "pattern" when the total removes 0.8); otherwise "neither", with the reason.
- `simulate_route_judges` / `route_call_rates`: the calibration by simulation (`python experiments/bench_routes.py`,
  docs/causal-test.md).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from jaxtyping import Float

from interp.errors import InterpError
from interp.formatting import p_value, share_interval
from interp.metrics.causal_test import ALPHA
from interp.metrics.judge_level import MIN_CONTROLS, too_few_controls
from interp.metrics.student_t import student_t_cdf

HALF_OF_TOTAL = 0.5  # the named route's share must be at least this fraction of the total's


@dataclass(frozen=True)
class RouteTest:
    """The between-judge test of pattern minus content: the statistic, its parts and the one-sided p's."""

    contrast_judge: float  # x_J: J's DBG under the content patch minus under the pattern patch (mean over items)
    contrast_controls: list[float]  # each control's x_C at its own matched set
    judge_variance: float  # v_J: the variance over items of x_J
    control_sd: float | None
    gap: float  # G, the judge's gap over its controls before any patch
    difference: float | None  # (x_J - mean_C x_C) / G: pattern share minus content share
    pattern_share: float | None
    content_share: float | None
    t: float | None
    df: int
    p_pattern: float | None  # one-sided, P(T >= t): the pattern patch removes more than the content patch
    p_content: float | None  # one-sided, P(T <= t)
    p_route: float | None  # min(1, 2 min(p_pattern, p_content)): either route may be named
    direction: str | None  # "pattern" or "content": the route the contrast points to
    reason: str | None = None
    test: str = "Crawford-Howell on pattern minus content, the tested judge's own item variance added"

    def to_dict(self) -> dict:
        """The test as a JSON-ready dict."""
        return asdict(self)


def route_between_judges(
    judge: Float[np.ndarray, "stage item"], controls: Float[np.ndarray, "control stage item"]
) -> RouteTest:
    """The between-judge route test (module docstring) from per-item DBG `judge` [stage, item] and `controls`
    [control, stage, item], stages (before, pattern, content), every control at its own matched set.

    H0: the tested judge's contrast x_J is one more draw from the controls' normal distribution of contrasts, its
    own item variance v_J added to theirs. Fewer than MIN_CONTROLS controls, or controls that agree exactly with no
    item variance in J: p None with a reason."""
    j, c = np.asarray(judge, dtype=float), np.asarray(controls, dtype=float)
    if j.ndim != 2 or j.shape[0] != 3 or c.ndim != 3 or c.shape[1:] != j.shape or not j.shape[1]:
        raise InterpError(
            "route_between_judges: need per-item DBG [3, item] for the judge (before, pattern, content) and "
            f"[control, 3, item] for the controls on the same items, got {j.shape} and {c.shape}"
        )
    if not (np.all(np.isfinite(j)) and np.all(np.isfinite(c))):
        raise InterpError("route_between_judges: per-item DBG values must be finite numbers")
    k, n = c.shape[0], j.shape[1]
    per_item = j[2] - j[1]
    x = float(per_item.mean())
    xs = (c[:, 2] - c[:, 1]).mean(axis=1)
    v = float(per_item.var(ddof=1) / n) if n > 1 else 0.0
    gap = float(j[0].mean() - c[:, 0].mean()) if k else float(j[0].mean())
    common = dict(contrast_judge=x, contrast_controls=xs.tolist(), judge_variance=v, gap=gap)
    shares = _shares(j, c, gap) if k else (None, None, None)
    common |= dict(difference=shares[0], pattern_share=shares[1], content_share=shares[2])
    reason = too_few_controls(k)
    if reason is not None:
        none = dict(t=None, p_pattern=None, p_content=None, p_route=None, direction=None)
        return RouteTest(
            control_sd=float(xs.std(ddof=1)) if k > 1 else None, df=max(k - 1, 0), reason=reason, **common, **none
        )
    sd = float(xs.std(ddof=1))
    scale = math.sqrt(sd**2 * (k + 1) / k + v)
    diff = x - float(xs.mean())
    if scale == 0:
        if diff == 0:
            return RouteTest(
                control_sd=sd, df=k - 1, t=0.0, p_pattern=1.0, p_content=1.0, p_route=1.0, direction=None, **common
            )
        none = dict(t=None, p_pattern=None, p_content=None, p_route=None, direction=None)
        why = f"the {k} control judges' contrasts agree exactly and the judge's has no item variance: no spread"
        return RouteTest(control_sd=sd, df=k - 1, reason=why, **common, **none)
    t = diff / scale
    p_content = float(student_t_cdf(t, k - 1))
    p_pattern = 1.0 - p_content
    return RouteTest(
        control_sd=sd,
        df=k - 1,
        t=t,
        p_pattern=p_pattern,
        p_content=p_content,
        p_route=min(1.0, 2 * min(p_pattern, p_content)),
        direction="pattern" if t > 0 else "content" if t < 0 else None,
        **common,
    )


def _shares(j: np.ndarray, c: np.ndarray, gap: float) -> tuple[float | None, float | None, float | None]:
    """(difference, pattern share, content share), each 1 - G_part / G (None where G is 0)."""
    if gap == 0:
        return None, None, None
    gaps = j.mean(axis=1) - c.mean(axis=(0, 2))  # before, pattern, content
    pattern, content = 1 - gaps[1] / gap, 1 - gaps[2] / gap
    return float(pattern - content), float(pattern), float(content)


def route_call(
    total_share: float | None,
    total_low: float | None,
    p_total: float | None,
    test: RouteTest | None,
    p_route: float | None,
    test_alpha: float = ALPHA,
) -> tuple[str, str, bool | None]:
    """The route verdict, its reason and the half-of-total check (None where not reached).

    "pattern" / "content" only where (a) the total part is causal: `p_total` (its adjusted removal p) at most
    `test_alpha` and its share's interval above 0 (`total_low` > 0); (b) the between-judge contrast test's
    `p_route` (adjusted by the multiplicity plan; `test.p_route` when tested alone) is at most `test_alpha`, the
    route named by the contrast's direction; (c) the named route's share is at least half of the total's share.
    Else "neither", with the reason."""
    if total_share is None or p_total is None:
        return "neither", "the total part has no share or no test: no share to route", None
    if not (p_total <= test_alpha and total_low is not None and math.isfinite(total_low) and total_low > 0):
        why = (
            f"adjusted p {p_value(p_total)} > {test_alpha:g}" if p_total > test_alpha else "its interval is not above 0"
        )
        return "neither", f"the total part is not causal ({why}): no share to route", None
    if test is None or test.p_route is None or p_route is None:
        reason = test.reason if test is not None and test.reason else "not computed"
        return "neither", f"no between-judge test of pattern minus content ({reason})", None
    shares = (
        f"pattern {share_interval(test.pattern_share, None)}, content {share_interval(test.content_share, None)}, "
        f"total {share_interval(total_share, None)}"
    )
    words = (
        f"pattern minus content t = {test.t:.2f}, df {test.df}, one-sided p "
        f"{p_value(min(test.p_pattern, test.p_content))}, route p {p_value(p_route)}"
    )
    if p_route > test_alpha or test.direction is None:
        return "neither", f"{words} > {test_alpha:g}: the two routes are not told apart between judges; {shares}", None
    named = test.pattern_share if test.direction == "pattern" else test.content_share
    half = named is not None and named >= HALF_OF_TOTAL * total_share
    if not half:
        return (
            "neither",
            f"{words} points to {test.direction}, but its share carries less than half of the total's: {shares}",
            False,
        )
    return test.direction, f"{words} <= {test_alpha:g}, at least half of the total; {shares}", True


# --- calibration by simulation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RouteModel:
    """Simulated route parts (`simulate_route_judges`), in DBG units: the gap, the total's, pattern's and content's
    shares of it (equal pattern and content: the null), the spread between judges of each part's effect
    (`spread`), each judge's item noise (the tested judge's `judge_noise`, the controls' `control_noise`) and the
    items."""

    n_items: int = 90
    gap: float = 0.15
    pattern: float = 0.4
    content: float = 0.4
    total: float = 0.8
    spread: float = 0.02
    judge_noise: float = 0.2
    control_noise: float = 0.05


def simulate_route_judges(
    rng: np.random.Generator, k: int, model: RouteModel = RouteModel()
) -> tuple[np.ndarray, np.ndarray]:
    """Per-item DBG [stage, item] for a tested judge and [control, stage, item] for k controls, stages (before,
    pattern, content). Every judge's part effects are seed draws, N(0, spread) each, so the tested judge is one
    more control apart from its planted shares of its gap; items are shared by all judges (their effect cancels),
    and each judge has its own item noise (the tested judge's larger: the patches move it, not its controls)."""
    n = model.n_items
    shared = rng.normal(0, 0.1, n)
    seeds = rng.normal(0, model.spread, (k + 1, 2))  # [judge, part]: pattern, content
    level = rng.normal(0, 0.01, k + 1)
    planted = np.array([model.pattern, model.content]) * model.gap
    noise = np.full(k + 1, model.control_noise)
    noise[0] = model.judge_noise
    before = level[:, None] + shared + rng.normal(0, 0.02, (k + 1, n))
    before[0] += model.gap
    drops = seeds.copy()
    drops[0] += planted
    parts = before[:, None, :] - drops[..., None] + noise[:, None, None] * rng.standard_normal((k + 1, 2, n))
    values = np.concatenate([before[:, None], parts], axis=1)  # [judge, stage, item]
    return values[0], values[1:]


@dataclass(frozen=True)
class RouteRates:
    """How often each route is named under `model` with k controls (the total taken as causal)."""

    k: int
    spread: float
    n_draws: int
    pattern: float
    content: float

    def to_dict(self) -> dict:
        """The rates as a JSON-ready dict."""
        return asdict(self)


def route_call_rates(
    k: int, model: RouteModel = RouteModel(), *, n_draws: int = 2000, test_alpha: float = ALPHA, seed: int = 0
) -> RouteRates:
    """The share of `n_draws` simulated judges (`simulate_route_judges`) on which `route_call` names each route,
    the total taken as causal at the model's total share: with equal pattern and content shares, each rate is the
    route test's false-positive rate."""
    if k < MIN_CONTROLS or n_draws < 1:
        raise InterpError(f"route_call_rates: need k >= {MIN_CONTROLS} controls and n_draws >= 1")
    rng = np.random.default_rng(seed)
    named = {"pattern": 0, "content": 0}
    for _ in range(n_draws):
        test = route_between_judges(*simulate_route_judges(rng, k, model))
        route, _, _ = route_call(model.total, 0.5 * model.total, 0.0, test, test.p_route, test_alpha)
        if route in named:
            named[route] += 1
    return RouteRates(
        k=k,
        spread=model.spread,
        n_draws=n_draws,
        pattern=named["pattern"] / n_draws,
        content=named["content"] / n_draws,
    )
