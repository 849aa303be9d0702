"""Mα-boost: boosted, differentially private decision trees with the Mα loss — Nock & Henecka,
"Boosted and Differentially Private Ensembles of Decision Trees" (arXiv 2001.09384); spec
``docs/specs/boosted-dp-trees-malpha.md``.

Algorithm 1 (§3) as one ``lax.scan`` over the ``T`` trees. Round ``t``:

1. weights ``w_i = ψ^(α_LC)^{-1}(−y_i·H_{t−1}(x_i))`` of the *released* model (§3 implementation
   form, §4.1), kept in ``[ζ', 1 − ζ']``;
2. grow a complete Mα tree (§2; :func:`dpjax.trees.malpha.grow_malpha_tree`), its splits by a
   private selection under DP (permute-and-flip on the Mα criterion, §4.3), α fixed or
   objective-calibrated (§5);
3. release the leaf values and the leveraging coefficient ``β_t`` (§4.4–§4.5);
4. ``H_t = H_{t−1} + β_t·h̃_t``.

The row count ``m`` is private under add/remove neighbours: wherever the paper uses ``m`` (the
split sensitivity ``Δ^(α)(m)``, the normaliser of ``β_t``) a public size ``ñ`` stands in, either
declared or released first as a noisy count (a share ``size_share`` of ``ε``).

Budget (§4.2, §5.3): ``ε/T`` per tree (after the count); ``β_tree·ε/T`` for the tree's splits (a
share ``β_oc`` of it for the O.C estimates when O.C is private; the nodes of a level share their
part sequentially, ``budget="paper"``, or in parallel, ``"parallel"``), ``(1 − β_tree)·ε/T`` for its
leaves (a share ``beta_share`` of it for ``β_t`` when ``beta_mode="laplace"``), the leaves' part
spent per leaf (``/2^d``, sequential) or in parallel. Every mechanism reports its own cost; the
ledger is their sum.

Leaf mechanisms (spec §4.4–§4.5), all with exact discrete Laplace noise on a fixed-point grid
(:func:`dpjax.mechanisms.laplace_mechanism`):

* ``"value"`` + ``"fold"`` (default): ``β_t`` is folded into the leaf values before the noise
  and the folded values are clamped to ``[−α_LC, α_LC]`` (``|β_t·h_t| ≤ a·M² = α_LC`` when
  ``ñ >= m``; the spec clamps to ``[−M, M]``, ours is ``M/α_LC`` times tighter), noise of scale
  ``2·α_LC/ε_leaf``.
* ``"value"`` + ``"laplace"``: leaves ``clip(ψ(q̂), ±M)`` + noise ``2M/ε_leaf``, then
  ``β̃_t = β_t`` + noise ``2aM/(ñ·ε_β)``.
* ``"counts"`` + ``"post"``: noisy weighted class sums per leaf (sensitivity 1), leaves
  ``clip(ψ(q̃), ±M)`` and ``β_t`` both computed from them (post-processing); or ``"laplace"``.
* ``"paper_fast"``: ``β_t`` from the data with no noise (the paper's route (ii)); not private
  (the ledger says so).
"""

from __future__ import annotations

import collections

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.losses.proper import canonical_link, inverse_link
from dpjax.mechanisms.accounting import Cost, parallel
from dpjax.mechanisms.laplace import laplace_mechanism
from dpjax.mechanisms.rounding import round_down
from dpjax.trees.dense import DenseTree
from dpjax.trees.malpha import (
    OBJECTIVE_CALIBRATION,
    WEIGHT_UNIT,
    grow_malpha_tree,
    resolve_oc_alpha,
)
from dpjax.trees.predict import apply_trees

LEAF_MECHANISMS = ("value", "counts")
BETA_MODES = ("fold", "post", "laplace", "paper_fast")
LEAF_COMPOSITIONS = ("sequential", "parallel")
VALID_MODES = {("value", "fold"), ("value", "laplace"), ("value", "paper_fast"),
               ("counts", "post"), ("counts", "laplace"), ("counts", "paper_fast")}
WEIGHT_FLOOR = 1e-6  # ζ' of §3 (A21)


def check_modes(leaf_mechanism: str, beta_mode: str, leaf_composition: str) -> None:
    """The leaf-release modes that go together (§4.4–§4.5); ``ValueError`` otherwise."""
    if (leaf_mechanism, beta_mode) not in VALID_MODES:
        raise ValueError(f"leaf_mechanism={leaf_mechanism!r} does not go with "
                         f"beta_mode={beta_mode!r}; valid pairs: {sorted(VALID_MODES)}")
    if leaf_composition == "parallel" and leaf_mechanism != "counts":
        raise ValueError("leaf_composition='parallel' needs leaf_mechanism='counts': folded or "
                         "value leaves share data-dependent factors (spec §4.2)")


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
    values: jax.Array, stats: jax.Array, a: ArrayLike, size: ArrayLike,
    clip: ArrayLike | None = None,
) -> jax.Array:
    """``β_t = (a/m)·Σ_i w_i·y_i·h_t(x_i) = (a/m)·Σ_λ h_t(λ)·(w^1(λ) − w^{−1}(λ))`` (§3 step
    2.2, paper (142)) from leaf values ``[2**d]`` and leaf sums ``[2**d, 2]``. Under DP the
    normaliser ``m`` is the public size ``ñ`` (any public constant keeps the releases' bounds:
    the folded values are clamped, and ``β``'s sensitivity is ``2aM/ñ``). ``clip`` bounds each
    leaf's class difference (1-Lipschitz: one record still moves one difference by its
    weight)."""
    difference = stats[:, 1] - stats[:, 0]
    if clip is not None:
        difference = jnp.clip(difference, -clip, clip)
    return a / size * jnp.sum(values * difference)


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
    size: jax.Array,
    leaf_mechanism: str,
    beta_mode: str,
    leaf_composition: str,
) -> tuple[jax.Array, jax.Array, collections.OrderedDict[str, Cost]]:
    """Private leaf values ``h̃_t [2**d]`` and leveraging coefficient ``β_t`` (§4.4, §4.5),
    with the cost of every release.

    ``stats`` are the leaves' int32 fixed-point class sums (units of ``2**−WEIGHT_BITS``, exact),
    ``epsilon_leaf`` each leaf's budget (one release per leaf; with ``leaf_composition=
    "parallel"`` the disjoint leaves compose in parallel), ``epsilon_beta`` the budget of
    ``β̃_t`` (``beta_mode="laplace"`` only), ``sensitivity`` 1 (add/remove) or 2 (replace-one)
    for the weighted class sums (bounded value ranges need no multiplier), ``size`` the public
    sample size ``ñ`` (bounds the sums; normalises ``β``). Every release goes through
    :func:`dpjax.mechanisms.laplace_mechanism` (exact noise on a fixed-point grid).
    """
    k_leaf, k_beta = jax.random.split(key)
    a = alpha_link / clamp**2
    costs = collections.OrderedDict()
    if leaf_mechanism == "counts":
        noisy, cost = laplace_mechanism(k_leaf, stats, sensitivity * WEIGHT_UNIT, epsilon_leaf,
                                        bound=size * WEIGHT_UNIT, integer=True, event_ndim=1,
                                        label=f"L1 sens. {sensitivity:g}")
        noisy = noisy / WEIGHT_UNIT
        values = jnp.clip(leaf_link(noisy, alpha_link, zeta), -clamp, clamp)
        if beta_mode == "post":
            beta = leveraging_coefficient(values, noisy, a, size)
    elif beta_mode == "fold":
        stats = stats / WEIGHT_UNIT
        values = jnp.clip(leaf_link(stats, alpha_link, zeta), -clamp, clamp)
        folded = leveraging_coefficient(values, stats, a, size) * values
        noisy, cost = laplace_mechanism(k_leaf, folded, 2 * alpha_link, epsilon_leaf,
                                        bound=alpha_link, event_ndim=0, label="range 2α_LC")
        values, beta = jnp.clip(noisy, -alpha_link, alpha_link), jnp.float32(1.0)
    else:
        stats = stats / WEIGHT_UNIT
        values = jnp.clip(leaf_link(stats, alpha_link, zeta), -clamp, clamp)
        noisy, cost = laplace_mechanism(k_leaf, values, 2 * clamp, epsilon_leaf, bound=clamp,
                                        event_ndim=0, label="range 2M")
        values = jnp.clip(noisy, -clamp, clamp)
    costs["leaves"] = parallel(cost) if leaf_composition == "parallel" else cost
    if beta_mode in ("laplace", "paper_fast"):
        if leaf_mechanism == "counts":
            stats = stats / WEIGHT_UNIT
        # differences clipped to the public size bound the float32 rounding (beta_rounding)
        beta = leveraging_coefficient(values, stats, a, size, clip=size)
    if beta_mode == "laplace":
        beta, costs["leveraging coefficient β_t"] = laplace_mechanism(
            k_beta, beta, 2 * a * clamp / size + 2 * beta_rounding(a, clamp, stats.shape[0]),
            epsilon_beta, bound=2 * a * clamp, label="sens. 2aM/ñ + rounding")
    return values, beta, costs


def beta_rounding(a: ArrayLike, clamp: float, n_leaves: int) -> jax.Array:
    """Bound on the float32 rounding of ``β_t = (a/ñ)·Σ_λ h(λ)·d(λ)`` with ``|h| <= M`` and the
    leaf differences ``|d(λ)| <= ñ``: the conversions, products and the ``L = 2**d``-term sum in
    any order give ``|fl(β) − β| <= (L + 8)·2**−24·(a/ñ)·Σ|h·d| <= (L + 8)·2**−24·a·M·L``. Twice
    this (both neighbours) is added to ``β``'s sensitivity ``2aM/ñ``: with ``beta_mode=
    "laplace"`` the noise grows by ``1 + (L + 8)·L·ñ·2**−24`` (under 1% for ``L = 16``,
    ``ñ = 2000``); the counts and fold modes need no such margin."""
    return (n_leaves + 8) * 2.0**-24 * jnp.asarray(a) * clamp * n_leaves


def tree_budgets(
    epsilon: ArrayLike, beta_tree: ArrayLike, oc_private: ArrayLike, *, n_trees: ArrayLike,
    depth: int, beta_oc: float, beta_share: float, beta_mode: str, leaf_composition: str,
    size_share: float,
) -> dict[str, jax.Array]:
    """Per-mechanism budgets (§4.2, eq. (18); §5.3), each rounded down so that no float32
    rounding spends more than its share: ``size`` (the noisy row count, a share ``size_share``
    of ``ε``, 0 when the size is public), then per tree of ``(ε − size)/T``: ``splits`` (the
    tree's split total, spent as ``ε_k = splits/(d·2^k)`` per node), ``oc`` (each of the ``d``
    O.C releases, a share ``β_oc`` of the split budget), ``leaf`` (each leaf), ``beta``
    (``β̃_t``). ``oc_private`` (traced bool) says whether the O.C estimates are released."""
    epsilon = jnp.asarray(epsilon, jnp.float32)
    size = round_down(epsilon * size_share)
    per_tree = round_down(epsilon * (1 - size_share) / n_trees)
    beta_tree = jnp.asarray(beta_tree, jnp.float32)
    splits = round_down(beta_tree * per_tree)
    share_oc = jnp.where(oc_private, beta_oc, 0.0)
    predictions = round_down(per_tree * (1 - beta_tree))
    share_beta = beta_share if beta_mode == "laplace" else 0.0
    return {
        "size": size,
        "splits": round_down(splits * (1 - share_oc)),
        "oc": jnp.where(oc_private, round_down(splits * beta_oc / depth), 1.0),
        "leaf": round_down(predictions * (1 - share_beta) /
                           (2**depth if leaf_composition == "sequential" else 1)),
        "beta": jnp.where(share_beta > 0, round_down(predictions * share_beta), 1.0),
    }


def fit_boosted(
    key: jax.Array,
    codes: jax.Array,
    y: jax.Array,
    epsilon: jax.Array | None,
    *,
    alpha: ArrayLike = 1.0,
    beta_tree: ArrayLike = 0.5,
    size: ArrayLike | None = None,
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
    size_share: float = 0.05,
    budget: str = "paper",
    n_active: ArrayLike | None = None,
) -> tuple[BoostedTrees, collections.OrderedDict[str, Cost]]:
    """Mα-boost (Algorithm 1, spec §3) of ``n_trees`` complete depth-``depth`` Mα trees.

    Args:
      key: PRNG key, split into the noisy row count's key and the trees' key ``k``; tree ``t``
        uses ``fold_in(k, t)`` (split into its splits', O.C and leaves' streams).
      codes: uint8 ``[m, n]``; y: int ``[m]`` in ``{0, 1}`` (class 1 is ``y = +1``).
      epsilon: total budget (traced) or ``None`` for non-private boosting (argmin splits, purity
        stop, exact leaves, no clamp, ``M = M_ζ(α_LC)``).
      alpha: traced α strategy: a fixed ``α ∈ (0, 1]`` or ``OBJECTIVE_CALIBRATION`` (O.C).
      beta_tree: traced share of each tree's budget spent on its splits (§4.2).
      size: the public sample size ``ñ`` (traced): a declared size, or the row count under
        replace-one (where it is public). ``None`` under DP: the row count is private (add/
        remove), so a noisy count is released first with a share ``size_share`` of ``ε``
        (exact discrete Laplace, sensitivity 1). ``ñ`` sets the split sensitivity
        ``Δ^(α)(ñ)`` (the criterion's class sums are clamped to it), bounds the released sums
        and normalises ``β_t``. Without DP the row count is used.
      n_trees, depth: static ``T`` and ``d``.
      sensitivity: 1 (add/remove-one) or 2 (replace-one) (§4.1).
      clamp: ``M`` (DP leaf values are clamped to ``[−M, M]``; ``a = α_LC/M²``).
      zeta: ``ζ``, the clamp of ``q`` before the link (§2.5).
      oc_link_alpha: ``α_LC`` under O.C (§5.4).
      leaf_mechanism, beta_mode: see the module docstring (§4.4–§4.5).
      leaf_composition: ``"sequential"`` (``ε_leaf = β_pred·ε/(T·2^d)``) or ``"parallel"``
        (``β_pred·ε/T``, the leaves partition the data; counts mechanism only, §4.2).
      oc_alpha: ``"private"`` (per-level noisy calibration, §5.3) or ``"exact"`` (§5.2);
        ``None``: private under DP, exact without.
      beta_oc: share of the split budget for the O.C releases (§5.3).
      beta_share: share of the leaves' budget for ``β̃_t`` when ``beta_mode="laplace"``.
      size_share: share of ``ε`` for the noisy row count (only when ``size`` is ``None``).
      budget: how the nodes of a level share the split budget: ``"paper"`` (paper (18),
        ``/2^k``) or ``"parallel"`` (the nodes partition the records; spec §4.2,
        :func:`dpjax.trees.split_level_epsilons`).
      n_active: optional traced number of trees ``T' <= n_trees`` actually boosted: the budget
        is split over ``T'`` trees and rounds ``t >= T'`` release nothing (zero splits, leaves
        and ``β``, α of 1, zero cost), so the first ``T'`` trees equal a ``T'``-tree fit and one
        compiled program serves every ``T' <= n_trees`` (e.g. a sweep over ``T ∈ {2, 5, 10,
        20}``).

    Returns:
      ``(model, costs)``: the :class:`BoostedTrees` and the cost of every release (empty
      without DP): ``"row count"`` (when released), and per tree (leading axis ``T``)
      ``"splits at depth k"`` ``[T, 2**k]``, ``"O.C level errors"``, ``"leaves"`` and
      ``"leveraging coefficient β_t"``.
    """
    if n_classes != 2:
        raise ValueError(f"Mα-boost is a binary classifier; got {n_classes} classes")
    check_modes(leaf_mechanism, beta_mode, leaf_composition)
    split_budget = budget
    private = epsilon is not None
    oc_alpha = resolve_oc_alpha(oc_alpha, private)
    sign = 2.0 * jnp.asarray(y, jnp.float32) - 1.0
    alpha = jnp.asarray(alpha, jnp.float32)
    alpha_link = link_alpha(alpha, oc_link_alpha)
    oc_private = private and oc_alpha == "private" and depth > 1
    active = n_trees if n_active is None else jnp.asarray(n_active, jnp.float32)
    costs: collections.OrderedDict[str, Cost] = collections.OrderedDict()
    k_size, key = jax.random.split(key)
    if private:
        budget = tree_budgets(epsilon, beta_tree, (alpha < 0) & oc_private, n_trees=active,
                              depth=depth, beta_oc=beta_oc, beta_share=beta_share,
                              beta_mode=beta_mode, leaf_composition=leaf_composition,
                              size_share=size_share if size is None else 0.0)
        if size is None:
            noisy_count, costs["row count"] = laplace_mechanism(
                k_size, jnp.float32(codes.shape[0]), 1.0,
                budget["size"], integer=True, label="sens. 1")
            size = jnp.maximum(noisy_count, 1.0)
        size = jnp.asarray(size, jnp.float32)
        bound = jnp.float32(clamp)
    else:
        size = jnp.float32(codes.shape[0])
        bound = link_bound(alpha_link, zeta)

    def round_t(margin_sum: jax.Array, t: jax.Array):
        k_tree, k_leaf = jax.random.split(jax.random.fold_in(key, t))
        weights = jnp.clip(inverse_link(-sign * margin_sum, alpha_link),
                           WEIGHT_FLOOR, 1 - WEIGHT_FLOOR)
        grown, tree_costs = grow_malpha_tree(
            k_tree, codes, weights, y, depth, n_codes_per_feature, alpha,
            budget["splits"] if private else None, size=size if private else None,
            oc_alpha=oc_alpha, epsilon_oc=budget["oc"] if oc_private else None,
            sensitivity_multiplier=sensitivity, budget=split_budget)
        if private:
            values, beta, leaf_costs = release_leaves(
                k_leaf, grown.leaf_stats, alpha_link, clamp=clamp, zeta=zeta,
                epsilon_leaf=budget["leaf"], epsilon_beta=budget["beta"],
                sensitivity=sensitivity, size=size, leaf_mechanism=leaf_mechanism,
                beta_mode=beta_mode, leaf_composition=leaf_composition)
            tree_costs.update(leaf_costs)
        else:
            values = leaf_link(grown.leaf_stats, alpha_link, zeta)
            beta = leveraging_coefficient(values, grown.leaf_stats, alpha_link / bound**2, size)
        live = t < active        # an inactive round releases nothing: no split, leaf or α
        values, beta = jnp.where(live, values, 0.0), jnp.where(live, beta, 0.0)
        feature, threshold = jnp.where(live, grown.feature, 0), jnp.where(live, grown.threshold, 0)
        node_alpha = jnp.where(live, grown.alpha, 1.0)
        tree_costs = collections.OrderedDict(
            (what, cost.gated(live)) for what, cost in tree_costs.items())
        margin_sum = margin_sum + beta * values[grown.example_leaf]
        return margin_sum, (feature, threshold, values, beta, node_alpha, tree_costs)

    _, (feature, threshold, values, beta, node_alpha, tree_costs) = jax.lax.scan(
        round_t, jnp.zeros(codes.shape[0], jnp.float32), jnp.arange(n_trees))
    model = BoostedTrees(trees=DenseTree(feature=feature, threshold=threshold, leaf=values),
                         beta=beta, alpha=node_alpha)
    costs.update(tree_costs)
    return model, costs


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


__all__ = ["OBJECTIVE_CALIBRATION", "BoostedTrees", "check_modes", "fit_boosted",
           "boosted_decision", "boosted_proba", "boosted_predict", "release_leaves",
           "tree_budgets", "link_alpha", "beta_rounding", "link_bound", "leaf_link",
           "leveraging_coefficient"]
