"""One tree of the Mα boosted DP trees (``shared/specs/boosted-dp-trees-malpha.md`` §2, §4.2–§4.3).

Every internal node scores all candidate splits with the weighted Bayes risk ``crit_α`` (§2.2,
paper (3), (6), (118)) of its two children. Without DP it takes the ``argmin`` (ties to the
lowest (feature, threshold) index) and pure, empty or unsplittable nodes are frozen (§2.3). With
DP every node at depth ``k`` draws its split with an exponential-mechanism-family selection
(permute-and-flip, :func:`dpjax.mechanisms.permute_and_flip`; §4.3, paper (16), (172)) on
utility ``−crit_α``, sensitivity ``Δ^(α)(ñ)`` (doubled under replace-one, §4.1) and budget
``ε_k = ε_splits / (d·2^k)`` (paper (18)); there is no purity test and the tree is complete
(§2.3). ``ñ`` is a public sample size (the row count ``m`` is private under add/remove): the
criterion's class sums are clamped to it, so ``Δ^(α)(ñ)`` holds for any ``m``.

The α of the criterion (and of ``Δ^(α)(m)``) is either a fixed traced scalar in ``[0, 1]`` (the
fixed strategies of §5.2) or, when that scalar is :data:`OBJECTIVE_CALIBRATION` (``-1``), the
objective-calibrated schedule ``α_ℓ = ε_0/1(h_ℓ) / ε_0/1(h_1)`` of §5.1 (paper (17)): ``"exact"``
recomputes it before every split in breadth-first order (§5.2, a scan over a level's nodes);
``"private"`` calibrates it once per level from Laplace-noised weighted errors (§5.3). Because the
strategy is a traced value, one ``vmap`` sweeps ``α ∈ {0.1, 1, O.C}``.
"""

from __future__ import annotations

import collections
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.losses.proper import clamped_split_risk, criterion_sensitivity, split_risk
from dpjax.mechanisms.accounting import Cost
from dpjax.mechanisms.exponential import permute_and_flip
from dpjax.mechanisms.laplace import laplace_mechanism
from dpjax.trees.dense import level_slice
from dpjax.trees.grow import grow_levelwise
from dpjax.trees.histogram import leaf_stats

OBJECTIVE_CALIBRATION = -1.0
"""Traced ``alpha`` value that selects objective calibration (O.C, spec §5)."""
OC_ALPHA = ("private", "exact")
OC_FLOOR = 1e-12


class GrownTree(NamedTuple):
    """Structure of one grown tree and the class statistics of its leaves.

    Attributes:
      feature: int32 ``[2**d - 1]`` split feature of each internal node (heap order).
      threshold: int32 ``[2**d - 1]`` split code (right iff ``code > threshold``); a frozen
        node (non-DP) has its feature's last code, so every example goes left.
      example_leaf: int32 ``[m]`` leaf ``0..2**d - 1`` of each training example.
      leaf_stats: ``[2**d, 2]`` weighted (negative, positive) class sums of each leaf (int32
        fixed-point, units of ``2**−WEIGHT_BITS``, for a private tree).
      alpha: float32 ``[2**d - 1]`` the α each internal node was split with.
    """

    feature: jax.Array
    threshold: jax.Array
    example_leaf: jax.Array
    leaf_stats: jax.Array
    alpha: jax.Array


def split_level_epsilons(epsilon_splits: ArrayLike, depth: int) -> jax.Array:
    """Per-node split budget of each level, ``[d]``: ``ε_k = ε_splits / (d·2^k)`` (spec §4.2,
    paper (18) with ``ε_splits = β_tree·ε/T``). The ``2^k`` nodes of level ``k`` spend
    ``ε_splits/d`` together, so the tree spends ``Σ_k 2^k·ε_k = ε_splits``."""
    levels = jnp.arange(depth, dtype=jnp.float32)
    return jnp.asarray(epsilon_splits, jnp.float32) / (depth * 2.0**levels)


WEIGHT_BITS = 8
"""Under DP the boosting weights are fixed-point integers in units of ``2**−WEIGHT_BITS``: every
sum a mechanism releases (leaf class sums, O.C errors) is then computed exactly in int32 (float32
sums round differently on neighbouring datasets, by more than the sensitivity allows on large
data), up to ``2**(31 − WEIGHT_BITS)`` rows."""
WEIGHT_UNIT = 2.0**WEIGHT_BITS
MAX_FIXED_POINT_ROWS = 2**(31 - WEIGHT_BITS) - 1


def class_stats(weights: ArrayLike, y: ArrayLike, fixed_point: bool = False) -> jax.Array:
    """Per-example class statistics ``[m, 2] = (w·(1 − y), w·y)`` for labels ``y ∈ {0, 1}``,
    with the weights clipped to ``[0, 1]``, the range the sensitivity ``Δ^(α)(m)`` assumes
    (spec §1.7). With ``fixed_point`` they are int32 ``floor(w·2**WEIGHT_BITS)`` (in units of
    ``2**−WEIGHT_BITS``), so their sums are exact."""
    w = jnp.clip(jnp.asarray(weights, jnp.float32), 0.0, 1.0)
    positive = jnp.asarray(y).astype(jnp.int32)
    if fixed_point:
        w = jnp.floor(w * WEIGHT_UNIT).astype(jnp.int32)
    return jnp.stack([w * (1 - positive), w * positive], axis=-1)


def resolve_oc_alpha(oc_alpha: str | None, private: bool) -> str:
    """The O.C mode in force: ``oc_alpha`` if given, else ``"private"`` under DP and
    ``"exact"`` (the paper's) without."""
    if oc_alpha is None:
        return "private" if private else "exact"
    if oc_alpha not in OC_ALPHA:
        raise ValueError(f"oc_alpha must be one of {OC_ALPHA} or None, got {oc_alpha!r}")
    return oc_alpha


def weighted_error(node_stats: jax.Array) -> jax.Array:
    """``Σ_λ min{w^1(λ), w^{-1}(λ)}`` over nodes ``[..., 2]``: the weighted training error of
    a tree whose leaves predict their weighted majority (spec §5.1, ``w(S)·ε_0/1``)."""
    return node_stats.min(-1).sum(-1)


def calibrated_alpha(error: ArrayLike, root_error: ArrayLike) -> jax.Array:
    """``α = clip(ε_0/1(h) / ε_0/1(h_1), 0, 1)`` (spec §5.1, paper (17)); ``1`` when the root
    error is not positive (pure root, or a noisy estimate at or below 0, §5.1/§5.3)."""
    error, root_error = jnp.asarray(error), jnp.asarray(root_error)
    positive = root_error > OC_FLOOR
    return jnp.where(positive, jnp.clip(error / jnp.where(positive, root_error, 1.0), 0, 1), 1.0)


def grow_malpha_tree(
    key: jax.Array,
    codes: jax.Array,
    weights: ArrayLike,
    y: ArrayLike,
    depth: int,
    n_codes_per_feature: np.ndarray,
    alpha: ArrayLike,
    epsilon_splits: ArrayLike | None,
    *,
    size: ArrayLike | None = None,
    oc_alpha: str | None = None,
    epsilon_oc: ArrayLike | None = None,
    sensitivity_multiplier: float = 1.0,
) -> tuple[GrownTree, collections.OrderedDict[str, Cost]]:
    """Grow one Mα tree greedily, level by level (spec §2.1–§2.3, §4.2–§4.3, §5).

    Args:
      key: PRNG key (split into the splits' and the O.C estimates' streams).
      codes: uint8 ``[m, n]`` public-grid codes (§2.1).
      weights: ``[m]`` boosting weights in ``[0, 1]`` (clipped).
      y: int ``[m]`` labels in ``{0, 1}``.
      depth: static depth ``d``.
      n_codes_per_feature: concrete int ``[n]`` codes of each feature (thresholds past a
        feature's codes are never candidates).
      alpha: traced scalar: a fixed ``α ∈ [0, 1]``, or :data:`OBJECTIVE_CALIBRATION` for O.C.
      epsilon_splits: traced split budget of the tree spent by the selections,
        ``(1 − β_oc)·β_tree·ε/T`` (§4.2, §5.3), or ``None`` for the non-private tree (argmin,
        purity rule).
      size: under DP, the *public* sample size ``ñ`` (a declared size, or a released noisy
        count): the criterion's class sums are clamped to it and its sensitivity is
        ``Δ^(α)(ñ)`` (:func:`dpjax.losses.clamped_split_risk`), and it bounds the O.C
        releases. Required under DP; ignored without.
      oc_alpha: how O.C computes ``α``: ``"private"`` (per level from the errors of the level's
        nodes, §5.3) or ``"exact"`` (per split, breadth-first, §5.2; under DP it reads the data
        outside any mechanism: the caller must ledger it as not private); ``None``: private
        under DP, exact without.
      epsilon_oc: with ``"private"`` under DP, the budget of each of the ``d`` releases
        ``Ẽ_k = E_k + noise`` (``k = 0..d−1``, none when ``d = 1``); ``None``: O.C uses
        noise-free level errors (non-private trees).
      sensitivity_multiplier: 1 for add/remove-one, 2 for replace-one neighbours (§4.1).

    Returns:
      ``(tree, costs)``: :class:`GrownTree` with the splits, each example's leaf, the leaves'
      class sums and each internal node's α; and the privacy cost of every release,
      ``"splits at depth k"`` (one per node, ``[2**k]``) and ``"O.C level errors"`` (``[d]``
      when released), empty without DP.
    """
    private = epsilon_splits is not None
    if private and size is None:
        raise ValueError("a private Mα tree needs the public sample size (size=...)")
    if private and codes.shape[0] > MAX_FIXED_POINT_ROWS:
        raise ValueError(f"a private Mα tree takes at most {MAX_FIXED_POINT_ROWS} rows (its "
                         "sums are exact int32 fixed-point); subsample the data")
    oc_alpha = resolve_oc_alpha(oc_alpha, private)
    stats = class_stats(weights, y, fixed_point=private)
    alpha = jnp.asarray(alpha, jnp.float32)
    oc = alpha < 0
    size = jnp.asarray(size, jnp.float32) if private else None
    level_epsilon = split_level_epsilons(epsilon_splits, depth) if private else None
    k_splits, k_oc = jax.random.split(key)
    oc_noise_keys = jax.random.split(k_oc, depth)
    node_alpha = jnp.ones(2**depth - 1, jnp.float32)
    level_alpha: list[jax.Array] = []   # O.C "private": α_0 .. α_k so far
    root_error: list[jax.Array] = []    # ε_0/1(h_1) (noisy for "private" under DP)
    costs: collections.OrderedDict[str, Cost] = collections.OrderedDict()
    oc_costs: list[Cost] = []
    relation = f"{sensitivity_multiplier:g}·" if sensitivity_multiplier != 1 else ""

    def select(key: jax.Array, utility: jax.Array, a: jax.Array,
               level: int) -> tuple[jax.Array, Cost | None]:
        if not private:
            return jnp.argmax(utility, axis=-1).astype(jnp.int32), None
        sensitivity = sensitivity_multiplier * criterion_sensitivity(size, a)
        return permute_and_flip(key, utility, sensitivity, level_epsilon[level],
                                label=f"sens. {relation}(Δ^(α)(ñ) + 2^-18·ñ)")

    def utility(left: jax.Array, right: jax.Array, candidates: jax.Array,
                a: jax.Array) -> jax.Array:
        a = a[..., None, None]
        if private:   # fixed-point sums back to weight units
            risk = clamped_split_risk(left / WEIGHT_UNIT, right / WEIGHT_UNIT, a, size)
        else:
            risk = split_risk(left, right, a)
        return jnp.where(candidates, -risk, -jnp.inf).reshape(*candidates.shape[:-2], -1)

    def release_error(level: int, error: jax.Array) -> jax.Array:
        """``E_k`` + exact noise: an int32 fixed-point sum, sensitivity one weight (§5.3)."""
        noisy, cost = laplace_mechanism(oc_noise_keys[level], error,
                                        sensitivity_multiplier * WEIGHT_UNIT, epsilon_oc,
                                        bound=size * WEIGHT_UNIT, integer=True,
                                        label=f"sens. {sensitivity_multiplier:g}")
        oc_costs.append(cost.gated(oc))   # a fixed α never reads the estimate: no release
        return noisy

    def choose(level: int, key: jax.Array, left: jax.Array, right: jax.Array,
               candidates: jax.Array) -> jax.Array:
        nonlocal node_alpha
        nodes = left[:, 0, -1, :]
        if level == 0:
            root_error.append(weighted_error(nodes))
        if oc_alpha == "exact":
            choice, a, cost = _choose_sequential(
                key, left, right, candidates, alpha, root_error[0],
                lambda k, u, a: select(k, u, a, level), utility)
        else:
            if level == 0:
                calibrated = jnp.float32(1.0)
                if private and epsilon_oc is not None and depth > 1:
                    root_error[0] = release_error(0, root_error[0])
            else:
                error = weighted_error(nodes)
                if private and epsilon_oc is not None:
                    error = release_error(level, error)
                calibrated = jnp.minimum(calibrated_alpha(error, root_error[0]),
                                         level_alpha[-1])
            level_alpha.append(calibrated)
            a = jnp.broadcast_to(jnp.where(oc, calibrated, alpha), nodes.shape[:1])
            choice, cost = select(key, utility(left, right, candidates, a), a, level)
        if cost is not None:
            costs[f"splits at depth {level}"] = cost
        node_alpha = node_alpha.at[level_slice(level)].set(a)
        return choice

    feature, threshold, leaf = grow_levelwise(
        k_splits, codes, stats, depth, n_codes_per_feature, choose=choose,
        stop_pure=not private)
    if oc_costs:
        costs["O.C level errors"] = jax.tree.map(lambda *c: jnp.stack(c), *oc_costs)
    tree = GrownTree(feature, threshold, leaf, leaf_stats(leaf, stats, 2**depth), node_alpha)
    return tree, costs


def _choose_sequential(key, left, right, candidates, alpha, root_error, select, utility):
    """Exact O.C (spec §5.1–§5.2): the nodes of a level are split left to right, each with
    ``α_ℓ`` from the weighted error of the tree as it stands before that split (a ``lax.scan``
    carrying the error). Fixed ``α`` (``alpha >= 0``) is used as is. Returns the choices, the
    α of each node and the selections' costs (``None`` without DP)."""
    nodes = left[:, 0, -1, :]

    def split_one(error, node):
        node_left, node_right, node_candidates, node_stats, node_key = node
        a = jnp.where(alpha < 0, calibrated_alpha(error, root_error), alpha)
        choice, cost = select(node_key, utility(node_left, node_right, node_candidates, a), a)
        chosen = (node_left.reshape(-1, 2)[choice], node_right.reshape(-1, 2)[choice])
        error = error - node_stats.min() + chosen[0].min() + chosen[1].min()
        return error, (choice, a, cost)

    keys = jax.random.split(key, nodes.shape[0])
    _, (choice, a, cost) = jax.lax.scan(split_one, weighted_error(nodes),
                                        (left, right, candidates, nodes, keys))
    return choice, a, cost
