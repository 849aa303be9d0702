"""Mα-boost: boosted, differentially private decision trees with the Mα loss — Nock & Henecka,
"Boosted and Differentially Private Ensembles of Decision Trees" (arXiv 2001.09384); spec
``shared/specs/boosted-dp-trees-malpha.md``.

Algorithm 1 (§3) as one ``lax.scan`` over the ``T`` trees. Round ``t``:

1. weights ``w_i = ψ^(α_LC)^{-1}(−y_i·H_{t−1}(x_i))`` of the *released* model (§3 implementation
   form, §4.1), kept in ``[ζ', 1 − ζ']``;
2. grow a complete Mα tree (§2; :func:`dpjax.trees.malpha.grow_malpha_tree`), its splits by the
   exponential mechanism under DP (§4.3), α fixed or objective-calibrated (§5);
3. release the leaf values and the leveraging coefficient ``β_t`` (§4.4–§4.5);
4. ``H_t = H_{t−1} + β_t·h̃_t``.

Budget (§4.2, §5.3): ``ε/T`` per tree; ``β_tree·ε/T`` for the tree's splits (a share ``β_oc`` of
it for the O.C estimates when O.C is private), ``(1 − β_tree)·ε/T`` for its leaves (a share
``beta_share`` of it for ``β_t`` when ``beta_mode="laplace"``), the leaves' part spent per leaf
(``/2^d``, sequential) or in parallel.

Leaf mechanisms (spec §4.4–§4.5):

* ``"value"`` + ``"fold"`` (default): ``β_t`` is folded into the leaf values before the noise.
  Since ``|β_t| ≤ a·M`` (weights ``≤ 1``, ``|h_t| ≤ M``) and ``a = α_LC/M²``, every folded value
  lies in ``[−α_LC, α_LC]``: we clamp to that range (the spec clamps to ``[−M, M]``; ours is the
  same provable bound, ``M/α_LC`` times tighter) and add ``Lap(2·α_LC/ε_leaf)``.
* ``"value"`` + ``"laplace"``: leaves ``clip(ψ(q̂), ±M) + Lap(2M/ε_leaf)``, then
  ``β̃_t = β_t + Lap(2aM/(m·ε_β))``.
* ``"counts"`` + ``"post"``: noisy weighted class sums per leaf, ``Lap(Δ/ε_leaf)``, leaves
  ``clip(ψ(q̃), ±M)`` and ``β_t`` both computed from them (post-processing); or ``"laplace"``.
* ``"paper_fast"``: ``β_t`` from the data with no noise (the paper's route (ii)); not private
  (the ledger says so).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.losses.proper import canonical_link, inverse_link
from dpjax.mechanisms.laplace import laplace_mechanism
from dpjax.trees.dense import DenseTree
from dpjax.trees.malpha import OBJECTIVE_CALIBRATION, grow_malpha_tree, resolve_oc_alpha
from dpjax.trees.predict import apply_trees

LEAF_MECHANISMS = ("value", "counts")
BETA_MODES = ("fold", "post", "laplace", "paper_fast")
LEAF_COMPOSITIONS = ("sequential", "parallel")
VALID_MODES = {("value", "fold"), ("value", "laplace"), ("value", "paper_fast"),
               ("counts", "post"), ("counts", "laplace"), ("counts", "paper_fast")}
WEIGHT_FLOOR = 1e-6  # ζ' of §3 (A21)


@chex.dataclass(frozen=True)
class BoostedTrees:
    """A fitted Mα-boosted ensemble: ``H(x) = Σ_t beta[t]·trees.leaf[t, leaf_t(x)]``.

    Attributes:
      trees: :class:`DenseTree` batch ``[T]`` with released leaf values ``leaf [T, 2**d]``.
      beta: ``[T]`` released leveraging coefficients (1 when folded into the leaves).
      alpha: ``[T, 2**d - 1]`` the α each internal node was split with (O.C diagnostics).
    """

    trees: DenseTree
    beta: jax.Array
    alpha: jax.Array


def link_alpha(alpha: ArrayLike, oc_link_alpha: ArrayLike = 1.0) -> jax.Array:
    """``α_LC``, the α of the link, the weights and ``a`` (§5.4): the fixed α itself, or
    ``oc_link_alpha`` (default 1, the root value of the O.C schedule) under O.C."""
    alpha = jnp.asarray(alpha, jnp.float32)
    return jnp.where(alpha < 0, jnp.asarray(oc_link_alpha, jnp.float32), alpha)


def link_bound(alpha_link: ArrayLike, zeta: float) -> jax.Array:
    """``M_ζ(α) = α(1 − 2ζ)/sqrt(ζ(1 − ζ)) + 2(1 − α)``, the bound on ``|ψ^(α)|`` after
    clamping ``q`` to ``[ζ, 1 − ζ]`` (§1.3); the non-private ``M`` (§3, A15)."""
    return alpha_link * (1 - 2 * zeta) / np.sqrt(zeta * (1 - zeta)) + 2 * (1 - alpha_link)


def leaf_link(stats: jax.Array, alpha_link: ArrayLike, zeta: float) -> jax.Array:
    """``ψ^(α)(clip(q, ζ, 1 − ζ))`` of leaves with (negative, positive) sums ``[..., 2]``; an
    empty leaf (or one whose sums are both ``<= 0``) has ``q = 1/2``, value 0 (§2.5, A12)."""
    stats = jnp.maximum(stats, 0.0)
    total = stats.sum(-1)
    q = jnp.where(total > 0, stats[..., 1] / jnp.where(total > 0, total, 1.0), 0.5)
    return canonical_link(jnp.clip(q, zeta, 1 - zeta), alpha_link)


def leveraging_coefficient(
    values: jax.Array, stats: jax.Array, a: ArrayLike, m: ArrayLike
) -> jax.Array:
    """``β_t = (a/m)·Σ_i w_i·y_i·h_t(x_i) = (a/m)·Σ_λ h_t(λ)·(w^1(λ) − w^{−1}(λ))`` (§3 step
    2.2, paper (142)) from leaf values ``[2**d]`` and leaf sums ``[2**d, 2]``."""
    return a / m * jnp.sum(values * (stats[:, 1] - stats[:, 0]))


def release_leaves(
    key: jax.Array,
    stats: jax.Array,
    alpha_link: jax.Array,
    *,
    clamp: float,
    zeta: float,
    epsilon_leaf: jax.Array,
    epsilon_beta: jax.Array,
    sensitivity: float,
    m: jax.Array,
    leaf_mechanism: str,
    beta_mode: str,
) -> tuple[jax.Array, jax.Array]:
    """Private leaf values ``h̃_t [2**d]`` and leveraging coefficient ``β_t`` (§4.4, §4.5).

    ``epsilon_leaf`` is each leaf's budget (each leaf is one release), ``epsilon_beta`` the
    budget of ``β̃_t`` (``beta_mode="laplace"`` only), ``sensitivity`` 1 (add/remove) or 2
    (replace-one) for the weighted class sums (bounded value ranges need no multiplier).
    """
    k_leaf, k_beta = jax.random.split(key)
    a = alpha_link / clamp**2
    if leaf_mechanism == "counts":
        noisy = laplace_mechanism(k_leaf, stats, sensitivity, epsilon_leaf)
        values = jnp.clip(leaf_link(noisy, alpha_link, zeta), -clamp, clamp)
        if beta_mode == "post":
            return values, leveraging_coefficient(values, noisy, a, m)
    elif beta_mode == "fold":
        values = jnp.clip(leaf_link(stats, alpha_link, zeta), -clamp, clamp)
        folded = jnp.clip(leveraging_coefficient(values, stats, a, m) * values,
                          -alpha_link, alpha_link)
        noisy = laplace_mechanism(k_leaf, folded, 2 * alpha_link, epsilon_leaf)
        return jnp.clip(noisy, -alpha_link, alpha_link), jnp.float32(1.0)
    else:
        values = jnp.clip(leaf_link(stats, alpha_link, zeta), -clamp, clamp)
        values = jnp.clip(laplace_mechanism(k_leaf, values, 2 * clamp, epsilon_leaf),
                          -clamp, clamp)
    beta = leveraging_coefficient(values, stats, a, m)
    if beta_mode == "laplace":
        beta = laplace_mechanism(k_beta, beta, 2 * a * clamp / m, epsilon_beta)
    return values, beta


def tree_budgets(
    epsilon: ArrayLike, beta_tree: ArrayLike, oc_private: ArrayLike, *, n_trees: ArrayLike,
    depth: int,
    beta_oc: float, beta_share: float, beta_mode: str, leaf_composition: str,
) -> dict[str, jax.Array]:
    """Per-mechanism budgets of one tree (§4.2, eq. (18); §5.3): ``splits`` (the tree's split
    total, spent as ``ε_k = splits/(d·2^k)`` per node), ``oc`` (each of the ``d`` O.C
    releases), ``leaf`` (each leaf), ``beta`` (``β̃_t``). ``oc_private`` (traced bool) says
    whether the O.C estimates are released (O.C with ``oc_alpha="private"`` and ``d >= 2``)."""
    per_tree = jnp.asarray(epsilon, jnp.float32) / n_trees
    beta_tree = jnp.asarray(beta_tree, jnp.float32)
    splits = beta_tree * per_tree
    share_oc = jnp.where(oc_private, beta_oc, 0.0)
    # (1 − β_tree) is exact in float32 for β_tree >= 1/2; per_tree − splits would magnify the
    # rounding of splits by β/(1 − β) and could exceed the ledger's share
    predictions = per_tree * (1 - beta_tree)
    share_beta = beta_share if beta_mode == "laplace" else 0.0
    leaves = predictions * (1 - share_beta)
    return {
        "splits": splits * (1 - share_oc),
        "oc": jnp.where(oc_private, splits * beta_oc / depth, 1.0),
        "leaf": leaves / (2**depth if leaf_composition == "sequential" else 1),
        "beta": jnp.where(share_beta > 0, predictions * share_beta, 1.0),
    }


def fit_boosted(
    key: jax.Array,
    codes: jax.Array,
    y: jax.Array,
    epsilon: jax.Array | None,
    *,
    alpha: ArrayLike = 1.0,
    beta_tree: ArrayLike = 0.5,
    n_trees: int,
    depth: int,
    n_codes_per_feature: np.ndarray,
    n_classes: int = 2,
    sensitivity: float = 1.0,
    clamp: float = 10.0,
    zeta: float = 1e-4,
    oc_link_alpha: float = 1.0,
    leaf_mechanism: str = "value",
    beta_mode: str = "fold",
    leaf_composition: str = "sequential",
    oc_alpha: str | None = None,
    beta_oc: float = 0.1,
    beta_share: float = 0.1,
    n_active: ArrayLike | None = None,
) -> BoostedTrees:
    """Mα-boost (Algorithm 1, spec §3) of ``n_trees`` complete depth-``depth`` Mα trees.

    Args:
      key: PRNG key (tree ``t`` uses ``fold_in(key, t)``, split into its splits', O.C and
        leaves' streams).
      codes: uint8 ``[m, n]``; y: int ``[m]`` in ``{0, 1}`` (class 1 is ``y = +1``).
      epsilon: total budget (traced) or ``None`` for non-private boosting (argmin splits, purity
        stop, exact leaves, no clamp, ``M = M_ζ(α_LC)``).
      alpha: traced α strategy: a fixed ``α ∈ (0, 1]`` or ``OBJECTIVE_CALIBRATION`` (O.C).
      beta_tree: traced share of each tree's budget spent on its splits (§4.2).
      n_trees, depth: static ``T`` and ``d``.
      sensitivity: 1 (add/remove-one) or 2 (replace-one) (§4.1).
      clamp: ``M`` (DP leaf values are clamped to ``[−M, M]``; ``a = α_LC/M²``).
      zeta: ``ζ``, the clamp of ``q`` before the link (§2.5).
      oc_link_alpha: ``α_LC`` under O.C (§5.4).
      leaf_mechanism, beta_mode: see the module docstring (§4.4–§4.5).
      leaf_composition: ``"sequential"`` (``ε_leaf = β_pred·ε/(T·2^d)``) or ``"parallel"``
        (``β_pred·ε/T``; add/remove with the counts mechanism only, §4.2).
      oc_alpha: ``"private"`` (per-level noisy calibration, §5.3) or ``"exact"`` (§5.2);
        ``None``: private under DP, exact without.
      beta_oc: share of the split budget for the O.C releases (§5.3).
      beta_share: share of the leaves' budget for ``β̃_t`` when ``beta_mode="laplace"``.
      n_active: optional traced number of trees ``T' <= n_trees`` actually boosted: the budget
        is split over ``T'`` trees and rounds ``t >= T'`` release nothing (zero leaves and
        ``β``), so the first ``T'`` trees equal a ``T'``-tree fit and one compiled program
        serves every ``T' <= n_trees`` (e.g. a sweep over ``T ∈ {2, 5, 10, 20}``).
    """
    if n_classes != 2:
        raise ValueError(f"Mα-boost is a binary classifier; got {n_classes} classes")
    if (leaf_mechanism, beta_mode) not in VALID_MODES:
        raise ValueError(f"leaf_mechanism={leaf_mechanism!r} does not go with "
                         f"beta_mode={beta_mode!r}; valid pairs: {sorted(VALID_MODES)}")
    private = epsilon is not None
    oc_alpha = resolve_oc_alpha(oc_alpha, private)
    m = codes.shape[0]
    sign = 2.0 * jnp.asarray(y, jnp.float32) - 1.0
    alpha = jnp.asarray(alpha, jnp.float32)
    alpha_link = link_alpha(alpha, oc_link_alpha)
    oc_private = private and oc_alpha == "private" and depth > 1
    active = n_trees if n_active is None else jnp.asarray(n_active, jnp.float32)
    if private:
        budget = tree_budgets(epsilon, beta_tree, (alpha < 0) & oc_private, n_trees=active,
                              depth=depth, beta_oc=beta_oc, beta_share=beta_share,
                              beta_mode=beta_mode, leaf_composition=leaf_composition)
    bound = jnp.float32(clamp) if private else link_bound(alpha_link, zeta)

    def round_t(margin_sum: jax.Array, t: jax.Array):
        k_tree, k_leaf = jax.random.split(jax.random.fold_in(key, t))
        weights = jnp.clip(inverse_link(-sign * margin_sum, alpha_link),
                           WEIGHT_FLOOR, 1 - WEIGHT_FLOOR)
        grown = grow_malpha_tree(
            k_tree, codes, weights, y, depth, n_codes_per_feature, alpha,
            budget["splits"] if private else None, oc_alpha=oc_alpha,
            epsilon_oc=budget["oc"] if oc_private else None,
            sensitivity_multiplier=sensitivity)
        if private:
            values, beta = release_leaves(
                k_leaf, grown.leaf_stats, alpha_link, clamp=clamp, zeta=zeta,
                epsilon_leaf=budget["leaf"], epsilon_beta=budget["beta"],
                sensitivity=sensitivity, m=m, leaf_mechanism=leaf_mechanism,
                beta_mode=beta_mode)
        else:
            values = leaf_link(grown.leaf_stats, alpha_link, zeta)
            beta = leveraging_coefficient(values, grown.leaf_stats, alpha_link / bound**2, m)
        live = t < active
        values, beta = jnp.where(live, values, 0.0), jnp.where(live, beta, 0.0)
        margin_sum = margin_sum + beta * values[grown.example_leaf]
        return margin_sum, (grown.feature, grown.threshold, values, beta, grown.alpha)

    _, (feature, threshold, values, beta, node_alpha) = jax.lax.scan(
        round_t, jnp.zeros(m, jnp.float32), jnp.arange(n_trees))
    return BoostedTrees(trees=DenseTree(feature=feature, threshold=threshold, leaf=values),
                        beta=beta, alpha=node_alpha)


def boosted_decision(model: BoostedTrees, codes: jax.Array) -> jax.Array:
    """``H(x) = Σ_t β_t·h̃_t(x)`` for every row of ``codes``, ``[m]``."""
    return jnp.einsum("t,tm->m", model.beta, apply_trees(model.trees, codes))


def boosted_proba(model: BoostedTrees, codes: jax.Array) -> jax.Array:
    """Class scores ``[m, 2]``: ``P(+1) = ψ^(1)^{-1}(H(x))``, the Matsushita (α = 1) inverse link
    of the score, strictly increasing in ``H`` (the α < 1 links are flat near 0 and would tie
    most scores at 1/2); ``P(+1) = 1/2`` exactly when ``H(x) = 0``."""
    positive = inverse_link(boosted_decision(model, codes), 1.0)
    return jnp.stack([1 - positive, positive], axis=-1)


def boosted_predict(model: BoostedTrees, codes: jax.Array) -> jax.Array:
    """``sign(H(x))`` as class indices, with ``sign(0) := +1`` (A22)."""
    return (boosted_decision(model, codes) >= 0).astype(jnp.int32)


__all__ = ["OBJECTIVE_CALIBRATION", "BoostedTrees", "fit_boosted", "boosted_decision",
           "boosted_proba", "boosted_predict", "release_leaves", "tree_budgets", "link_alpha",
           "link_bound", "leaf_link", "leveraging_coefficient"]
