"""Where an explanation spends its level: one primary candidate per method, the rest gate-kept behind it.

The plan (`multiplicity_plan`, registered in experiments/records/plan.md before any result under it):

- **One primary per method**: the method's top set chosen on the selection split (never the candidate with the
  best test share). Holm runs across the methods' primaries only.
- **Gate-kept behind it, in a fixed sequence**: the method's other tests (its head set's route: the total part,
  then the pattern-minus-content contrast; any further candidate of the method) are tested only where every test
  before them in the method's sequence was rejected, at the level the primary passed with.
- **Identical tests once**: two methods that chose the same set (the tested judge's and every control's) make one
  hypothesis, reported under both and counted once in Holm.
- **Random sets outside**: they are negative controls, reported with their raw p and never counted.

As a graph (Bretz, Maurer, Brannath and Posch 2009): each distinct primary starts with weight 1/m (m the distinct
primaries), each test passes all its weight to the next test of its method's sequence, and the last
test of a sequence passes its weight equally to the other methods' first tests. Without gate-kept tests this is
Holm across the primaries exactly. Any such graph's sequentially rejective procedure controls the family-wise
error rate at the level in the strong sense (`graphical_adjusted`); `adjusted` p-values are the smallest levels
at which each hypothesis is rejected.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from interp.errors import InterpError
from interp.metrics.student_t import student_t_cdf

PLAN = (
    "one primary per method (its top set on the selection split), Holm across the primaries; each method's other "
    "tests (route total, then pattern minus content) gate-kept behind it in a fixed sequence; identical tests once; "
    "random sets outside the correction (negative controls, raw p)"
)


def graphical_adjusted(
    p: Sequence[float], weights: Sequence[float], transitions: Sequence[Sequence[float]]
) -> list[float]:
    """Adjusted p-values of the graphical procedure (Bretz et al. 2009, algorithm 1 with adjusted p's): reject
    where adjusted <= the level. `weights` sum to at most 1; `transitions[i][j]` the share of i's weight passed to
    j when i is rejected (rows sum to at most 1, diagonal 0). H0 of each hypothesis: its own; FWER is controlled
    strongly under the validity of each raw p."""
    p = np.asarray(p, dtype=float)
    w = np.asarray(weights, dtype=float).copy()
    g = np.asarray(transitions, dtype=float).copy()
    m = p.size
    if w.shape != (m,) or g.shape != (m, m):
        raise InterpError(f"graphical_adjusted: {m} p-values need {m} weights and an {m} x {m} transition matrix")
    if np.any((p < 0) | (p > 1) | ~np.isfinite(p)) or np.any(w < 0) or w.sum() > 1 + 1e-9:
        raise InterpError("graphical_adjusted: p-values in [0, 1], weights at least 0 summing to at most 1")
    if np.any(g < 0) or np.any(g.sum(axis=1) > 1 + 1e-9) or np.any(np.diag(g) != 0):
        raise InterpError("graphical_adjusted: transitions at least 0, rows summing to at most 1, diagonal 0")
    active = list(range(m))
    adjusted = [1.0] * m
    running = 0.0
    while active:
        ratios = [p[i] / w[i] if w[i] > 0 else np.inf for i in active]
        j = active[int(np.argmin(ratios))]
        running = max(running, min(ratios))
        adjusted[j] = float(min(1.0, running))
        rest = [i for i in active if i != j]
        new_w, new_g = w.copy(), np.zeros_like(g)
        for i in rest:
            new_w[i] = w[i] + w[j] * g[j, i]
            for h in rest:
                if h == i:
                    continue
                denominator = 1 - g[i, j] * g[j, i]
                new_g[i, h] = (g[i, h] + g[i, j] * g[j, h]) / denominator if denominator > 0 else 0.0
        w, g, active = new_w, new_g, rest
    return adjusted


@dataclass(frozen=True)
class Hypothesis:
    """One test of the plan: its key (identical tests share one), the methods whose sequence holds it and where,
    its raw p (None: not run, counted as 1), and its adjusted p."""

    key: str
    methods: list[str]
    role: str  # primary | gate-kept
    p_value: float | None
    p_adjusted: float | None = None
    labels: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Plan:
    """The multiplicity plan of one explanation: its rule in words, the hypotheses in order, the level."""

    rule: str
    test_alpha: float
    hypotheses: list[Hypothesis]
    negative_controls: list[str]

    def adjusted(self, key: str) -> float | None:
        """The adjusted p of the hypothesis with `key` (None: not in the plan)."""
        return next((h.p_adjusted for h in self.hypotheses if h.key == key), None)

    def to_dict(self) -> dict:
        """The plan as a JSON-ready dict."""
        return asdict(self)


def multiplicity_plan(
    sequences: dict[str, Sequence[tuple[str, float | None, str]]],
    *,
    test_alpha: float,
    negative_controls: Sequence[str] = (),
) -> Plan:
    """The plan for `sequences`: method -> its tests in order, each (key, raw p or None, label), the first its
    primary. Tests with one key (identical sets chosen by two methods) are one hypothesis, reported under both; the
    distinct primaries share the level equally (Holm across them). A test not run (p None) counts as p = 1: it is
    never rejected and passes no weight."""
    methods = [m for m, tests in sequences.items() if tests]
    if not 0 < test_alpha < 1:
        raise InterpError(f"multiplicity_plan: test_alpha = {test_alpha} must be in (0, 1)")
    keys: list[str] = []
    info: dict[str, dict] = {}
    for method in methods:
        for position, (key, p, label) in enumerate(sequences[method]):
            if key not in info:
                keys.append(key)
                info[key] = {"p": p, "methods": [], "labels": [], "role": "gate-kept", "at": []}
            entry = info[key]
            if p is not None and entry["p"] is not None and abs(p - entry["p"]) > 1e-12:
                raise InterpError(f"multiplicity_plan: one test {key!r} with two p-values ({entry['p']}, {p})")
            entry["p"] = entry["p"] if entry["p"] is not None else p
            entry["methods"].append(method)
            entry["labels"].append(label)
            entry["at"].append((method, position))
            if position == 0:
                entry["role"] = "primary"
    if not keys:
        return Plan(PLAN, test_alpha, [], list(negative_controls))
    index = {key: i for i, key in enumerate(keys)}
    weights = np.zeros(len(keys))
    transitions = np.zeros((len(keys), len(keys)))
    primaries = list(dict.fromkeys(sequences[method][0][0] for method in methods))
    for key in primaries:  # Holm across the distinct primaries: a test two methods chose counts once
        weights[index[key]] = 1 / len(primaries)
    for key in keys:
        share = 1 / len(info[key]["at"])
        for method, position in info[key]["at"]:
            chain = sequences[method]
            if position + 1 < len(chain):
                targets = [chain[position + 1][0]]
            else:
                targets = [sequences[o][0][0] for o in methods if o != method]
            targets = [t for t in targets if t != key]
            for target in targets:
                transitions[index[key], index[target]] += share / len(targets)
    p = [1.0 if info[key]["p"] is None else float(info[key]["p"]) for key in keys]
    adjusted = graphical_adjusted(p, weights, transitions)
    hypotheses = [
        Hypothesis(
            key=key,
            methods=info[key]["methods"],
            role=info[key]["role"],
            p_value=info[key]["p"],
            p_adjusted=None if info[key]["p"] is None else adjusted[index[key]],
            labels=info[key]["labels"],
        )
        for key in keys
    ]
    return Plan(PLAN, test_alpha, hypotheses, list(negative_controls))


def removal_p(t: float | None, df: int | float, p_two_sided: float | None) -> float | None:
    """The one-sided p of Crawford-Howell in the removal direction, P(T <= t): the judge's P(own) falls more than
    its controls' (the edit removes self-preference), from a two-sided test's t and df. Where the test had no t
    (its controls agree exactly and the judge equals them: p 1) the two-sided p is kept; None without a test."""
    if p_two_sided is None:
        return None
    if t is None or df <= 0:
        return float(p_two_sided)
    return float(student_t_cdf(t, df))
