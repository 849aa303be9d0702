"""One tree of the Mα boosted DP trees (``shared/specs/boosted-dp-trees-malpha.md`` §2, §4.2–§4.3).

Every internal node scores all candidate splits with the weighted Bayes risk ``crit_α`` (§2.2,
paper (3), (6), (118)) of its two children. Without DP it takes the ``argmin`` (ties to the
lowest (feature, threshold) index) and pure, empty or unsplittable nodes are frozen (§2.3). With
DP every node at depth ``k`` draws its split with the exponential mechanism (§4.3, paper (16),
(172)) on utility ``−crit_α``, sensitivity ``Δ^(α)(m)`` (doubled under replace-one, §4.1) and
budget ``ε_k = ε_splits / (d·2^k)`` (paper (18)); there is no purity test and the tree is
complete (§2.3).

The α of the criterion (and of ``Δ^(α)(m)``) is either a fixed traced scalar in ``[0, 1]`` (the
fixed strategies of §5.2) or, when that scalar is :data:`OBJECTIVE_CALIBRATION` (``-1``), the
objective-calibrated schedule ``α_ℓ = ε_0/1(h_ℓ) / ε_0/1(h_1)`` of §5.1 (paper (17)): ``"exact"``
recomputes it before every split in breadth-first order (§5.2, a scan over a level's nodes);
``"private"`` calibrates it once per level from Laplace-noised weighted errors (§5.3). Because the
strategy is a traced value, one ``vmap`` sweeps ``α ∈ {0.1, 1, O.C}``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.losses.proper import split_risk, split_sensitivity
from dpjax.mechanisms.exponential import exponential_mechanism
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
      leaf_stats: ``[2**d, 2]`` weighted (negative, positive) class sums of each leaf.
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


def class_stats(weights: ArrayLike, y: ArrayLike) -> jax.Array:
    """Per-example class statistics ``[m, 2] = (w·(1 − y), w·y)`` for labels ``y ∈ {0, 1}``,
    with the weights clipped to ``[0, 1]``, the range the sensitivity ``Δ^(α)(m)`` assumes
    (spec §1.7)."""
    w = jnp.clip(jnp.asarray(weights, jnp.float32), 0.0, 1.0)
    positive = jnp.asarray(y).astype(jnp.float32)
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
    oc_alpha: str | None = None,
    epsilon_oc: ArrayLike | None = None,
    sensitivity_multiplier: float = 1.0,
    m_public: ArrayLike | None = None,
) -> GrownTree:
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
      epsilon_splits: traced split budget of the tree spent by the exponential mechanisms,
        ``(1 − β_oc)·β_tree·ε/T`` (§4.2, §5.3), or ``None`` for the non-private tree (argmin,
        purity rule).
      oc_alpha: how O.C computes ``α``: ``"private"`` (per level from the errors of the level's
        nodes, §5.3) or ``"exact"`` (per split, breadth-first, §5.2; under DP it reads the data
        outside any mechanism: the caller must ledger it as not private); ``None``: private
        under DP, exact without.
      epsilon_oc: with ``"private"`` under DP, the budget of each of the ``d`` releases
        ``Ẽ_k = E_k + Lap(Δ/ε_oc)`` (``k = 0..d−1``, none when ``d = 1``); ``None``: O.C uses
        noise-free level errors (non-private trees).
      sensitivity_multiplier: 1 for add/remove-one, 2 for replace-one neighbours (§4.1).
      m_public: the public sample size ``m`` in ``Δ^(α)(m)`` (§4.1); defaults to
        ``codes.shape[0]``.

    Returns:
      :class:`GrownTree` with the splits, each example's leaf, the leaves' class sums and
      each internal node's α.
    """
    private = epsilon_splits is not None
    oc_alpha = resolve_oc_alpha(oc_alpha, private)
    stats = class_stats(weights, y)
    alpha = jnp.asarray(alpha, jnp.float32)
    oc = alpha < 0
    m = jnp.asarray(codes.shape[0] if m_public is None else m_public, jnp.float32)
    level_epsilon = split_level_epsilons(epsilon_splits, depth) if private else None
    k_splits, k_oc = jax.random.split(key)
    oc_noise_keys = jax.random.split(k_oc, depth)
    node_alpha = jnp.ones(2**depth - 1, jnp.float32)
    level_alpha: list[jax.Array] = []   # O.C "private": α_0 .. α_k so far
    root_error: list[jax.Array] = []    # ε_0/1(h_1) (noisy for "private" under DP)

    def select(key: jax.Array, utility: jax.Array, a: jax.Array, level: int) -> jax.Array:
        if not private:
            return jnp.argmax(utility, axis=-1).astype(jnp.int32)
        sensitivity = sensitivity_multiplier * split_sensitivity(m, a)[..., None]
        return exponential_mechanism(key, utility, sensitivity, level_epsilon[level])

    def utility(left: jax.Array, right: jax.Array, candidates: jax.Array,
                a: jax.Array) -> jax.Array:
        risk = split_risk(left, right, a[..., None, None])
        return jnp.where(candidates, -risk, -jnp.inf).reshape(*candidates.shape[:-2], -1)

    def choose(level: int, key: jax.Array, left: jax.Array, right: jax.Array,
               candidates: jax.Array) -> jax.Array:
        nonlocal node_alpha
        nodes = left[:, 0, -1, :]
        if level == 0:
            root_error.append(weighted_error(nodes))
        if oc_alpha == "exact":
            choice, a = _choose_sequential(
                key, left, right, candidates, alpha, root_error[0],
                lambda k, u, a: select(k, u, a, level), utility)
        else:
            if level == 0:
                calibrated = jnp.float32(1.0)
                if private and epsilon_oc is not None and depth > 1:
                    root_error[0] = laplace_mechanism(
                        oc_noise_keys[0], root_error[0], sensitivity_multiplier, epsilon_oc)
            else:
                error = weighted_error(nodes)
                if private and epsilon_oc is not None:
                    error = laplace_mechanism(oc_noise_keys[level], error,
                                              sensitivity_multiplier, epsilon_oc)
                calibrated = jnp.minimum(calibrated_alpha(error, root_error[0]),
                                         level_alpha[-1])
            level_alpha.append(calibrated)
            a = jnp.broadcast_to(jnp.where(oc, calibrated, alpha), nodes.shape[:1])
            choice = select(key, utility(left, right, candidates, a), a, level)
        node_alpha = node_alpha.at[level_slice(level)].set(a)
        return choice

    feature, threshold, leaf = grow_levelwise(
        k_splits, codes, stats, depth, n_codes_per_feature, choose=choose,
        stop_pure=not private)
    return GrownTree(feature, threshold, leaf, leaf_stats(leaf, stats, 2**depth), node_alpha)


def _choose_sequential(key, left, right, candidates, alpha, root_error, select, utility):
    """Exact O.C (spec §5.1–§5.2): the nodes of a level are split left to right, each with
    ``α_ℓ`` from the weighted error of the tree as it stands before that split (a ``lax.scan``
    carrying the error). Fixed ``α`` (``alpha >= 0``) is used as is."""
    nodes = left[:, 0, -1, :]

    def split_one(error, node):
        node_left, node_right, node_candidates, node_stats, node_key = node
        a = jnp.where(alpha < 0, calibrated_alpha(error, root_error), alpha)
        choice = select(node_key, utility(node_left, node_right, node_candidates, a), a)
        chosen = (node_left.reshape(-1, 2)[choice], node_right.reshape(-1, 2)[choice])
        error = error - node_stats.min() + chosen[0].min() + chosen[1].min()
        return error, (choice, a)

    keys = jax.random.split(key, nodes.shape[0])
    _, (choice, a) = jax.lax.scan(split_one, weighted_error(nodes),
                                  (left, right, candidates, nodes, keys))
    return choice, a
