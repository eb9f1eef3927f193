"""Gold against people (DBG paper, Table 1): the share of pairs where a gold verdict and the human one agree,
and both win rates. Pure functions over P(first answer wins) per pair."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from interp.errors import InterpError
from interp.metrics.dbg import hard_win_rate, probability_array, tie_sign
from interp.metrics.stats import bootstrap_ci


def human_agreement(
    gold_p_first: Sequence[float], human_p_first: Sequence[float], *, n_boot: int = 1000, seed: int = 0
) -> dict:
    """Agreement of gold with human labels on the same pairs (the paper: 74 % of 100 samples).

    Each side's verdict per pair is `tie_sign` of its P(first wins) (a tie where P is 0.5: an even split of
    judges, or of annotators); they agree where the verdicts are equal. Returns ``n``, ``agreement`` with its
    bootstrap interval (``agreement_ci``), the hard win rate of the first answer by gold and by people (the
    paper's 66 % against 63 %) and the people's tie share.
    """
    gold = probability_array(gold_p_first, "gold_p_first")
    human = probability_array(human_p_first, "human_p_first")
    if gold.size != human.size:
        raise InterpError(f"human_agreement: {gold.size} gold verdicts but {human.size} human labels")
    agree = (tie_sign(gold) == tie_sign(human)).astype(float)
    return {
        "n": int(gold.size),
        "agreement": float(agree.mean()),
        "agreement_ci": list(bootstrap_ci(lambda idx: float(agree[idx].mean()), gold.size, n_boot=n_boot, seed=seed)),
        "gold_win_rate_first": hard_win_rate(gold),
        "human_win_rate_first": hard_win_rate(human),
        "human_tie_share": float(np.mean(tie_sign(human) == 0)),
    }
