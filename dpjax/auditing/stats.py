"""Confidence bounds for the auditor: Clopper–Pearson intervals and the ε lower bound.

If a mechanism ``M`` is ``(ε, δ)``-DP, every event ``E`` has ``P[M(D) ∈ E] <= e^ε·P[M(D') ∈ E]
+ δ`` for neighbouring ``D, D'``. With ``k1`` of ``n1`` draws on ``D`` and ``k2`` of ``n2`` on
``D'`` in ``E``, a lower confidence bound ``p1_lo`` on the first probability and an upper bound
``p2_hi`` on the second give ``ε >= log((p1_lo − δ) / p2_hi)`` with the joint confidence of the
two one-sided bounds (Jagielski, Ullman & Oprea 2020; Nasr et al. 2021).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def clopper_pearson(k: np.ndarray | int, n: np.ndarray | int,
                    alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds at level ``1 − alpha`` each: ``(lower, upper)`` on a
    binomial proportion with ``k`` successes in ``n`` trials (elementwise)."""
    k, n = np.asarray(k, float), np.asarray(n, float)
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, stats.beta.ppf(alpha, k, n - k + 1), 0.0)
        upper = np.where(k < n, stats.beta.ppf(1 - alpha, k + 1, n - k), 1.0)
    return lower, upper


def epsilon_lower_bound(k1: np.ndarray | int, n1: int, k2: np.ndarray | int, n2: int,
                        delta: float = 0.0, confidence: float = 0.95) -> np.ndarray:
    """The ε lower bound ``max(0, log((p1_lo − δ) / p2_hi))`` of an event seen ``k1`` of ``n1``
    times on ``D`` and ``k2`` of ``n2`` times on ``D'``; each one-sided bound holds with
    probability ``1 − (1 − confidence)/2``, so both together with ``confidence``."""
    alpha = (1 - confidence) / 2
    p1_lo, _ = clopper_pearson(k1, n1, alpha)
    _, p2_hi = clopper_pearson(k2, n2, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.log(np.maximum(p1_lo - delta, 0.0) / p2_hi)
    return np.maximum(np.nan_to_num(bound, nan=0.0, neginf=0.0), 0.0)


def epsilon_estimate(k1: int, n1: int, k2: int, n2: int) -> float:
    """Point estimate ``log(p1 / p2)`` of the event's privacy loss (``inf`` when ``k2 = 0``)."""
    if k1 == 0:
        return 0.0
    if k2 == 0:
        return math.inf
    return math.log((k1 / n1) / (k2 / n2))
