"""Private Newton boosting's releases (``docs/design.md``, "Learners"): the prior (class counts,
or a regression's row count and target sum), a round's cell sums, their sensitivities and
noise scales. Every function here either goes through a mechanism of :mod:`dpjax.mechanisms`,
which returns its :class:`~dpjax.privacy.Cost`, or is post-processing of released values.

The labels name the ledger's entries: :data:`PRIOR_LABEL` (:data:`MEAN_PRIOR_LABEL` for
regression), :data:`SCOUT_LABEL`, :data:`MAJORITY_LABEL` / :data:`MEAN_LABEL` (the fallback),
:data:`ROUND_LABELS` and :data:`SELECT_LABEL` (oblivious trees' level draws).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.mechanisms.gaussian import (
    NOISE_BITS_SCALE,
    free_bound,
    gaussian_grid_step,
    gaussian_mechanism,
)
from dpjax.mechanisms.laplace import laplace_mechanism
from dpjax.mechanisms.size import class_totals, pooled_counts, release_class_counts
from dpjax.privacy import Cost, fixed_point
from dpjax.privacy.fixed_point import WideSum

GRAD_BITS = fixed_point.BITS
"""Gradient and hessian sums are fixed point (:mod:`dpjax.privacy.fixed_point`) in units of
``2**−GRAD_BITS``: exact (the sensitivity holds for the computed sums), in int32 up to
:data:`dpjax.privacy.fixed_point.MAX_ROWS` rows and in two limbs beyond."""
GRAD_UNIT = fixed_point.UNIT
HESSIAN_WEIGHT = 0.5
"""Regression rounds release each record's hessian (1 for the squared loss) as this weight, so
that the gradient sums, whose noise matters most, take ``1/(1 + w)`` of a round's L1
sensitivity instead of half; the released hessian sums are divided by it (post-processing).
Measured on abalone, winewhite and winered (10 splits × 4 seeds, ε = 0.1 and 1) against 1 and
0.25: no weight was best everywhere; 0.5 was the best or within 0.01 of it on abalone and
winewhite."""
MOMENTS_BOUND = float(2**36)
"""The public bound (units) of the regression prior's row count and target sum:
:data:`dpjax.privacy.fixed_point.WIDE_MAX_ROWS` rows, about ``2**36`` units; it sets the
release's grid to one row (for ``ε >= 2**−19``)."""
GAUSSIAN_CELL_BOUND = 2.0**16
"""With Gaussian noise a cell's sums are clipped to ``±2**16`` (``2**24`` units, so that their
float32 conversion is exact) before the release: a cell's moves are clipped to ``±STEP_CLIP``
anyway, so only cells of over ``2**18`` rows can lose accuracy, never privacy."""
PRIOR_LABEL = "prior (class counts)"
MEAN_PRIOR_LABEL = "prior (row count and target sum)"
MAJORITY_LABEL = "class counts again (no round affordable: majority fallback)"
MEAN_LABEL = "row count and target sum again (no round affordable: mean fallback)"
SCOUT_LABEL = "scout (class counts)"
SELECT_LABEL = "oblivious splits (level gains)"
ROUND_LABELS = {"laplace": "rounds (gradient/hessian sums)",
                "gaussian": "rounds (gradient/hessian sums, Gaussian)"}


def release_moments(key: jax.Array, z: jax.Array, epsilon: jax.Array | None,
                    sensitivity: float = 1.0) -> tuple[jax.Array, Cost | None]:
    """The regression prior's release: the row count and the target's sum ``(m, Σ z_i)``
    (exact fixed point in units of ``2**−GRAD_BITS``: int32 up to
    :data:`dpjax.privacy.fixed_point.MAX_ROWS` rows, two limbs past it) with exact discrete
    Laplace noise, as float32 rows; exact without DP. L1 sensitivity 2 rows under either
    relation: adding or removing a record (``sensitivity`` 1) moves the count by exactly
    ``2**GRAD_BITS`` units and the sum by at most that (``|z| <= 1``); replacing one
    (``sensitivity`` 2) leaves the count and moves the sum by at most ``2·2**GRAD_BITS``.
    Both are within the public bound :data:`MOMENTS_BOUND`, whose grid is one row
    (``2**GRAD_BITS`` units) for ``ε >= 2**−19``: the count's move is then a whole grid step,
    so only the sum can cross one more boundary (``aligned``,
    :func:`dpjax.mechanisms.laplace.integer_grid`) and the integer sensitivity stays 2 rows
    (at a smaller ``ε`` the grid is 2 rows and both may cross one: 2 steps)."""
    m = z.shape[0]
    total = fixed_point.exact_segment_sum(fixed_point.to_units(z)[:, None],
                                          jnp.zeros(m, jnp.int32), 1)
    count = m * GRAD_UNIT                   # static: m is the shape
    if isinstance(total, WideSum):
        units = WideSum(jnp.stack([jnp.int32(count >> fixed_point.LIMB_BITS), total.hi[0, 0]]),
                        jnp.stack([jnp.int32(count % 2**fixed_point.LIMB_BITS),
                                   total.lo[0, 0]]))
        exact = (units.hi.astype(jnp.float32) * 2.0**fixed_point.LIMB_BITS
                 + units.lo.astype(jnp.float32))
    else:
        units = jnp.stack([jnp.int32(count), total[0, 0]])
        exact = units.astype(jnp.float32)
    if epsilon is None:
        return exact / GRAD_UNIT, None
    noisy, cost = laplace_mechanism(key, units, 2.0 * GRAD_UNIT, epsilon, bound=MOMENTS_BOUND,
                                    integer=True, touched=1 if sensitivity > 1.0 else 2,
                                    aligned=GRAD_UNIT, label="L1 sens. 2")
    return noisy / GRAD_UNIT, cost


def mean_prior(releases: list[tuple[jax.Array, ArrayLike]]) -> tuple[jax.Array, jax.Array]:
    """The regression prior ``F_0 = clip(S̃/ñ, −1, 1)`` (the noisy mean of ``z``) and the
    released size ``ñ`` (at least 1) from one or more :func:`release_moments` releases at
    budgets ``ε_k``, pooled by inverse variance (post-processing)."""
    size, total = pooled_counts(releases)
    size = jnp.maximum(size, 1.0)
    return jnp.clip(total / size, -1.0, 1.0), size


def release_counts(key: jax.Array, y: jax.Array, epsilon: jax.Array | None,
                   sensitivity: float, n_classes: int = 2
                   ) -> tuple[jax.Array, jax.Array, Cost | None]:
    """The (noisy) class counts ``(ñ_0, …, ñ_{K−1})`` (float32), their total and the cost; the
    counts' L1 sensitivity is ``sensitivity`` (one record is in one class)."""
    counts = class_totals(y, n_classes)
    cost = None
    if epsilon is not None:
        counts, cost = release_class_counts(key, counts, epsilon, sensitivity)
    counts = counts.astype(jnp.float32)
    return counts, counts.sum(), cost


def release_prior(key: jax.Array, target: jax.Array, epsilon: jax.Array | None,
                  sensitivity: float, n_classes: int) -> tuple[jax.Array, Cost | None]:
    """The prior's release: the class counts (:func:`release_counts`), or for regression
    (``n_classes = 1``) the row count and the target's sum (:func:`release_moments`)."""
    if n_classes == 1:
        return release_moments(key, target, epsilon, sensitivity)
    counts, _, cost = release_counts(key, target, epsilon, sensitivity, n_classes)
    return counts, cost


PRIOR_FLOOR_SDS = 2.0
"""A private prior's log-odds read each pooled class count floored at this many standard
deviations of its noise (:func:`pooled_prior`): at a small ``ε_0`` (``ε = 0.1``: ``ε_0 = 0.01``,
counts of standard deviation 141) a count the noise cannot tell from zero, floored at 1, gave
priors of ``±5`` and a wrong sign the rounds could not overturn (ionosphere, 5 splits × 5
seeds: 4 of 25 fits predicted the minority class alone). Measured at ``ε = 0.1`` on the
shared datasets (5 splits × 5 seeds; issue 52), mean accuracy over 11 small datasets: 0.677
with counts floored at one record, 0.687 / 0.695 / 0.693 / 0.692 floored at 1 / 2 / 3 / 4
standard deviations (breastwisc 0.789 → 0.858, ionosphere 0.615 → 0.663, transfusion 0.735 →
0.751); nothing moves at ``ε = 1``."""


def prior_of(n_classes: int, sensitivity: float | None = None
             ) -> Callable[[list[tuple[jax.Array, ArrayLike]]], tuple[jax.Array, jax.Array]]:
    """How released priors pool into ``(F_0, ñ)``: :func:`mean_prior` for regression
    (``n_classes = 1``), :func:`pooled_prior` for classes (its counts' L1 ``sensitivity``;
    ``None``: exact counts)."""
    if n_classes == 1:
        return mean_prior
    return lambda releases: pooled_prior(releases, sensitivity)


def pooled_prior(releases: list[tuple[jax.Array, ArrayLike]],
                 sensitivity: float | None = None) -> tuple[jax.Array, jax.Array]:
    """``F_0 = log(ñ_1/ñ_0)`` (two classes; with ``K > 2`` the centred log counts ``[K]``,
    ``log ñ_k − mean_j log ñ_j``) and the released size ``ñ = Σ ñ_k`` from one or more noisy
    releases of the class counts at budgets ``ε_k``, pooled by inverse variance (weights
    ``ε_k²``; post-processing). The size sums the counts floored at 1; the log-odds read each
    count floored at :data:`PRIOR_FLOOR_SDS` standard deviations of the pooled noise,
    ``√2·Δ/√(Σ_k ε_k²)`` (discrete Laplace of scale ``Δ/ε_k``, ``Δ`` the counts' L1
    ``sensitivity``; at 1 for exact counts, ``sensitivity=None``), so that a class whose count
    the noise cannot tell from zero does not swamp the rounds with a prior of ``±log ñ``."""
    pooled = pooled_counts(releases)
    floor = jnp.float32(1.0)
    if sensitivity is not None:
        weight = sum(jnp.asarray(e, jnp.float32) ** 2 for _, e in releases)
        floor = jnp.maximum(PRIOR_FLOOR_SDS * math.sqrt(2.0) * sensitivity
                            / jnp.sqrt(jnp.maximum(weight, 1e-30)), 1.0)
    size = jnp.maximum(pooled, 1.0).sum()
    floored = jnp.maximum(pooled, floor)
    if pooled.shape[0] == 2:
        return jnp.log(floored[1] / floored[0]), size
    logs = jnp.log(floored)
    return logs - logs.mean(), size


def loss_spread(n_classes: int) -> float:
    """The most ``Σ_k |g_k| + Σ_k h_k`` of one record's ``(g, h)`` (in rows): ``1 + w`` for the
    clipped squared loss of regression (``n_classes = 1``, one output: ``|g| <= 1`` and the
    weighted hessian ``w`` = :data:`HESSIAN_WEIGHT`, :func:`residual_stats`), 1 for the
    logistic loss (``|p − y| + p(1 − p) <= 1``),
    ``3 − 1/(K − 1)`` for the softmax loss over ``K > 2`` classes: ``Σ|p_k − y_k| = 2(1 − p_y)``
    and ``Σ p_k(1 − p_k) = 1 − Σ p_k²``, largest at ``p_y = 0`` with the rest spread evenly
    over the other ``K − 1`` classes."""
    if n_classes == 1:
        return 1.0 + HESSIAN_WEIGHT
    return 1.0 if n_classes == 2 else 3.0 - 1.0 / (n_classes - 1)


def round_units(sensitivity: float, n_classes: int = 2) -> int:
    """A round's L1 sensitivity in fixed-point units: ``sensitivity`` times the spread
    (:func:`loss_spread`) of ``2**GRAD_BITS``-unit statistics, rounded up, plus one unit per
    floored statistic (``2K``, the logistic loss's 2, the squared loss's 1: its ``w·h`` is exact)
    and, with ``K > 2``, one unit for the float32 softmax (``Σ p_k`` within ``K·2**−23`` of
    1)."""
    if n_classes == 1:
        return int(round(sensitivity * (GRAD_UNIT + HESSIAN_WEIGHT * GRAD_UNIT + 1)))
    if n_classes == 2:
        return int(round(sensitivity * (GRAD_UNIT + 2)))
    units = math.ceil(loss_spread(n_classes) * GRAD_UNIT) + 2 * n_classes + 1
    return int(round(sensitivity * units))


def round_sensitivity(sensitivity: float, n_classes: int = 2) -> float:
    """A round's sensitivity in rows, L1 and L2 alike: ``sensitivity·(1 + 2**−(GRAD_BITS − 1))``
    (a record's ``(g, h)`` has both norms at most 1; the two fixed-point floors add at most 2
    units, :func:`release_sums`); with ``K > 2`` classes or for regression (``n_classes = 1``)
    the L1 sensitivity :func:`round_units` in rows (Laplace rounds only)."""
    return round_units(sensitivity, n_classes) / GRAD_UNIT


def sums_bound(size: ArrayLike) -> jax.Array:
    """The public bound of a round's cell sums (units) that sets a Laplace release's grid:
    ``2·ñ`` rows (``ñ`` the released size; a record's ``|g|, h <= 1``), so that the grid is 1
    unit up to ``ñ = 2**19`` rows and coarsens to keep every sum within the mechanism's
    ``2**28`` grid steps beyond (:func:`dpjax.mechanisms.laplace.integer_grid`): past
    :data:`dpjax.privacy.fixed_point.MAX_ROWS` rows the sums are wide
    (:func:`dpjax.privacy.fixed_point.exact_segment_sum`). Capped at ``2**44`` units (a grid of
    at most ``2**16`` units)."""
    return jnp.minimum(2.0 * jnp.maximum(jnp.asarray(size, jnp.float32), 1.0) * GRAD_UNIT,
                       2.0**44)


def release_sums(key: jax.Array, sums: jax.Array | WideSum, budget: jax.Array,
                 sensitivity: float, noise: str, delta: float, n_classes: int = 2,
                 bound: ArrayLike | None = None) -> tuple[jax.Array, Cost]:
    """One round's cell sums ``[C, 2]`` (``[C, K, 2]`` for ``n_classes = K > 2``; the squared
    loss's for ``n_classes = 1``; both Laplace only: L1 sensitivity :func:`round_units`)
    (int32 units of ``2**−GRAD_BITS``, or wide past
    :data:`dpjax.privacy.fixed_point.MAX_ROWS` rows) released as float
    ``(G̃, H̃)``. A record's floored ``(g, h)`` moves one cell by at most ``2**GRAD_BITS + 2``
    units in L1 and, as ``g² + h² <= 1`` (``max_p p²(1 + (1 − p)²) = 1``), by at most
    ``2**GRAD_BITS + √2`` in L2; times ``sensitivity`` (2 under replace-one).

    * ``"laplace"``: exact discrete Laplace on the integer sums at ``ε = budget``, on the grid
      that the public ``bound`` (:func:`sums_bound`) sets; a record changes the ``2K`` (2 with
      two classes or for regression) sums of one cell, and replacing one changes those of up
      to two cells, so on a grid coarser than a unit the integer sensitivity grows by
      ``touched − 1`` with ``touched = 2K`` (add/remove) or ``4K`` (replace-one,
      ``sensitivity`` 2; :func:`dpjax.mechanisms.laplace.integer_grid`), not by the cells'
      count;
    * ``"gaussian"``: the sums clipped to ``±GAUSSIAN_CELL_BOUND`` rows (exact in float32), the
      discrete Gaussian at ``ρ = budget`` with L2 sensitivity ``sensitivity·(1 + 2**−7)`` and
      the bound :func:`cell_bound`."""
    if noise == "gaussian":
        units = fixed_point.shift_clip(sums, 0, int(GAUSSIAN_CELL_BOUND) * GRAD_UNIT)
        l2 = round_sensitivity(sensitivity)
        return gaussian_mechanism(
            key, units.astype(jnp.float32) * (1.0 / GRAD_UNIT), l2, budget,
            bound=cell_bound(l2, budget), delta=delta,
            label=f"{sensitivity:g}·(1 + 2^-{GRAD_BITS - 1})")
    units = round_units(sensitivity, n_classes)
    label = {1: f"L1 sens. {units / GRAD_UNIT:.4g} (clipped residuals)",
             2: f"L1 sens. {sensitivity:g}·(1 + 2^-{GRAD_BITS - 1})"}.get(
        n_classes, f"L1 sens. {units / GRAD_UNIT:.4g} ({n_classes} classes)")
    shape = sums.hi.shape if isinstance(sums, WideSum) else sums.shape
    noisy, cost = laplace_mechanism(key, sums, units, budget, bound=bound, integer=True,
                                    event_ndim=len(shape),
                                    touched=math.ceil(sensitivity) * math.prod(shape[1:]),
                                    label=label)
    return noisy / GRAD_UNIT, cost


def cell_bound(l2_sensitivity: ArrayLike, rho: ArrayLike) -> jax.Array:
    """The public clip of a Gaussian round's cell sums: :data:`GAUSSIAN_CELL_BOUND`, or less
    where that would coarsen the grid beyond the noise (:func:`dpjax.mechanisms.gaussian.
    free_bound`, ``2**12`` noise standard deviations). A cell's moves are clipped to
    ``±STEP_CLIP`` anyway: only cells with sums beyond thousands of standard deviations lose
    accuracy, never privacy."""
    return jnp.minimum(GAUSSIAN_CELL_BOUND, free_bound(l2_sensitivity, rho))


def noise_scale(budget: jax.Array, sensitivity: float, noise: str, cells: int,
                n_classes: int = 2) -> jax.Array:
    """A round's noise scale per sum (in rows): the Laplace ``b = Δ/ε_r`` or the Gaussian's
    standard deviation ``σ = g·2**15`` on its grid step ``g``."""
    l1_or_l2 = round_sensitivity(sensitivity, n_classes)
    if noise == "gaussian":
        return NOISE_BITS_SCALE * gaussian_grid_step(l1_or_l2, budget, 2 * cells,
                                                     cell_bound(l1_or_l2, budget))
    return l1_or_l2 / budget
