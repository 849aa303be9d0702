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

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.mechanisms.accounting import Cost
from dpjax.mechanisms.budgets import zcdp_budget
from dpjax.mechanisms.gaussian import (
    NOISE_BITS_SCALE,
    free_bound,
    gaussian_grid_step,
    gaussian_mechanism,
)
from dpjax.mechanisms.laplace import laplace_mechanism
from dpjax.mechanisms.rounding import round_down
from dpjax.trees.dense import DenseTree
from dpjax.trees.grow import random_splits
from dpjax.trees.predict import apply_trees, leaf_index

SHAPES = ("auto", "cyclic", "random")
NOISES = ("laplace", "gaussian")
GRAD_BITS = 8
"""Gradient and hessian sums are int32 fixed point in units of ``2**−GRAD_BITS``: exact (the
sensitivity holds for the computed sums) up to ``MAX_ROWS`` rows."""
GRAD_UNIT = 2**GRAD_BITS
MAX_ROWS = 2**(31 - GRAD_BITS) - 1
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


@chex.dataclass(frozen=True)
class NewtonBoostedModel:
    """A fitted private Newton-boosted model: ``F(x) = prior + Σ_f table[f, x_f] + Σ_t
    trees.leaf[t, leaf_t(x)]``; ``P(y = 1 | x) = sigmoid(F(x))``.

    Attributes:
      prior: float32 scalar, the released log-odds of the class balance (``F_0``).
      table: float32 ``[n, K]`` the cyclic rounds' moves summed per (feature, code) (zeros for
        the random shape).
      trees: :class:`DenseTree` batch ``[T]`` of the random shape's trees (leaf values the
        moves); a single all-zero tree for the cyclic shape.
    """

    prior: jax.Array
    table: jax.Array
    trees: DenseTree


def active_rounds(epsilon: ArrayLike | None, n_features: int, shape: str, n_trees: int,
                  size: ArrayLike | None = None, cells: float = 1.0,
                  min_signal: ArrayLike = 4.0, prior_share: float = 0.0,
                  noise: str = "laplace", delta: float = 0.0) -> jax.Array:
    """The public schedule ``R``, a function of ``ε``, the feature count, the configuration
    and the *released* size only, never of the data itself.

    The most rounds: ``n_trees`` trees (random shape), or one pass over the ``n`` features,
    two from ``ε >= EPOCHS_EPSILON`` and without DP (cyclic shape, and ``"auto"`` before its
    choice: the maximum that decides the zCDP split of the prior's budget). Under DP with a released
    size ``ñ`` (the prior's noisy class counts), no more rounds than keep the average cell's
    row count ``ñ/cells`` at ``min_signal`` times the round's noise scale: the Laplace scale
    ``R/ε_rounds``, so ``R <= ñ·(1 − prior_share)·ε / (cells·min_signal)``; or with Gaussian
    noise the standard deviation ``sqrt(R/(2ρ_rounds))`` (``ρ_rounds = (1 − prior_share)·ρ``,
    ``ρ`` = :func:`zcdp_budget` of ``(ε, δ)``), so ``R <= 2ρ_rounds·(ñ/(cells·min_signal))²``
    (at least 1). Small data at small ``ε`` thus spends its budget on fewer, less noisy
    rounds."""
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
    if noise == "gaussian":
        affordable = jnp.floor(2.0 * (1.0 - prior_share) * zcdp_budget(epsilon, delta)
                               * signal**2)
    else:
        affordable = jnp.floor(signal * (1.0 - prior_share) * jnp.asarray(epsilon, jnp.float32))
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


def round_budgets(epsilon: ArrayLike, rounds: ArrayLike, *, prior_share: float,
                  delta: float, zcdp_rounds: ArrayLike | None = None,
                  noise: str = "laplace") -> dict[str, jax.Array]:
    """``prior`` and per-round ``round`` budgets, each rounded down.

    Laplace noise (``ε`` per release): the sequential split of ``ε``, or with ``δ > 0`` the
    zCDP split of ``ρ(ε, δ)`` (same shares) when its rounds get more. Either way basic
    composition or the zCDP conversion of the releases stays within ``(ε, δ)``.
    ``zcdp_rounds`` (default ``rounds``) decides between the two: the prior is released before
    the number of rounds is known, so the decision uses their public maximum.

    Gaussian rounds (``δ > 0``): of ``ρ`` = :func:`zcdp_budget` ``(ε, δ)``, the prior (a
    Laplace release: its counts are too large for the Gaussian's grid) takes ``ε_0 =
    sqrt(2·prior_share·ρ)`` (``ε_0²/2``-zCDP) and each round ``ρ_r = (1 − prior_share)·ρ/R``."""
    epsilon = jnp.asarray(epsilon, jnp.float32)
    rounds = jnp.asarray(rounds, jnp.float32)
    if noise == "gaussian":
        rho = zcdp_budget(epsilon, delta)
        return {"prior": round_down(jnp.sqrt(2.0 * prior_share * rho)),
                "round": round_down((1.0 - prior_share) * rho / rounds)}
    decide = rounds if zcdp_rounds is None else jnp.asarray(zcdp_rounds, jnp.float32)

    def sequential(share: float, count: jax.Array) -> jax.Array:
        return epsilon * share / count

    prior, per_round = sequential(prior_share, 1.0), sequential(1.0 - prior_share, rounds)
    if delta > 0.0:     # one split or the other for every release (a mix would fit neither)
        rho = zcdp_budget(epsilon, delta)

        def zcdp(share: float, count: jax.Array) -> jax.Array:
            return jnp.sqrt(2.0 * share * rho / count)

        use_zcdp = zcdp(1.0 - prior_share, decide) > sequential(1.0 - prior_share, decide)
        prior = jnp.where(use_zcdp, zcdp(prior_share, 1.0), prior)
        per_round = jnp.where(use_zcdp, zcdp(1.0 - prior_share, rounds), per_round)
    return {"prior": round_down(prior), "round": round_down(per_round)}


def gradient_stats(score: jax.Array, y: jax.Array, private: bool) -> jax.Array:
    """Per-record ``(g, h) = (p − y, p(1 − p))`` of the logistic loss at ``score``, ``[m, 2]``:
    int32 ``floor(·2**GRAD_BITS)`` under DP (exact sums), float32 otherwise."""
    p = jax.nn.sigmoid(score)
    stats = jnp.stack([p - y.astype(jnp.float32), p * (1.0 - p)], axis=-1)
    if private:
        return jnp.floor(stats * GRAD_UNIT).astype(jnp.int32)
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


def fit_newton_boosted(
    key: jax.Array,
    codes: jax.Array,
    y: jax.Array,
    epsilon: jax.Array | None,
    *,
    learning_rate: ArrayLike = 1.0,
    regularisation: ArrayLike = 1.0,
    min_signal: ArrayLike = 4.0,
    n_codes_per_feature: np.ndarray,
    shape: str = "auto",
    n_trees: int = 20,
    depth: int = 4,
    prior_share: float = 0.1,
    sensitivity: float = 1.0,
    delta: float = 0.0,
    noise: str = "laplace",
    structure_key: jax.Array | None = None,
) -> tuple[NewtonBoostedModel, collections.OrderedDict[str, Cost]]:
    """Fit the private Newton-boosted model (module docstring).

    Args:
      key: PRNG key: the prior's, the rounds' (round ``r`` uses ``fold_in(k, r)``) and, for the
        random shape, the structures' stream unless ``structure_key`` is given.
      codes: uint8 ``[m, n]``; y: int ``[m]`` in ``{0, 1}``.
      epsilon: total budget (traced), or ``None`` without privacy (exact sums, ``Λ = 1``).
      learning_rate: traced ``η``; regularisation: traced ``λ`` of the ridge ``Λ``;
        min_signal: traced constant of the schedule (:func:`active_rounds`).
      n_codes_per_feature: concrete codes of each feature (cells of the cyclic shape).
      shape: ``"auto"``, ``"cyclic"`` or ``"random"``; n_trees, depth: the random shape's ``T``
        and ``d``.
      prior_share: share of ``ε`` for the prior.
      sensitivity: 1 (add/remove) or 2 (replace-one), the multiplier of every release.
      delta: the ``δ`` asked for; ``> 0`` enables the zCDP split.
      noise: ``"laplace"`` (exact discrete Laplace, pure ``ε`` per release) or ``"gaussian"``
        (exact discrete Gaussian, ``ρ`` per release, composed in zCDP; needs ``δ > 0``).
      structure_key: key of the random structures (shared by a sweep's grid points).

    Returns:
      ``(model, costs)``: ``"prior (class counts)"`` (scalar) and ``"rounds (gradient/hessian
      sums)"`` (``[max_rounds]``, zero past the active rounds); empty without DP.
    """
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, got {shape!r}")
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {NOISES}, got {noise!r}")
    private = epsilon is not None
    if private and noise == "gaussian" and delta <= 0.0:
        raise ValueError("noise='gaussian' composes in zCDP and needs delta > 0 (e.g. "
                         "delta=1e-6); with delta=0 use noise='laplace'")
    if private and codes.shape[0] > MAX_ROWS:
        raise ValueError(f"private boosting takes at most {MAX_ROWS} rows (its sums are exact "
                         "int32 fixed point); subsample the data")
    n_features = codes.shape[1]
    n_codes = int(max(int(c) for c in n_codes_per_feature))
    has_cyclic, has_random = shape in ("cyclic", "auto"), shape in ("random", "auto")
    total = max_rounds(n_features, shape, n_trees)
    most = active_rounds(epsilon, n_features, shape, n_trees)
    k_prior, k_rounds, k_structure = jax.random.split(key, 3)
    structure_key = k_structure if structure_key is None else structure_key
    costs: collections.OrderedDict[str, Cost] = collections.OrderedDict()
    n_cells = max(n_codes if has_cyclic else 0, 2**depth if has_random else 0)
    if private:
        prior_budget = round_budgets(epsilon, most, prior_share=prior_share, delta=delta,
                                     noise=noise)
        prior, size, costs[PRIOR_LABEL] = release_prior(k_prior, y, prior_budget["prior"],
                                                        sensitivity)
        schedule = functools.partial(active_rounds, epsilon, n_features, n_trees=n_trees,
                                     size=size, min_signal=min_signal,
                                     prior_share=prior_share, noise=noise, delta=delta)
        cyclic_rounds = schedule(shape="cyclic", cells=float(np.mean(n_codes_per_feature)))
        random_rounds = schedule(shape="random", cells=2.0**depth)
        use_random = auto_uses_random(cyclic_rounds, n_features, shape)
        rounds = jnp.where(use_random, random_rounds, cyclic_rounds)
        budget = round_budgets(epsilon, rounds, prior_share=prior_share, delta=delta,
                               zcdp_rounds=most, noise=noise)
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


def newton_decision(model: NewtonBoostedModel, codes: jax.Array) -> jax.Array:
    """The score ``F(x)`` (log-odds of class 1) of every row, ``[m]``."""
    n = codes.shape[1]
    additive = model.table[jnp.arange(n)[None, :], codes.astype(jnp.int32)].sum(-1)
    return model.prior + additive + apply_trees(model.trees, codes).sum(0)


def newton_proba(model: NewtonBoostedModel, codes: jax.Array) -> jax.Array:
    """Class scores ``[m, 2]``, ``P(y = 1) = sigmoid(F(x))``."""
    positive = jax.nn.sigmoid(newton_decision(model, codes))
    return jnp.stack([1.0 - positive, positive], axis=-1)


def newton_predict(model: NewtonBoostedModel, codes: jax.Array) -> jax.Array:
    """``F(x) > 0`` as class indices; a score of exactly 0 takes the released prior's class."""
    score = newton_decision(model, codes)
    return jnp.where(score != 0, score > 0, model.prior > 0).astype(jnp.int32)


__all__ = ["NOISES", "SHAPES", "NewtonBoostedModel", "active_rounds", "auto_uses_random",
           "cell_bound", "fit_newton_boosted", "gradient_stats", "max_rounds", "newton_decision",
           "newton_moves", "newton_predict", "newton_proba", "noise_scale", "release_prior",
           "release_sums", "round_budgets", "round_sensitivity", "zcdp_budget"]
