"""One tree of the Mα boosted DP trees (``shared/specs/boosted-dp-trees-malpha.md`` §2, §4.2–§4.3).

Every internal node scores all candidate splits with the weighted Bayes risk ``crit_α`` (§2.2,
paper (3), (6), (118)) of its two children. Without DP it takes the ``argmin`` (ties to the
lowest (feature, threshold) index) and pure, empty or unsplittable nodes are frozen (§2.3). With
DP every node at depth ``k`` draws its split with the exponential mechanism (§4.3, paper (16),
(172)) on utility ``−crit_α``, sensitivity ``Δ^(α)(m)`` (doubled under replace-one, §4.1) and
budget ``ε_k = ε_splits / (d·2^k)`` (paper (18)); there is no purity test and the tree is
complete (§2.3). ``α`` is one traced scalar for the whole tree (the fixed-α strategies of §5.2;
the per-level O.C α of §5.3 is the caller's to add).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.losses.proper import split_risk, split_sensitivity
from dpjax.mechanisms.exponential import exponential_mechanism
from dpjax.trees.grow import Select, argmax_select, grow_levelwise
from dpjax.trees.histogram import leaf_stats


class GrownTree(NamedTuple):
    """Structure of one grown tree and the class statistics of its leaves.

    Attributes:
      feature: int32 ``[2**d - 1]`` split feature of each internal node (heap order).
      threshold: int32 ``[2**d - 1]`` split code (right iff ``code > threshold``); a frozen
        node (non-DP) has its feature's last code, so every example goes left.
      example_leaf: int32 ``[m]`` leaf ``0..2**d - 1`` of each training example.
      leaf_stats: ``[2**d, 2]`` weighted (negative, positive) class sums of each leaf.
    """

    feature: jax.Array
    threshold: jax.Array
    example_leaf: jax.Array
    leaf_stats: jax.Array


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
    sensitivity_multiplier: float = 1.0,
    m_public: ArrayLike | None = None,
) -> GrownTree:
    """Grow one Mα tree greedily, level by level (spec §2.1–§2.3, §4.2–§4.3, §5.2).

    Args:
      key: PRNG key (one subkey per level; unused without DP).
      codes: uint8 ``[m, n]`` public-grid codes (§2.1).
      weights: ``[m]`` boosting weights in ``[0, 1]`` (clipped).
      y: int ``[m]`` labels in ``{0, 1}``.
      depth: static depth ``d``.
      n_codes_per_feature: concrete int ``[n]`` codes of each feature (thresholds past a
        feature's codes are never candidates).
      alpha: traced scalar ``α ∈ [0, 1]`` of the criterion and of ``Δ^(α)(m)``.
      epsilon_splits: traced total split budget of the tree, ``β_tree·ε/T`` (§4.2), or
        ``None`` for the non-private tree (argmin, purity rule).
      sensitivity_multiplier: 1 for add/remove-one, 2 for replace-one neighbours (§4.1).
      m_public: the public sample size ``m`` in ``Δ^(α)(m)`` (§4.1); defaults to
        ``codes.shape[0]``.

    Returns:
      :class:`GrownTree` with the splits, each example's leaf and the leaves' class sums.
    """
    stats = class_stats(weights, y)
    alpha = jnp.asarray(alpha, jnp.float32)

    def minus_risk(left: jax.Array, right: jax.Array) -> jax.Array:
        return -split_risk(left, right, alpha)

    if epsilon_splits is None:
        select: Select | list[Select] = argmax_select
    else:
        m = codes.shape[0] if m_public is None else m_public
        sensitivity = sensitivity_multiplier * split_sensitivity(
            jnp.asarray(m, jnp.float32), alpha)
        select = [_exponential_select(sensitivity, eps)
                  for eps in split_level_epsilons(epsilon_splits, depth)]
    feature, threshold, leaf = grow_levelwise(
        key, codes, stats, depth, n_codes_per_feature, split_score=minus_risk, select=select,
        stop_pure=epsilon_splits is None)
    return GrownTree(feature, threshold, leaf, leaf_stats(leaf, stats, 2**depth))


def _exponential_select(sensitivity: jax.Array, epsilon: jax.Array) -> Select:
    """The exponential-mechanism selection of one level: each node draws independently with
    budget ``epsilon`` (masked candidates, utility ``-inf``, are never drawn)."""
    def select(key: jax.Array, utility: jax.Array) -> jax.Array:
        return exponential_mechanism(key, utility, sensitivity, epsilon)
    return select
