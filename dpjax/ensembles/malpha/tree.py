"""One tree of the Mα boosted DP trees (``docs/specs/boosted-dp-trees-malpha.md`` §2, §4.2–§4.3).

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

A tree is a fold of :func:`grow_malpha_level` over its levels (breadth-first, §2.3, §8): each
level is a pure function of a small :class:`MalphaState` (the examples' nodes, the splits and
α so far, the root error, the previous level's α) that returns the next state and the level's
privacy costs. :func:`grow_malpha_tree` runs that fold as one ``lax.scan`` over the levels, each
padded to the last level's ``2**(d−1)`` nodes, so a tree compiles one level's program instead of
``d`` (malpha's first fit compiled 3x longer at depth 4 than at depth 1); the padded nodes hold
no example and their draws come after the level's own, so the tree and its releases are those
of the unrolled fold, bit for bit.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.learner import records
from dpjax.losses.proper import clamped_split_risk, criterion_sensitivity, split_risk
from dpjax.mechanisms.exponential import permute_and_flip
from dpjax.mechanisms.laplace import laplace_mechanism
from dpjax.privacy import Cost, fixed_point, parallel
from dpjax.privacy.composition import parts
from dpjax.privacy.fixed_point import WideSum
from dpjax.trees.dense import depth_of, empty_splits, set_level
from dpjax.trees.grow import apply_level, frozen_nodes, level_split_stats
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
      leaf_stats: ``[2**d, 2]`` weighted (negative, positive) class sums of each leaf (for a
        private tree exact fixed-point sums in units of ``2**−WEIGHT_BITS``: int32, or a
        canonical :class:`~dpjax.privacy.fixed_point.WideSum` past
        :data:`~dpjax.privacy.fixed_point.MAX_ROWS` rows).
      alpha: float32 ``[2**d - 1]`` the α each internal node was split with.
    """

    feature: jax.Array
    threshold: jax.Array
    example_leaf: jax.Array
    leaf_stats: jax.Array
    alpha: jax.Array


SPLIT_BUDGETS = ("parallel", "paper")


def split_level_epsilons(epsilon_splits: ArrayLike, depth: int, budget: str) -> jax.Array:
    """Per-node split budget of each level, ``[d]``, the tree's splits spending
    ``ε_splits = β_tree·ε/T`` in all (spec §4.2):

    * ``"paper"`` (paper (18)): ``ε_k = ε_splits / (d·2^k)``, the ``2^k`` nodes of level ``k``
      composed sequentially (``Σ_k 2^k·ε_k = ε_splits``);
    * ``"parallel"``: ``ε_k = ε_splits / d`` for every node: the nodes of one level partition
      the records, so their selections compose in parallel (a record reaches one node per
      level; under replace-one a change touches two nodes, see :class:`MalphaRule`)."""
    if budget not in SPLIT_BUDGETS:
        raise ValueError(f"budget must be one of {SPLIT_BUDGETS}, got {budget!r}")
    levels = jnp.arange(depth, dtype=jnp.float32)
    per_level = parts(epsilon_splits, depth)
    if budget == "parallel":
        return jnp.broadcast_to(per_level, (depth,))
    return parts(per_level, 2.0**levels)


WEIGHT_UNIT = float(fixed_point.UNIT)
"""Under DP the boosting weights are fixed-point integers (:mod:`dpjax.privacy.fixed_point`), in
units of ``1/WEIGHT_UNIT``: every sum a mechanism releases (leaf class sums, O.C errors) is then
computed exactly (float32 sums round differently on neighbouring datasets, by more than the
sensitivity allows on large data): in int32 up to :data:`dpjax.privacy.fixed_point.MAX_ROWS`
rows, in two limbs beyond (:class:`~dpjax.privacy.fixed_point.WideSum`)."""


def class_stats(weights: ArrayLike, y: ArrayLike, exact: bool = False) -> jax.Array:
    """Per-example class statistics ``[m, 2] = (w·(1 − y), w·y)`` for labels ``y ∈ {0, 1}``,
    with the weights clipped to ``[0, 1]``, the range the sensitivity ``Δ^(α)(m)`` assumes
    (spec §1.7), and zero for a padding row (label 2,
    :attr:`~dpjax.learner.Learner.pads_rows`). With ``exact`` they are int32 fixed-point units
    (:func:`dpjax.privacy.fixed_point.to_units`), so their sums are exact."""
    w = jnp.clip(jnp.asarray(weights, jnp.float32), 0.0, 1.0)
    positive = jnp.asarray(y).astype(jnp.int32)
    if exact:
        w = fixed_point.to_units(w)
    stats = jnp.stack([w * (1 - positive), w * positive], axis=-1)
    return jnp.where(records(positive, 2)[:, None], stats, 0)


def resolve_oc_alpha(oc_alpha: str | None, private: bool) -> str:
    """The O.C mode in force: ``oc_alpha`` if given, else ``"private"`` under DP and
    ``"exact"`` (the paper's) without."""
    if oc_alpha is None:
        return "private" if private else "exact"
    if oc_alpha not in OC_ALPHA:
        raise ValueError(f"oc_alpha must be one of {OC_ALPHA} or None, got {oc_alpha!r}")
    return oc_alpha


def weighted_error(node_stats: jax.Array | WideSum) -> jax.Array | WideSum:
    """``Σ_λ min{w^1(λ), w^{-1}(λ)}`` over nodes ``[..., 2]``: the weighted training error of
    a tree whose leaves predict their weighted majority (spec §5.1, ``w(S)·ε_0/1``); exact
    on canonical :class:`~dpjax.privacy.fixed_point.WideSum` sums (the lexicographic minimum
    of the limbs, then :func:`~dpjax.privacy.fixed_point.wide_sum`)."""
    if not isinstance(node_stats, WideSum):
        return node_stats.min(-1).sum(-1)
    first, second = (jax.tree.map(lambda s, k=k: s[..., k], node_stats) for k in (0, 1))
    second_less = (second.hi < first.hi) | ((second.hi == first.hi) & (second.lo < first.lo))
    smaller = jax.tree.map(lambda a, b: jnp.where(second_less, b, a), first, second)
    return fixed_point.wide_sum(smaller, axis=-1)


def calibrated_alpha(error: ArrayLike, root_error: ArrayLike) -> jax.Array:
    """``α = clip(ε_0/1(h) / ε_0/1(h_1), 0, 1)`` (spec §5.1, paper (17)); ``1`` when the root
    error is not positive (pure root, or a noisy estimate at or below 0, §5.1/§5.3)."""
    error, root_error = jnp.asarray(error), jnp.asarray(root_error)
    positive = root_error > OC_FLOOR
    return jnp.where(positive, jnp.clip(error / jnp.where(positive, root_error, 1.0), 0, 1), 1.0)


class MalphaRule(NamedTuple):
    """How an Mα tree picks its splits: the constants of :func:`grow_malpha_level`.

    Attributes:
      alpha: float32 scalar (traced): a fixed ``α ∈ [0, 1]``, or :data:`OBJECTIVE_CALIBRATION`
        for O.C (§5).
      oc_alpha: static O.C mode, ``"private"`` (per level, §5.3) or ``"exact"`` (per split,
        §5.2); see :func:`resolve_oc_alpha`.
      level_epsilon: float32 ``[d]`` per-node split budget of each level
        (:func:`split_level_epsilons`, §4.2), or ``None`` for the non-private tree (argmin,
        purity rule, §2.3).
      size: float32 public sample size ``ñ`` (required under DP, §4.1): it clamps the
        criterion's class sums and bounds the O.C releases.
      epsilon_oc: budget of each O.C level-error release (§5.3), or ``None``: noise-free
        level errors.
      sensitivity_multiplier: 1 for add/remove-one, 2 for replace-one neighbours (§4.1).
      parallel: the nodes of a level compose in parallel (``level_epsilon`` from
        :func:`split_level_epsilons` with ``"parallel"``): each node's selection uses the
        add/remove sensitivity and ``level_epsilon / m`` with ``m`` the
        ``sensitivity_multiplier`` (a replacement removes a record from one node and adds one
        to another, or replaces it within one), and the level costs ``m·max`` over its nodes.
    """

    alpha: jax.Array
    oc_alpha: str = "private"
    level_epsilon: jax.Array | None = None
    size: jax.Array | None = None
    epsilon_oc: ArrayLike | None = None
    sensitivity_multiplier: float = 1.0
    parallel: bool = False

    @property
    def private(self) -> bool:
        """Whether the splits are drawn by a DP mechanism."""
        return self.level_epsilon is not None

    def releases_errors(self, depth: int) -> bool:
        """Whether a depth-``d`` tree releases its levels' O.C errors (§5.3): O.C
        ``"private"`` under DP with ``epsilon_oc``, when ``d > 1``."""
        return (self.oc_alpha == "private" and self.private and self.epsilon_oc is not None
                and depth > 1)


class MalphaState(NamedTuple):
    """A partly grown Mα tree: what one level hands the next (:func:`grow_malpha_level`).

    Attributes:
      node: int32 ``[m]`` each example's node within the next level to grow (after the last
        level: its leaf).
      feature, threshold: int32 ``[2**d - 1]`` the splits so far (heap order).
      node_alpha: float32 ``[2**d - 1]`` the α each internal node was split with so far.
      root_error: ``ε_0/1(h_1)·w(S)``, the root's weighted majority error (§5.1), set by level
        0; noisy with O.C ``"private"`` under DP (§5.3).
      level_alpha: O.C ``"private"``: the previous level's calibrated α (the schedule is made
        non-increasing, §5.3); 1 before the root.
    """

    node: jax.Array
    feature: jax.Array
    threshold: jax.Array
    node_alpha: jax.Array
    root_error: jax.Array
    level_alpha: jax.Array


def malpha_root_state(n_rows: int, depth: int, dtype: jnp.dtype = jnp.float32) -> MalphaState:
    """The state before level 0: every example at the root, no split, ``α = 1`` everywhere,
    root error 0 (of the class statistics' ``dtype``) until level 0 reads it."""
    feature, threshold = empty_splits(depth)
    return MalphaState(node=jnp.zeros(n_rows, jnp.int32), feature=feature, threshold=threshold,
                       node_alpha=jnp.ones(2**depth - 1, jnp.float32),
                       root_error=jnp.zeros((), dtype), level_alpha=jnp.float32(1.0))


OC_ERROR_LABEL = "O.C level error"
OC_ERRORS_LABEL = "O.C level errors"


def grow_malpha_level(
    state: MalphaState,
    level: int,
    key: jax.Array,
    oc_key: jax.Array,
    codes: jax.Array,
    stats: jax.Array,
    n_codes_per_feature: np.ndarray,
    rule: MalphaRule,
) -> tuple[MalphaState, collections.OrderedDict[str, Cost]]:
    """Split every node of level ``k`` of an Mα tree (spec §2.2–§2.3, §4.2–§4.3, §5).

    The α of the level's splits: the fixed ``rule.alpha``; or O.C ``"exact"``: per split,
    left to right, from the weighted error of the tree as it stands (§5.1–§5.2,
    :func:`_choose_sequential`); or O.C ``"private"``: ``α_0 = 1`` and, for ``k ≥ 1``,
    ``α_k = min(clip(E_k / E_0, 0, 1), α_{k−1})`` from the level's weighted errors ``E_k``
    (§5.3), Laplace-noised under DP when ``rule.epsilon_oc`` is set (``E_0`` too, at level 0,
    when ``d > 1``). Each node then takes the ``argmin`` of ``crit_α`` (non-private: pure,
    empty or unsplittable nodes are frozen, §2.3) or a permute-and-flip draw on ``−crit_α``
    with budget ``rule.level_epsilon[k]`` and sensitivity ``Δ^(α)(ñ)`` (§4.3).

    Args:
      state: the tree grown down to level ``k`` (:func:`malpha_root_state` for ``k = 0``).
      level: static level ``k``.
      key: the level's selection key (split per node by the exact O.C scan).
      oc_key: the key of the level's O.C error release (used only when it is released).
      codes: uint8 ``[m, n]`` public-grid codes.
      stats: ``[m, 2]`` class statistics (:func:`class_stats`, fixed-point under DP).
      n_codes_per_feature: concrete int ``[n]`` codes of each feature.
      rule: the tree's split rule (:class:`MalphaRule`).

    Returns:
      ``(state, costs)``: the state with level ``k`` split and the examples routed to level
      ``k + 1``; the level's releases, ``"splits at depth k"`` (one per node, ``[2**k]``, or
      one for the level when its nodes compose in parallel)
      and ``"O.C level error"`` (scalar) when released, empty without DP.
    """
    state, cost, oc_cost = _grow_level(state, level, key, oc_key, codes, stats,
                                       n_codes_per_feature, rule, 2**level)
    return state, _level_costs(level, cost, oc_cost)


def _level_costs(level: int, cost: Cost | None,
                 oc_cost: Cost | None) -> collections.OrderedDict[str, Cost]:
    """Level ``k``'s costs by label (:func:`grow_malpha_level`)."""
    return collections.OrderedDict(
        (label, c) for label, c in ((f"splits at depth {level}", cost), (OC_ERROR_LABEL, oc_cost))
        if c is not None)


def _grow_level(
    state: MalphaState,
    level: int | jax.Array,
    key: jax.Array,
    oc_key: jax.Array,
    codes: jax.Array,
    stats: jax.Array,
    n_codes_per_feature: np.ndarray,
    rule: MalphaRule,
    width: int,
) -> tuple[MalphaState, Cost | None, Cost | None]:
    """:func:`grow_malpha_level` with the level's nodes padded to a static ``width >= 2**k``
    and ``level`` static or traced (one program for every level of a tree): the padded nodes
    hold no example, their draws use draw indices past the level's own (so the level's
    releases are those of the unpadded level, :func:`dpjax.mechanisms.exact.run_lanes`), and
    their splits are dropped. Returns the state, the selections' cost (``[width]`` per node,
    or the level's under parallel composition; ``None`` without DP) and the O.C error
    release's (or ``None``)."""
    left, right, candidates = level_split_stats(codes, state.node, stats, level,
                                                n_codes_per_feature, stop_pure=not rule.private,
                                                width=width, exact=rule.private)
    error, oc_cost = weighted_error(jax.tree.map(lambda s: s[:, 0, -1, :], left)), None
    if rule.releases_errors(depth_of(state.feature.shape[0])):     # O.C "private" only
        error, oc_cost = _release_error(rule, oc_key, error)
    elif isinstance(error, WideSum):    # never read under DP (depth 1: α = 1 at the root)
        error = fixed_point.as_float(error)
    root = jnp.asarray(level) == 0
    root_error = jnp.where(root, error, state.root_error)
    level_alpha = state.level_alpha
    if rule.oc_alpha == "exact":
        choice, a, cost = _choose_sequential(rule, level, key, left, right, candidates,
                                             root_error)
    else:
        level_alpha = jnp.where(root, jnp.float32(1.0),
                                jnp.minimum(calibrated_alpha(error, root_error), level_alpha))
        a = jnp.broadcast_to(jnp.where(rule.alpha < 0, level_alpha, rule.alpha),
                             candidates.shape[:1])
        choice, cost = _select(rule, level, key, _utility(rule, left, right, candidates, a), a)
    if cost is not None and rule.parallel:
        cost = parallel(cost, touched=int(rule.sensitivity_multiplier))
    frozen = None if rule.private else frozen_nodes(left, candidates)
    feature, threshold, node = apply_level(state.feature, state.threshold, state.node, codes,
                                           level, choice, n_codes_per_feature, frozen)
    node_alpha = set_level(state.node_alpha, level, a)
    return MalphaState(node, feature, threshold, node_alpha, root_error, level_alpha), cost, oc_cost


def merge_level_costs(
    level_costs: Sequence[Mapping[str, Cost]],
) -> collections.OrderedDict[str, Cost]:
    """A tree's costs from its levels' (:func:`grow_malpha_level`): ``"splits at depth k"``
    in level order, then the O.C level errors stacked over the levels, ``"O.C level errors"``
    (``[d]``), when released."""
    costs = collections.OrderedDict(
        (label, cost) for level in level_costs for label, cost in level.items()
        if label != OC_ERROR_LABEL)
    oc_errors = [level[OC_ERROR_LABEL] for level in level_costs if OC_ERROR_LABEL in level]
    if oc_errors:
        costs[OC_ERRORS_LABEL] = jax.tree.map(lambda *c: jnp.stack(c), *oc_errors)
    return costs


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
    budget: str,
) -> tuple[GrownTree, collections.OrderedDict[str, Cost]]:
    """Grow one Mα tree greedily, level by level (spec §2.1–§2.3, §4.2–§4.3, §5): a
    ``lax.scan`` of :func:`grow_malpha_level` over the levels, padded to ``2**(d−1)`` nodes.

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
      budget: how a level's nodes share the split budget, ``"paper"`` (sequential, paper (18))
        or ``"parallel"`` (:func:`split_level_epsilons`).

    Returns:
      ``(tree, costs)``: :class:`GrownTree` with the splits, each example's leaf, the leaves'
      class sums and each internal node's α; and the privacy cost of every release,
      ``"splits at depth k"`` (one per node, ``[2**k]``, or one per level with ``"parallel"``)
      and ``"O.C level errors"`` (``[d]``
      when released), empty without DP.
    """
    private = epsilon_splits is not None
    if private and size is None:
        raise ValueError("a private Mα tree needs the public sample size (size=...)")
    rule = MalphaRule(
        alpha=jnp.asarray(alpha, jnp.float32), oc_alpha=resolve_oc_alpha(oc_alpha, private),
        level_epsilon=split_level_epsilons(epsilon_splits, depth, budget) if private else None,
        size=jnp.asarray(size, jnp.float32) if private else None, epsilon_oc=epsilon_oc,
        sensitivity_multiplier=sensitivity_multiplier, parallel=budget == "parallel")
    stats = class_stats(weights, y, exact=private)
    wide = private and codes.shape[0] > fixed_point.MAX_ROWS
    if wide and rule.oc_alpha == "exact":
        raise ValueError(f"exact O.C under DP sums its errors in int32: at most "
                         f"{fixed_point.MAX_ROWS} rows (oc_alpha='private' takes more)")
    k_splits, k_oc = jax.random.split(key)
    # the root error is the released (float32) estimate from level 0 on when it is released
    # (and a float32 past int32 sums, where it is never read)
    root = malpha_root_state(codes.shape[0], depth, jnp.float32
                             if rule.releases_errors(depth) or wide else stats.dtype)
    state, level_costs = _scan_levels(root, jax.random.split(k_splits, depth),
                                      jax.random.split(k_oc, depth), codes, stats,
                                      n_codes_per_feature, rule)
    leaves = (fixed_point.exact_segment_sum(stats, state.node, 2**depth) if private
              else leaf_stats(state.node, stats, 2**depth))
    tree = GrownTree(state.feature, state.threshold, state.node, leaves, state.node_alpha)
    return tree, merge_level_costs(level_costs)


def _scan_levels(
    state: MalphaState, split_keys: jax.Array, oc_keys: jax.Array, codes: jax.Array,
    stats: jax.Array, n_codes_per_feature: np.ndarray, rule: MalphaRule,
) -> tuple[MalphaState, list[collections.OrderedDict[str, Cost]]]:
    """The fold of :func:`grow_malpha_level` over a tree's levels from the root ``state``
    (level ``k`` with keys ``split_keys[k]``, ``oc_keys[k]``) as one ``lax.scan``, every level
    padded to the last level's ``2**(d−1)`` nodes (:func:`_grow_level`). Returns the grown
    state and each level's costs, as the fold's."""
    depth = depth_of(state.feature.shape[0])
    width = 2 ** (depth - 1)

    def grow(state, level_keys):
        state, cost, oc_cost = _grow_level(state, *level_keys, codes, stats,
                                           n_codes_per_feature, rule, width)
        return state, (cost, oc_cost)

    state, (cost, oc_cost) = jax.lax.scan(
        grow, state, (jnp.arange(depth, dtype=jnp.int32), split_keys, oc_keys))
    # level k's releases: its row of the stacked costs, its own 2**k nodes (unless parallel)
    return state, [_level_costs(k, jax.tree.map(lambda c, k=k: c[k] if rule.parallel
                                                else c[k, :2**k], cost),
                                jax.tree.map(lambda c, k=k: c[k], oc_cost))
                   for k in range(depth)]


def _select(rule: MalphaRule, level: int, key: jax.Array, utility: jax.Array,
            a: jax.Array) -> tuple[jax.Array, Cost | None]:
    """Each node's split: ``argmax`` of the utility (ties to the lowest index) without DP, a
    permute-and-flip draw with budget ``ε_k`` and sensitivity ``Δ^(α)(ñ)`` with (§4.3)."""
    if not rule.private:
        return jnp.argmax(utility, axis=-1).astype(jnp.int32), None
    multiplier = rule.sensitivity_multiplier
    epsilon = rule.level_epsilon[level]
    if rule.parallel:       # add/remove sensitivity, the budget shared by the touched nodes
        multiplier, epsilon = 1.0, parts(epsilon, rule.sensitivity_multiplier)
    relation = f"{multiplier:g}·" if multiplier != 1 else ""
    sensitivity = multiplier * criterion_sensitivity(rule.size, a)
    return permute_and_flip(key, utility, sensitivity, epsilon,
                            label=f"sens. {relation}(Δ^(α)(ñ) + 2^-18·ñ)")


def _utility(rule: MalphaRule, left: jax.Array, right: jax.Array, candidates: jax.Array,
             a: jax.Array) -> jax.Array:
    """``−crit_α`` of every candidate (``-inf`` off the candidates), flat per node (§2.2);
    under DP on the weight units of the fixed-point sums, clamped to ``ñ`` (§4.1)."""
    a = a[..., None, None]
    if rule.private:       # exact integer sums, each rounded once to float32
        risk = clamped_split_risk(fixed_point.as_float(left) / WEIGHT_UNIT,
                                  fixed_point.as_float(right) / WEIGHT_UNIT, a, rule.size)
    else:
        risk = split_risk(left, right, a)
    return jnp.where(candidates, -risk, -jnp.inf).reshape(*candidates.shape[:-2], -1)


def _release_error(rule: MalphaRule, key: jax.Array, error: jax.Array) -> tuple[jax.Array, Cost]:
    """``Ẽ_k = E_k`` + exact noise: an int32 fixed-point sum, sensitivity one weight (§5.3).
    The cost is gated on O.C: a fixed α never reads the estimate, so nothing is released."""
    multiplier = rule.sensitivity_multiplier
    noisy, cost = laplace_mechanism(key, error, multiplier * WEIGHT_UNIT, rule.epsilon_oc,
                                    bound=rule.size * WEIGHT_UNIT, integer=True,
                                    label=f"sens. {multiplier:g}")
    return noisy, cost.gated(rule.alpha < 0)


def _choose_sequential(
    rule: MalphaRule, level: int, key: jax.Array, left: jax.Array, right: jax.Array,
    candidates: jax.Array, root_error: jax.Array,
) -> tuple[jax.Array, jax.Array, Cost | None]:
    """Exact O.C (spec §5.1–§5.2): the nodes of a level are split left to right, each with
    ``α_ℓ`` from the weighted error of the tree as it stands before that split (a ``lax.scan``
    carrying the error). Fixed ``α`` (``alpha >= 0``) is used as is. Returns the choices, the
    α of each node and the selections' costs (``None`` without DP)."""
    nodes = left[:, 0, -1, :]

    def split_one(error, node):
        node_left, node_right, node_candidates, node_stats, node_key = node
        a = jnp.where(rule.alpha < 0, calibrated_alpha(error, root_error), rule.alpha)
        utility = _utility(rule, node_left, node_right, node_candidates, a)
        choice, cost = _select(rule, level, node_key, utility, a)
        chosen = (node_left.reshape(-1, 2)[choice], node_right.reshape(-1, 2)[choice])
        error = error - node_stats.min() + chosen[0].min() + chosen[1].min()
        return error, (choice, a, cost)

    # one key per node; split(key, w)[:2**k] == split(key, 2**k) (threefry's partitionable
    # mode, JAX's default), so a padded level's nodes draw as the unpadded level's (with the
    # mode off, the same fresh keys are merely dealt differently)
    keys = jax.random.split(key, nodes.shape[0])
    _, (choice, a, cost) = jax.lax.scan(split_one, weighted_error(nodes),
                                        (left, right, candidates, nodes, keys))
    return choice, a, cost
