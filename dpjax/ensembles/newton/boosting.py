"""Private Newton boosting: the default ``boosted`` learner (``docs/design.md``, "Learners").

A logistic-loss gradient-boosted additive model whose every release carries signal at
``ε ≥ 0.1`` on thousands of rows (issue 9; DP-EBM, Nori et al. 2021, and DP-GBDT work, e.g.
Maddock et al. 2022, for the ingredients):

1. **A private prior** (a share ``prior_share`` of the budget): the noisy class counts
   ``(ñ_0, ñ_1)`` (L1 sensitivity 1 under add/remove, 2 under replace-one) give the initial
   score ``F_0 = log(ñ_1/ñ_0)``, so a model whose rounds carry no signal predicts the released
   majority class; no tie goes to a fixed class.
2. **Rounds** ``r = 1..R``, each a partition of the records into cells read off public codes:

   * ``shape="cyclic"`` (DP-EBM's shape): round ``r`` takes the feature ``(r − 1) mod n`` of a
     data-independent random order and every code of it is a cell (the features cycled, no
     selection budget at all);
   * ``shape="random"``: round ``r`` is a complete depth-``d`` tree with data-independent random
     splits (:func:`dpjax.trees.grow.random_splits`) and its leaves are the cells (no budget on
     splits, all on leaves).
   * ``shape="auto"`` (the default): the cyclic shape, or the random one where the cyclic
     schedule cannot afford one pass over the features (:func:`auto_uses_random`, a function
     of the released size, ``ε`` and the feature count only).

   Each round releases the cells' gradient and hessian sums of the logistic loss at the current
   released score, ``(G_c, H_c) = Σ_{i∈c} (p_i − y_i, p_i(1 − p_i))``. A record sits in one cell
   and ``|p − y| + p(1 − p) <= 1``, so the round's whole release has L1 sensitivity 1 (2 under
   replace-one): the cells compose in parallel and the round costs one ``ε_r``. The sums are
   exact int32 fixed-point (units of ``2**−GRAD_BITS``; one record moves them by at most
   ``2**GRAD_BITS + 2`` units with the floors) and go through
   :func:`dpjax.mechanisms.laplace_mechanism` (exact discrete Laplace).
3. **Newton leaves with noise-aware shrinkage** (post-processing): each cell's score moves by
   ``w_c = −η·G̃_c / max(H̃_c + Λ, Λ)``, clipped to ``±STEP_CLIP``, with the ridge
   ``Λ = 1 + λ·√R·b`` where ``b = Δ/ε_r`` is the round's noise scale: a cell whose sums are
   mostly noise moves little, and the sum of ``R`` rounds' noisy moves stays below the prior's
   margin.

Budget: ``ε_0 = prior_share·ε`` for the prior and ``ε_r`` for each of the ``R`` active rounds.
With ``δ = 0`` rounds compose sequentially, ``ε_r = (1 − prior_share)·ε/R``. With ``δ > 0``
every release (pure ``ε_r``-DP, so ``ε_r²/2``-zCDP, Bun & Steinke 2016 Prop. 1.4) is also
composed in zCDP: when the zCDP split of ``ρ`` (the largest zCDP budget that converts to
``(ε, δ)``, Prop. 1.3) gives the rounds more than the sequential split at the schedule's maximum
number of rounds, every release takes its zCDP share (``ε_r = sqrt(2ρ_rounds/R)``); the ledger
states both views and keeps the smaller total (both hold).

``noise="gaussian"`` (needs ``δ > 0``) releases every round with the exact discrete Gaussian
(:func:`dpjax.mechanisms.gaussian_mechanism`) instead: a record's ``(g, h)`` has L2 norm at
most 1 as well, and each round is ``ρ_r``-zCDP with ``ρ_r = (1 − prior_share)·ρ/R`` of
``ρ(ε, δ)``. The prior stays a Laplace release (its counts are too large for the Gaussian's
grid) at ``ε_0 = sqrt(2·prior_share·ρ)``, which is ``prior_share·ρ``-zCDP. The ledger composes
the ``ρ``'s (the noise per round grows as ``√R`` rather than ``R``; at the same ``ρ`` its
standard deviation is the Laplace scale, ``1/√2`` of the Laplace noise's).

The number of active rounds ``R`` is a function of public quantities only (:func:`active_rounds`):
one pass over the features (in a data-independent random order), two at ``ε >= EPOCHS_EPSILON``,
and no more than keep the average cell at ``min_signal`` times the round's noise scale given the
released size ``ñ`` (the prior's counts): small data at small ``ε`` spends its budget on fewer,
less noisy rounds. The rounds' budget is split after the prior is released (adaptive basic
composition). Rounds past ``R`` (of the ``max_rounds`` the program is compiled for) release
nothing and cost nothing, so one compiled program serves a sweep over ``ε``.
"""

from __future__ import annotations

import collections
import functools
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.ensembles.newton.model import NewtonBoostedModel
from dpjax.learner import FitContext
from dpjax.mechanisms.gaussian import (
    NOISE_BITS_SCALE,
    free_bound,
    gaussian_grid_step,
    gaussian_mechanism,
)
from dpjax.mechanisms.laplace import laplace_mechanism
from dpjax.privacy import Cost, fixed_point
from dpjax.privacy.composition import noise_limited_rounds, prior_and_rounds
from dpjax.trees.dense import DenseTree
from dpjax.trees.grow import random_splits
from dpjax.trees.predict import leaf_index

if TYPE_CHECKING:
    from dpjax.ensembles.newton.config import Boosted

SHAPES = ("auto", "cyclic", "random")
NOISES = ("laplace", "gaussian")
GRAD_BITS = fixed_point.BITS
"""Gradient and hessian sums are int32 fixed point (:mod:`dpjax.privacy.fixed_point`) in units
of ``2**−GRAD_BITS``: exact (the sensitivity holds for the computed sums) up to
:data:`dpjax.privacy.fixed_point.MAX_ROWS` rows."""
GRAD_UNIT = fixed_point.UNIT
STEP_CLIP = 2.0
"""A round moves a cell's score (log-odds) by at most this much."""
EPOCHS_EPSILON = 4.0
"""From this ``ε`` on, the cyclic shape makes two passes over the features (one below)."""
GAUSSIAN_CELL_BOUND = 2.0**16
"""With Gaussian noise a cell's sums are clipped to ``±2**16`` (``2**24`` units, so that their
float32 conversion is exact) before the release: a cell's moves are clipped to ``±STEP_CLIP``
anyway, so only cells of over ``2**18`` rows can lose accuracy, never privacy."""
PRIOR_LABEL = "prior (class counts)"
ROUNDS_LABEL = "rounds (gradient/hessian sums)"


def active_rounds(epsilon: ArrayLike | None, n_features: int, shape: str, n_trees: int,
                  size: ArrayLike | None = None, cells: float = 1.0, *,
                  min_signal: ArrayLike, prior_share: float, noise: str,
                  delta: float) -> jax.Array:
    """The public schedule ``R``, a function of ``ε``, the feature count, the configuration
    and the *released* size only, never of the data itself.

    The most rounds: ``n_trees`` trees (random shape), or one pass over the ``n`` features,
    two from ``ε >= EPOCHS_EPSILON`` and without DP (cyclic shape, and ``"auto"`` before its
    choice: the maximum that decides the zCDP split of the prior's budget). Under DP with a released
    size ``ñ`` (the prior's noisy class counts), no more rounds than keep the average cell's
    row count ``ñ/cells`` at ``min_signal`` times the round's noise scale: the Laplace scale
    ``R/ε_rounds``, so ``R <= ñ·(1 − prior_share)·ε / (cells·min_signal)``; or with Gaussian
    noise the standard deviation ``sqrt(R/(2ρ_rounds))`` (``ρ_rounds = (1 − prior_share)·ρ``,
    ``ρ`` = :func:`~dpjax.privacy.composition.zcdp_budget` of ``(ε, δ)``), so ``R <=
    2ρ_rounds·(ñ/(cells·min_signal))²`` (at least 1;
    :func:`~dpjax.privacy.composition.noise_limited_rounds`). Small data at small ``ε`` thus
    spends its budget on fewer, less noisy rounds."""
    if shape == "random":
        most = jnp.float32(n_trees)
    elif epsilon is None:
        return jnp.float32(2 * n_features)
    else:
        most = jnp.where(jnp.asarray(epsilon) >= EPOCHS_EPSILON, 2.0 * n_features,
                         1.0 * n_features).astype(jnp.float32)
    if epsilon is None or size is None:
        return most
    signal = jnp.asarray(size, jnp.float32) / (cells * min_signal)
    affordable = noise_limited_rounds(epsilon, signal, 1.0 - prior_share, delta,
                                      gaussian=noise == "gaussian")
    return jnp.clip(affordable, 1.0, most)


def max_rounds(n_features: int, shape: str, n_trees: int) -> int:
    """Rounds the program is compiled for (the schedule's maximum)."""
    return {"random": n_trees, "cyclic": 2 * n_features}.get(shape, max(n_trees,
                                                                       2 * n_features))


def auto_uses_random(cyclic_rounds: jax.Array, n_features: int, shape: str) -> jax.Array:
    """Whether the fit boosts random-structure trees: ``shape="random"``, or ``"auto"`` where
    the cyclic schedule (:func:`active_rounds`, public) cannot afford one pass over the
    features (``R_cyclic < n``): its few rounds would see a few random features only, where a
    depth-``d`` random tree sees several at once (``experiments/results/private_boosting.md``,
    the ablation rows "boosted, cyclic" and "boosted, random trees d=4")."""
    if shape != "auto":
        return jnp.asarray(shape == "random")
    return cyclic_rounds < n_features


def gradient_stats(score: jax.Array, y: jax.Array, private: bool) -> jax.Array:
    """Per-record ``(g, h) = (p − y, p(1 − p))`` of the logistic loss at ``score``, ``[m, 2]``:
    int32 ``floor(·2**GRAD_BITS)`` under DP (exact sums), float32 otherwise."""
    p = jax.nn.sigmoid(score)
    stats = jnp.stack([p - y.astype(jnp.float32), p * (1.0 - p)], axis=-1)
    if private:
        return fixed_point.to_units(stats)
    return stats


def newton_moves(noisy: jax.Array, ridge: ArrayLike, learning_rate: ArrayLike) -> jax.Array:
    """``w_c = −η·G_c / max(H_c + Λ, Λ)`` clipped to ``±STEP_CLIP`` from cell sums ``[C, 2]``
    (post-processing of the released sums)."""
    gradient, hessian = noisy[..., 0], noisy[..., 1]
    ridge = jnp.asarray(ridge, jnp.float32)
    move = -learning_rate * gradient / jnp.maximum(hessian + ridge, ridge)
    return jnp.clip(move, -STEP_CLIP, STEP_CLIP)


def release_prior(key: jax.Array, y: jax.Array, epsilon: jax.Array | None,
                  sensitivity: float) -> tuple[jax.Array, jax.Array, Cost | None]:
    """``F_0 = log(ñ_1/ñ_0)`` and the released size ``ñ = ñ_0 + ñ_1`` from the (noisy) class
    counts, each floored at 1; the counts' L1 sensitivity is ``sensitivity`` (one record is in
    one class)."""
    positive = jnp.sum(y.astype(jnp.int32))
    counts = jnp.stack([y.shape[0] - positive, positive]).astype(jnp.int32)
    cost = None
    if epsilon is not None:
        counts, cost = laplace_mechanism(key, counts, sensitivity, epsilon, integer=True,
                                         label=f"L1 sens. {sensitivity:g}")
    counts = jnp.maximum(counts.astype(jnp.float32), 1.0)
    return jnp.log(counts[1] / counts[0]), counts.sum(), cost


def round_sensitivity(sensitivity: float) -> float:
    """A round's sensitivity in rows, L1 and L2 alike: ``sensitivity·(1 + 2**−(GRAD_BITS − 1))``
    (a record's ``(g, h)`` has both norms at most 1; the two fixed-point floors add at most 2
    units, :func:`release_sums`)."""
    return sensitivity * (1.0 + 2.0 / GRAD_UNIT)


def release_sums(key: jax.Array, sums: jax.Array, budget: jax.Array, sensitivity: float,
                 noise: str, delta: float) -> tuple[jax.Array, Cost]:
    """One round's cell sums ``[C, 2]`` (int32 units of ``2**−GRAD_BITS``) released as float
    ``(G̃, H̃)``. A record's floored ``(g, h)`` moves one cell by at most ``2**GRAD_BITS + 2``
    units in L1 and, as ``g² + h² <= 1`` (``max_p p²(1 + (1 − p)²) = 1``), by at most
    ``2**GRAD_BITS + √2`` in L2; times ``sensitivity`` (2 under replace-one).

    * ``"laplace"``: exact discrete Laplace on the integer sums at ``ε = budget``;
    * ``"gaussian"``: the sums clipped to ``±GAUSSIAN_CELL_BOUND`` rows (exact in float32), the
      discrete Gaussian at ``ρ = budget`` with L2 sensitivity ``sensitivity·(1 + 2**−7)`` and
      the bound :func:`cell_bound`."""
    if noise == "gaussian":
        units = jnp.clip(sums, -int(GAUSSIAN_CELL_BOUND) * GRAD_UNIT,
                         int(GAUSSIAN_CELL_BOUND) * GRAD_UNIT)
        l2 = round_sensitivity(sensitivity)
        return gaussian_mechanism(
            key, units.astype(jnp.float32) * (1.0 / GRAD_UNIT), l2, budget,
            bound=cell_bound(l2, budget), delta=delta,
            label=f"{sensitivity:g}·(1 + 2^-{GRAD_BITS - 1})")
    noisy, cost = laplace_mechanism(
        key, sums, sensitivity * (GRAD_UNIT + 2), budget, integer=True, event_ndim=2,
        label=f"L1 sens. {sensitivity:g}·(1 + 2^-{GRAD_BITS - 1})")
    return noisy / GRAD_UNIT, cost


def cell_bound(l2_sensitivity: ArrayLike, rho: ArrayLike) -> jax.Array:
    """The public clip of a Gaussian round's cell sums: :data:`GAUSSIAN_CELL_BOUND`, or less
    where that would coarsen the grid beyond the noise (:func:`dpjax.mechanisms.gaussian.
    free_bound`, ``2**12`` noise standard deviations). A cell's moves are clipped to
    ``±STEP_CLIP`` anyway: only cells with sums beyond thousands of standard deviations lose
    accuracy, never privacy."""
    return jnp.minimum(GAUSSIAN_CELL_BOUND, free_bound(l2_sensitivity, rho))


def noise_scale(budget: jax.Array, sensitivity: float, noise: str, cells: int) -> jax.Array:
    """A round's noise scale per sum (in rows): the Laplace ``b = Δ/ε_r`` or the Gaussian's
    standard deviation ``σ = g·2**15`` on its grid step ``g``."""
    l1_or_l2 = round_sensitivity(sensitivity)
    if noise == "gaussian":
        return NOISE_BITS_SCALE * gaussian_grid_step(l1_or_l2, budget, 2 * cells,
                                                     cell_bound(l1_or_l2, budget))
    return l1_or_l2 / budget


def fit(config: Boosted, key: jax.Array, codes: jax.Array, y: jax.Array,
        epsilon: jax.Array | None, context: FitContext, **traced: ArrayLike,
        ) -> tuple[NewtonBoostedModel, collections.OrderedDict[str, Cost]]:
    """Fit the private Newton-boosted model (module docstring) of ``config``
    (:class:`~dpjax.ensembles.newton.Boosted`: ``shape``, ``n_trees``, ``depth`` of the random
    shape, ``prior_share``, ``noise``).

    Args:
      config: the configuration; its traced fields ``learning_rate`` (``η``),
        ``regularisation`` (``λ`` of the ridge ``Λ``) and ``min_signal`` (the schedule's
        constant, :func:`active_rounds`) are taken from ``traced`` where given.
      key: PRNG key: the prior's, the rounds' (round ``r`` uses ``fold_in(k, r)``) and, for the
        random shape, the structures' stream unless ``context.structure_key`` is given
        (shared by a sweep's grid points).
      codes: uint8 ``[m, n]``; y: int ``[m]`` in ``{0, 1}``.
      epsilon: total budget (traced), or ``None`` without privacy (exact sums, ``Λ = 1``).
      context: the codes per feature (cells of the cyclic shape), the multiplier of every
        release (``sensitivity``: 1 add/remove, 2 replace-one) and the ``δ`` asked for (``> 0``
        enables the zCDP split; ``noise="gaussian"`` needs it).

    Returns:
      ``(model, costs)``: ``"prior (class counts)"`` (scalar) and ``"rounds (gradient/hessian
      sums)"`` (``[max_rounds]``, zero past the active rounds); empty without DP.
    """
    traced = config.resolve_traced(traced)
    learning_rate, regularisation = traced["learning_rate"], traced["regularisation"]
    min_signal = traced["min_signal"]
    shape, n_trees, depth, noise = config.shape, config.n_trees, config.depth, config.noise
    prior_share, sensitivity, delta = config.prior_share, context.sensitivity, context.delta
    n_codes_per_feature, structure_key = context.n_codes_per_feature, context.structure_key
    private = epsilon is not None
    n_features = codes.shape[1]
    n_codes = int(max(int(c) for c in n_codes_per_feature))
    has_cyclic, has_random = shape in ("cyclic", "auto"), shape in ("random", "auto")
    total = max_rounds(n_features, shape, n_trees)
    most = active_rounds(epsilon, n_features, shape, n_trees, min_signal=min_signal,
                         prior_share=prior_share, noise=noise, delta=delta)
    k_prior, k_rounds, k_structure = jax.random.split(key, 3)
    structure_key = k_structure if structure_key is None else structure_key
    costs: collections.OrderedDict[str, Cost] = collections.OrderedDict()
    n_cells = max(n_codes if has_cyclic else 0, 2**depth if has_random else 0)
    if private:
        prior_budget = prior_and_rounds(epsilon, most, prior_share=prior_share, delta=delta,
                                        gaussian=noise == "gaussian")
        prior, size, costs[PRIOR_LABEL] = release_prior(k_prior, y, prior_budget["prior"],
                                                        sensitivity)
        schedule = functools.partial(active_rounds, epsilon, n_features, n_trees=n_trees,
                                     size=size, min_signal=min_signal,
                                     prior_share=prior_share, noise=noise, delta=delta)
        cyclic_rounds = schedule(shape="cyclic", cells=float(np.mean(n_codes_per_feature)))
        random_rounds = schedule(shape="random", cells=2.0**depth)
        use_random = auto_uses_random(cyclic_rounds, n_features, shape)
        rounds = jnp.where(use_random, random_rounds, cyclic_rounds)
        budget = prior_and_rounds(epsilon, rounds, prior_share=prior_share, delta=delta,
                                  decide_rounds=most, gaussian=noise == "gaussian")
        scale = noise_scale(budget["round"], sensitivity, noise, n_cells)
        ridge = 1.0 + jnp.asarray(regularisation, jnp.float32) * jnp.sqrt(rounds) * scale
    else:   # without DP "auto" is cyclic: active_rounds gave its two passes
        prior, _, _ = release_prior(k_prior, y, None, sensitivity)
        use_random = jnp.asarray(shape == "random")
        rounds, ridge = most, jnp.float32(1.0)
    # data-independent structures: random trees, and a random order of the features (round
    # r of the cyclic shape visits feature order[r mod n])
    k_trees, k_order = jax.random.split(structure_key)
    feature, threshold = jax.vmap(random_splits, in_axes=(0, None, None))(
        jax.random.split(k_trees, n_trees if has_random else 1), depth, n_codes_per_feature)
    order = jax.random.permutation(k_order, n_features)

    columns = codes.T if has_cyclic else None   # [n, m]: a cyclic round reads one row

    def cyclic_cell(r: jax.Array) -> jax.Array:
        return columns[order[r % n_features]].astype(jnp.int32)

    def random_cell(r: jax.Array) -> jax.Array:
        tree = jnp.minimum(r, feature.shape[0] - 1)
        return leaf_index(feature[tree], threshold[tree], codes)

    def round_stats(score: jax.Array, r: jax.Array) -> tuple[jax.Array, jax.Array]:
        if has_random and has_cyclic:
            cell = jax.lax.cond(use_random, random_cell, cyclic_cell, r)
        else:
            cell = random_cell(r) if has_random else cyclic_cell(r)
        return cell, jax.ops.segment_sum(gradient_stats(score, y, private), cell, n_cells)

    def dead_round(score: jax.Array, r: jax.Array) -> tuple[jax.Array, jax.Array]:
        return jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype),
                            jax.eval_shape(round_stats, score, r))

    def round_r(score: jax.Array, r: jax.Array):
        live = r < rounds
        # past the public schedule a round releases nothing and moves nothing: skip its pass
        cell, sums = jax.lax.cond(live, round_stats, dead_round, score, r)
        if private:
            sums, cost = release_sums(jax.random.fold_in(k_rounds, r), sums, budget["round"],
                                      sensitivity, noise, delta)
            cost = cost.gated(live)
        else:
            cost = None
        move = jnp.where(live, newton_moves(sums, ridge, learning_rate), 0.0)
        return score + move[cell], (move, cost)

    _, (moves, round_costs) = jax.lax.scan(round_r, jnp.full(codes.shape[0], prior),
                                           jnp.arange(total))
    if private:
        costs[ROUNDS_LABEL] = round_costs
    table = jnp.zeros((n_features, n_codes), jnp.float32)
    if has_cyclic:
        table = jnp.where(use_random, table, jax.ops.segment_sum(
            moves[:, :n_codes], order[jnp.arange(total) % n_features], n_features))
    if has_random:
        leaf = jnp.where(use_random, moves[:n_trees, :2**depth], 0.0)
        trees = DenseTree(feature=feature, threshold=threshold, leaf=leaf)
    else:
        trees = DenseTree(feature=jnp.zeros((1, 1), jnp.int32),
                          threshold=jnp.zeros((1, 1), jnp.int32), leaf=jnp.zeros((1, 2)))
    return NewtonBoostedModel(prior=prior, table=table, trees=trees), costs


__all__ = ["NOISES", "SHAPES", "active_rounds", "auto_uses_random", "cell_bound", "fit",
           "gradient_stats", "max_rounds", "newton_moves", "noise_scale", "release_prior",
           "release_sums", "round_sensitivity"]
