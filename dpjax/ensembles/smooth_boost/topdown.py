"""DP-TopDown: differentially private top-down decision trees for smooth boosting — Asadi et
al., "Private Boosted Decision Trees via Smooth Re-Weighting", Algorithm 2 (spec
``docs/specs/private-boosted-stumps-smooth-reweighting.md`` §4).

A tree with ``t`` internal nodes is grown best-first over the one-hot literals
``x_{f,b} = 1[code_f = b]`` (§4.1: ``h(x) = 1`` routes ``x`` to the right child): each split
picks a (leaf, literal) pair by the exponential mechanism (here permute-and-flip, which has the
same guarantee and is never worse) on the Gini gain ``im_{ℓ,h,μ̂} = f(P_ℓ, N_ℓ) − f(P_ℓ0, N_ℓ0) −
f(P_ℓ1, N_ℓ1)``, ``f(P, N) = 4PN/(P + N)`` (§4.2, mass form), with ``P, N`` the ``μ̂``-masses of
positive and negative examples. Then all ``2(t + 1)`` leaf × label masses are released with one
Laplace mechanism and each leaf votes its noisy majority label.

Static shapes (§4.6): the tree is ``t`` splits of slots; at split ``s`` there are ``s + 1`` leaf
slots ``0..s``; splitting slot ``ℓ`` on a literal sends the examples where it is true to the new
slot ``s + 1`` and keeps the others in ``ℓ``.

Calibration (§4.5; replace-one neighbours, ``ζ = 1/(κn)``):

* ``"provable"`` (default): ``|Δim| <= 16/(κn)`` (the four child-cell masses move by at most
  ``4/(κn)`` in L1 and every partial derivative of ``im`` lies in ``[−4, 4]``), and the leaf ×
  label mass vector has L1 sensitivity ``4/(κn)`` (one record changes every leaf's masses:
  no parallel composition over leaves). A round's ``ε_b`` is half for the ``t`` splits
  (``ε_b/(2t)`` each) and half for the joint leaf release.
* ``"paper"``: Lemma 9.2's ``4ζ`` for the splits, which is false (the spec's exact
  counterexample reaches ``4.29ζ``). The leaf noise is the same as the paper's WRNM scale
  ``1/(2tη)``. Kept for the reproduction only; the learner marks it not private.

Floats: every mass is ``Σ_c μ̂_c·K_c`` over int32 counts ``K_c`` per level of the
:class:`~dpjax.ensembles.smooth_boost.LevelMeasure` (as DP-1R's errors), and the rounding of
the gains and masses is added to the sensitivities (:func:`tree_rounding`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.data.binning import FeatureSpec
from dpjax.data.describe import code_label
from dpjax.ensembles.smooth_boost.reweighting import LevelMeasure, WeakLearner
from dpjax.ensembles.smooth_boost.stumps import level_rounding
from dpjax.mechanisms.exponential import permute_and_flip
from dpjax.mechanisms.laplace import laplace_mechanism
from dpjax.privacy import Cost
from dpjax.trees.histogram import node_histogram, valid_thresholds

CALIBRATIONS = ("provable", "paper")
SPLIT_SENSITIVITY = {"provable": 16.0, "paper": 4.0}
"""The split utility's sensitivity in units of ``1/(κn)`` (§4.5 item 2; Lemma 9.2)."""
LEAF_SENSITIVITY = 4.0
"""L1 sensitivity of the ``2(t + 1)`` leaf × label masses in units of ``1/(κn)`` (§4.5 item 3;
the paper's per-leaf WRNM at scale ``1/(2tη)`` draws the same noise)."""


class TopDownTree(NamedTuple):
    """A tree of ``t`` splits: split ``s`` sends the examples of slot ``split_leaf[s]`` with
    ``code_feature[s] = code[s]`` to slot ``s + 1``; ``label[ℓ] ∈ {−1, 0, +1}`` is the vote of
    slot ``ℓ`` (0: the round abstains). Costs: one per split, and the leaf release's."""

    split_leaf: jax.Array
    feature: jax.Array
    code: jax.Array
    label: jax.Array
    split_cost: Cost
    leaf_cost: Cost


def tree_rounding(levels: int) -> float:
    """Bound on the float32 rounding of one gain ``im`` (for masses in ``[0, 1]``): each mass is
    within a relative ``r = level_rounding(levels)``
    (:func:`~dpjax.ensembles.smooth_boost.stumps.level_rounding`); ``f`` has partial derivatives in
    ``[0, 4]`` and is evaluated to a relative ``5·2**−24`` of ``P + N``; the three terms' ``P + N``
    sum to ``2w(ℓ) <= 2``, and the two subtractions add ``4·2**−24``: ``8r + 14·2**−24``."""
    return 8.0 * level_rounding(levels) + 14.0 * 2.0**-24


def topdown_sensitivities(size: ArrayLike, kappa: ArrayLike, levels: int,
                          calibration: str = "provable") -> tuple[jax.Array, jax.Array]:
    """``(split, leaf)`` sensitivities at the public sample size ``size``: ``c/(κn)`` (``c`` =
    :data:`SPLIT_SENSITIVITY`) plus twice :func:`tree_rounding`, and ``4/(κn)`` plus twice the
    masses' rounding (L1 over masses summing to 1)."""
    unit = 1.0 / (jnp.asarray(kappa, jnp.float32) * jnp.asarray(size, jnp.float32))
    split = SPLIT_SENSITIVITY[calibration] * unit + 2.0 * tree_rounding(levels)
    leaf = LEAF_SENSITIVITY * unit + 2.0 * level_rounding(levels)
    return split, leaf


def gini_mass(mass: jax.Array) -> jax.Array:
    """``f(P, N) = 4PN/(P + N)`` (0 when empty) of masses ``[..., 2]`` (negative, positive)."""
    total = mass[..., 0] + mass[..., 1]
    return jnp.where(total > 0, 4.0 * mass[..., 0] * mass[..., 1] / jnp.maximum(total, 1e-38),
                     0.0)


def weighted(counts: jax.Array, weight: jax.Array) -> jax.Array:
    """``Σ_c weight[c]·counts[:, c, ...]``: masses from int32 counts per level (axis 1),
    elementwise products and a sum (no matrix product)."""
    shape = (1, -1) + (1,) * (counts.ndim - 2)
    return jnp.sum(weight.reshape(shape) * counts.astype(jnp.float32), axis=1)


def split_gains(codes: jax.Array, y: jax.Array, measure: LevelMeasure, slot: jax.Array,
                n_slots: int, n_codes: int) -> tuple[jax.Array, jax.Array]:
    """The Gini gains ``im [n_slots, n_features, n_codes]`` of splitting every slot on every
    literal, and the slots' masses ``[n_slots, 2]`` (negative, positive).

    ``K[ℓ, c, f, b, ·]`` counts the examples of slot ``ℓ`` and level ``c`` with ``code_f = b``
    by label (one int32 segment sum); the literal's false side is the slot's count minus it
    (exact), and every mass is :func:`weighted` from the counts."""
    levels = measure.weight.shape[0]
    label = jnp.stack([y < 0, y > 0], axis=-1).astype(jnp.int32) * measure.multiplicity[:, None]
    hist = node_histogram(codes, slot * levels + measure.level, label, n_slots * levels, n_codes)
    hist = hist.reshape(n_slots, levels, *hist.shape[1:])             # [ℓ, c, d, K, 2]
    totals = hist[:, :, 0].sum(axis=2)                                # [ℓ, c, 2]
    rest = totals[:, :, None, None, :] - hist
    mass = weighted(totals, measure.weight)                           # [ℓ, 2]
    true_side = weighted(hist, measure.weight)                        # [ℓ, d, K, 2]
    false_side = weighted(rest, measure.weight)
    gain = gini_mass(mass)[:, None, None] - gini_mass(true_side) - gini_mass(false_side)
    return gain, mass


def dp_topdown(key: jax.Array, measure: LevelMeasure, codes: jax.Array, y: jax.Array, *,
               n_codes_per_feature: np.ndarray, n_splits: int, epsilon: ArrayLike | None,
               kappa: ArrayLike, size: ArrayLike, calibration: str = "provable",
               leaf_share: float = 0.5) -> TopDownTree:
    """DP-TopDown (Algorithm 2, §4.5's calibration): ``n_splits`` best-first splits, each by
    permute-and-flip on the gains (:func:`split_gains`) with budget ``ε_b/(2t)``, then the leaf ×
    label masses with one Laplace release of budget ``ε_b/2`` (``epsilon`` is the round's
    ``ε_b``; ``None``: the best split and the exact majority, not private). A leaf's label is
    its noisy majority, ties by a fair coin. The splits are one ``lax.scan`` (every split has
    the same shapes), so a tree compiles one split's program instead of ``n_splits``."""
    n_codes_per_feature = np.asarray(n_codes_per_feature)
    n_codes = int(n_codes_per_feature.max())
    n_slots, levels = n_splits + 1, measure.weight.shape[0]
    literal_ok = valid_thresholds(n_codes_per_feature + 1, n_codes).reshape(-1)
    if epsilon is not None:
        split_sens, leaf_sens = topdown_sensitivities(size, kappa, levels, calibration)
        split_eps = jnp.asarray(epsilon, jnp.float32) * (1.0 - leaf_share) / n_splits
    keys = jax.random.split(key, n_splits + 2)

    def split(slot, step):           # split s: one program for every split (a lax.scan)
        s, split_key = step
        gain, _ = split_gains(codes, y, measure, slot, n_slots, n_codes)
        ok = (jnp.arange(n_slots) <= s)[:, None] & literal_ok[None, :]
        utility = jnp.where(ok, gain.reshape(n_slots, -1), -jnp.inf).reshape(-1)
        if epsilon is None:
            index = jnp.argmax(utility).astype(jnp.int32)
            cost = Cost(jnp.float32(0.0), jnp.float32(0.0), "none (not private)")
        else:
            index, cost = permute_and_flip(split_key, utility, split_sens, split_eps,
                                           label=f"{SPLIT_SENSITIVITY[calibration]:g}/(κn), "
                                                 "Gini gain")
        leaf, literal = index // literal_ok.shape[0], index % literal_ok.shape[0]
        feature, code = literal // n_codes, literal % n_codes
        hit = jnp.take(codes, feature, axis=1).astype(jnp.int32) == code
        slot = jnp.where((slot == leaf) & hit, s + 1, slot)
        return slot, ((leaf, feature, code), cost)

    slot, ((split_leaf, feature, code), split_cost) = jax.lax.scan(
        split, jnp.zeros(codes.shape[0], jnp.int32),
        (jnp.arange(n_splits, dtype=jnp.int32), keys[:n_splits]))
    _, mass = split_gains(codes[:, :1], y, measure, slot, n_slots, n_codes)
    if epsilon is None:
        noisy = mass
        leaf_cost = Cost(jnp.float32(0.0), jnp.float32(0.0), "none (not private)")
    else:
        noisy, leaf_cost = laplace_mechanism(keys[-2], mass, leaf_sens,
                                             jnp.asarray(epsilon, jnp.float32) * leaf_share,
                                             bound=1.0,
                                             label="L1 4/(κn), leaf × label masses")
    coin = jnp.where(jax.random.bernoulli(keys[-1], 0.5, (n_slots,)), 1, -1)
    label = jnp.where(noisy[:, 1] > noisy[:, 0], 1,
                      jnp.where(noisy[:, 1] < noisy[:, 0], -1, coin)).astype(jnp.int32)
    return TopDownTree(split_leaf.astype(jnp.int32), feature.astype(jnp.int32),
                       code.astype(jnp.int32), label, split_cost, leaf_cost)


def topdown_slot(tree: TopDownTree, codes: jax.Array) -> jax.Array:
    """The leaf slot ``int32 [m]`` of every row (the splits applied in order)."""
    slot = jnp.zeros(codes.shape[0], jnp.int32)
    for s in range(tree.split_leaf.shape[0]):
        hit = jnp.take(codes, tree.feature[s], axis=1).astype(jnp.int32) == tree.code[s]
        slot = jnp.where((slot == tree.split_leaf[s]) & hit, s + 1, slot)
    return slot


def topdown_predict(tree: TopDownTree, codes: jax.Array) -> jax.Array:
    """Votes ``int32 {−1, 0, +1} [m]`` of one tree on ``codes [m, n_features]``."""
    return tree.label[topdown_slot(tree, codes)]


def dp_topdown_learner(n_codes_per_feature: np.ndarray, n_splits: int,
                       epsilon: ArrayLike | None, kappa: ArrayLike, size: ArrayLike,
                       calibration: str = "provable", leaf_share: float = 0.5) -> WeakLearner:
    """DP-TopDown as a ``±1`` (``resolution=1``) :class:`~dpjax.ensembles.smooth_boost.
    WeakLearner` with per-round budget ``epsilon`` (``None``: not private)."""
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")

    def fit(key: jax.Array, measure: LevelMeasure, codes: jax.Array,
            y: jax.Array) -> TopDownTree:
        return dp_topdown(key, measure, codes, y, n_codes_per_feature=n_codes_per_feature,
                          n_splits=n_splits, epsilon=epsilon, kappa=kappa, size=size,
                          calibration=calibration, leaf_share=leaf_share)

    return WeakLearner(fit, topdown_predict, resolution=1)


def describe_trees(trees: TopDownTree, spec: FeatureSpec, classes: tuple) -> str:
    """The boosted trees as text: per voting tree, its leaves as the conjunction of literals
    that reaches them and the class they vote, and the number of distinct features used."""
    split_leaf, feature, code, label = (np.asarray(a) for a in trees[:4])
    lines, features, voting = [], set(), 0
    for r in range(label.shape[0]):
        if not label[r].any():
            continue
        voting += 1
        paths: list[list[str]] = [[]]
        for s in range(split_leaf.shape[1]):
            leaf, f, b = int(split_leaf[r, s]), int(feature[r, s]), int(code[r, s])
            features.add(f)
            literal = code_label(spec, f, b)
            paths.append([*paths[leaf], literal])
            paths[leaf] = [*paths[leaf], f"not ({literal})"]
        lines.append(f"  tree {voting}:")
        for leaf, path in enumerate(paths):
            vote = classes[1] if label[r, leaf] > 0 else classes[0]
            lines.append(f"    {' and '.join(path) or 'always'} -> {vote}")
    return "\n".join([f"majority vote of {voting} trees, {len(features)} distinct features:",
                      *lines])
