"""Smooth sensitivity of the Gini impurity — Ly, Ferry, Huguet, Gambs & Aïvodji, "Smooth
Sensitivity for Learning Differentially-Private yet Accurate Rule Lists" (2024), §4, Thm 4.1
(spec ``docs/specs/dp-rule-lists-smooth-sensitivity.md`` §2).

The weighted Gini impurity of a binary split of the ``n`` records still to classify has local
sensitivity ``g(n)`` in the paper (Fletcher & Islam 2015), with

    g(x) = 1 − (x/(x+1))² − (1/(x+1))² = 2x/(x+1)²,

which depends on ``n`` only (one value serves every candidate rule of a node). Under add/remove
neighbours the true local sensitivity is ``g(n − 1)`` (removing the lone record of the minority
label from ``n − 1`` + 1 records: spec §2.6), so the paper's ``S*`` is not an upper bound of it;
the corrected evaluation (the default, ``convention="add_remove"``) applies the same closed form
at ``(n − 1, max(Λ − 1, 1))``.

Thm 4.1 (``Λ`` the minimum support, a count; ``ξ(k) = e^{−kβ} g(max(Λ, n − k))``):

    S*(n) = max[ξ(0), ξ(⌊t⌋), ξ(⌈t⌉), ξ(n − Λ)],   t = n − y₂,
    y₂ = (1 − β − sqrt((1 − β)² − 4β)) / (2β) = 2 / (1 − β + sqrt((1 − β)² − 4β))

(``t`` only where ``(1 − β)² >= 4β`` and ``0 <= t <= n − Λ``; the second form of ``y₂`` has no
cancellation at small ``β``). The functions take an array module ``xp`` (``jax.numpy`` inside a
fit, ``numpy`` in float64 for references and tables).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import jax.numpy as jnp

CONVENTIONS = ("add_remove", "paper")


def gini_local_sensitivity(x: Any, xp: ModuleType = jnp) -> Any:
    """``g(x) = 2x/(x + 1)²`` (spec §2.2): the paper's local sensitivity of the Gini impurity of
    ``x`` records (``g(1) = 1/2`` is its maximum; decreasing for ``x >= 1``)."""
    x = xp.asarray(x)
    return 2.0 * x / (x + 1.0) ** 2


def smooth_sensitivity_gini(n: Any, min_support: Any, beta: Any, *,
                            convention: str = "add_remove", xp: ModuleType = jnp) -> Any:
    """``S*_{𝒢,β}(n)`` of Thm 4.1 for ``n`` records still to classify, minimum support ``Λ``
    (``min_support``, an integer ``>= 1``) and smoothness ``β > 0`` (arrays broadcast).

    ``convention="add_remove"`` (default) evaluates the closed form at ``(n − 1, max(Λ − 1, 1))``
    (spec §2.6: a β-smooth upper bound of the add/remove local sensitivity ``g(n − 1)``);
    ``"paper"`` at ``(n, Λ)`` exactly as printed. ``n`` is first raised to ``Λ`` (spec A20)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    n = xp.maximum(xp.asarray(n, dtype=float), xp.asarray(min_support, dtype=float))
    lam = xp.asarray(min_support, dtype=float)
    beta = xp.asarray(beta, dtype=float)
    if convention == "add_remove":
        n, lam = n - 1.0, xp.maximum(lam - 1.0, 1.0)
    n = xp.maximum(n, lam)
    last = n - lam

    def xi(k: Any) -> Any:
        return xp.exp(-beta * k) * gini_local_sensitivity(xp.maximum(lam, n - k), xp)

    discriminant = (1.0 - beta) ** 2 - 4.0 * beta
    real = discriminant >= 0
    y2 = 2.0 / xp.where(real, 1.0 - beta + xp.sqrt(xp.where(real, discriminant, 0.0)), 1.0)
    t = n - y2
    best = xp.maximum(xi(0.0), xi(last))
    for k in (xp.floor(t), xp.ceil(t)):
        inside = real & (k >= 0) & (k <= last)
        best = xp.where(inside, xp.maximum(best, xi(xp.clip(k, 0.0, last))), best)
    return best


def confidence_threshold(epsilon: float, confidence: float) -> int:
    """The paper's ``T_conf = ⌊−(ln 2 + ln(1 − 𝒞))/ε⌋ + 1`` (Algorithm 3; spec §3.4, A7): the
    ``𝒞``-quantile of ``Lap(1/ε)``, rounded up to an integer."""
    return math.floor(-(math.log(2.0) + math.log1p(-confidence)) / epsilon) + 1
