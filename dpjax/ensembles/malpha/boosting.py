"""Mα-boost: boosted, differentially private decision trees with the Mα loss — Nock & Henecka,
"Boosted and Differentially Private Ensembles of Decision Trees" (arXiv 2001.09384); spec
``docs/specs/boosted-dp-trees-malpha.md``.

Algorithm 1 (§3) as one ``lax.scan`` over the ``T`` trees. Round ``t``:

1. weights ``w_i = ψ^(α_LC)^{-1}(−y_i·H_{t−1}(x_i))`` of the *released* model (§3 implementation
   form, §4.1), kept in ``[ζ', 1 − ζ']``;
2. grow a complete Mα tree (§2; :func:`dpjax.ensembles.malpha.tree.grow_malpha_tree`), its
   splits by a private selection under DP (permute-and-flip on the Mα criterion, §4.3), α fixed
   or objective-calibrated (§5);
3. release the leaf values and the leveraging coefficient ``β_t`` (§4.4–§4.5);
4. ``H_t = H_{t−1} + β_t·h̃_t``.

The row count ``m`` is private under add/remove neighbours: wherever the paper uses ``m`` (the
split sensitivity ``Δ^(α)(m)``, the normaliser of ``β_t``) a public size ``ñ`` stands in, either
declared or released first as a noisy count (a share ``size_share`` of ``ε``,
:func:`dpjax.mechanisms.release_size`).

Budget (§4.2, §5.3): ``ε/T`` per tree (after the count); ``β_tree·ε/T`` for the tree's splits (a
share ``β_oc`` of it for the O.C estimates when O.C is private; the nodes of a level share their
part sequentially, ``budget="paper"``, or in parallel, ``"parallel"``), ``(1 − β_tree)·ε/T`` for its
leaves (a share ``beta_share`` of it for ``β_t`` when ``beta_mode="laplace"``), the leaves' part
spent per leaf (``/2^d``, sequential) or in parallel (:func:`tree_budgets`, shares of
:func:`dpjax.privacy.composition.share`). Every mechanism reports its own cost; the ledger is
their sum. The leaves and ``β_t`` are released as :mod:`dpjax.ensembles.malpha.leaves` says.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.ensembles.malpha.leaves import (
    leaf_link,
    leveraging_coefficient,
    link_alpha,
    link_bound,
    release_leaves,
)
from dpjax.ensembles.malpha.model import MalphaModel
from dpjax.ensembles.malpha.tree import grow_malpha_tree, resolve_oc_alpha
from dpjax.learner import FitContext, records
from dpjax.losses.proper import canonical_link, inverse_link
from dpjax.mechanisms.size import (
    AGAIN_LABEL,
    CLASS_COUNTS_STREAM,
    MAX_SIZE,
    class_totals,
    pooled_counts,
    release_class_counts_at,
    release_size,
)
from dpjax.mechanisms.size import LABEL as SIZE_LABEL
from dpjax.privacy import Cost
from dpjax.privacy.composition import share
from dpjax.trees.dense import DenseTree

if TYPE_CHECKING:
    from dpjax.ensembles.malpha.config import MalphaBoosted

WEIGHT_FLOOR = 1e-6  # ζ' of §3 (A21)
PRIOR_LABEL = "class counts (released size, prior)"
MAJORITY_LABEL = AGAIN_LABEL


def affordable_trees(size: ArrayLike, epsilon: ArrayLike, beta_tree: ArrayLike, depth: int,
                     sensitivity: float, min_signal: ArrayLike) -> jax.Array:
    """The public schedule of the default budget: the most trees ``T'`` whose leaves still
    hold, on average, ``min_signal`` times the Laplace scale of their noisy class sums. With
    ``T'`` trees the leaves of one tree get ``(1 − β_tree)·ε/T'`` in parallel (scale
    ``Δ·T'/((1 − β_tree)·ε)``) and an average leaf holds ``ñ/2^d`` records, so
    ``T' = ⌊ñ·(1 − β_tree)·ε / (2^d·Δ·min_signal)⌋``; 0 means the trees' budget goes to the
    class counts (the majority fallback). A function of the released size, ``ε`` and the
    configuration only."""
    scale_per_tree = sensitivity / jnp.maximum(
        (1.0 - jnp.asarray(beta_tree, jnp.float32)) * jnp.asarray(epsilon, jnp.float32), 1e-30)
    signal = jnp.asarray(size, jnp.float32) / (2.0**depth * jnp.maximum(
        jnp.asarray(min_signal, jnp.float32), 1e-30))
    return jnp.floor(signal / scale_per_tree)


def prior_margin(counts: jax.Array, zeta: float, clamp: float) -> jax.Array:
    """``H_0 = ψ^(1)(q̃)``, the Matsushita link (the one :func:`malpha_proba` inverts) of the
    released share ``q̃`` of the second class (noisy counts floored at 1/2, ``q̃`` clamped to
    ``[ζ, 1 − ζ]``), clipped to ``[−M, M]``: the score before any tree (post-processing)."""
    counts = jnp.maximum(counts, 0.5)
    q = jnp.clip(counts[1] / counts.sum(), zeta, 1 - zeta)
    return jnp.clip(canonical_link(q, 1.0), -clamp, clamp)


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
    per_tree = share(epsilon, 1 - size_share, n_trees)
    beta_tree = jnp.asarray(beta_tree, jnp.float32)
    splits = share(per_tree, beta_tree)
    share_oc = jnp.where(oc_private, beta_oc, 0.0)
    predictions = share(per_tree, 1 - beta_tree)
    share_beta = beta_share if beta_mode == "laplace" else 0.0
    return {
        "size": share(epsilon, size_share),
        "splits": share(splits, 1 - share_oc),
        "oc": jnp.where(oc_private, share(splits, beta_oc, depth), 1.0),
        "leaf": share(predictions, 1 - share_beta,
                      2**depth if leaf_composition == "sequential" else 1),
        "beta": jnp.where(share_beta > 0, share(predictions, share_beta), 1.0),
    }


def fit(config: MalphaBoosted, key: jax.Array, codes: jax.Array, y: jax.Array,
        epsilon: jax.Array | None, context: FitContext, *, n_active: ArrayLike | None = None,
        **traced: ArrayLike) -> tuple[MalphaModel, collections.OrderedDict[str, Cost]]:
    """Mα-boost (Algorithm 1, spec §3) of ``config.n_trees`` complete depth-``config.depth`` Mα
    trees; the configuration's fields are documented on
    :class:`~dpjax.ensembles.malpha.MalphaBoosted`.

    Args:
      config: the configuration; its traced fields ``alpha`` (a fixed ``α ∈ (0, 1]`` or O.C)
        and ``beta_tree`` (the share of each tree's budget spent on its splits, §4.2) are taken
        from ``traced`` where given.
      key: PRNG key, split into the noisy row count's key and the trees' key ``k``; tree ``t``
        uses ``fold_in(k, t)`` (split into its splits', O.C and leaves' streams).
      codes: uint8 ``[m, n]``; y: int ``[m]`` in ``{0, 1}`` (class 1 is ``y = +1``).
      epsilon: total budget (traced) or ``None`` for non-private boosting (argmin splits, purity
        stop, exact leaves, no clamp, ``M = M_ζ(α_LC)``).
      context: the codes per feature, the classes (two), the sensitivity (1 add/remove-one, 2
        replace-one, §4.1) and the public sample size ``ñ`` (traced): a declared size, or the
        row count under replace-one (where it is public). ``None`` under DP: the row count is
        private (add/remove), so a noisy count is released first with a share ``size_share``
        of ``ε`` (:func:`dpjax.mechanisms.release_size`). ``ñ`` sets the split sensitivity
        ``Δ^(α)(ñ)`` (the criterion's class sums are clamped to it), bounds the released sums
        and normalises ``β_t``. Without DP the row count is used.
      n_active: optional traced number of trees ``T' <= n_trees`` actually boosted: the budget
        is split over ``T'`` trees and rounds ``t >= T'`` release nothing (zero splits, leaves
        and ``β``, α of 1, zero cost), so the first ``T'`` trees equal a ``T'``-tree fit and one
        compiled program serves every ``T' <= n_trees`` (e.g. a sweep over ``T ∈ {2, 5, 10,
        20}``).

    Returns:
      ``(model, costs)``: the :class:`MalphaModel` and the cost of every release (empty
      without DP): ``"row count"`` (when released), and per tree (leading axis ``T``)
      ``"splits at depth k"`` ``[T, 2**k]``, ``"O.C level errors"``, ``"leaves"`` and
      ``"leveraging coefficient β_t"``.
    """
    traced = config.resolve_traced(traced)
    alpha, beta_tree = traced["alpha"], traced["beta_tree"]
    n_trees, depth, clamp, zeta = config.n_trees, config.depth, config.clamp, config.zeta
    modes = config.leaf_modes
    leaf_mechanism, beta_mode = modes["leaf_mechanism"], modes["beta_mode"]
    leaf_composition = modes["leaf_composition"]
    sensitivity, size = context.sensitivity, context.size
    if context.n_classes != 2:
        raise ValueError(f"Mα-boost is a binary classifier; got {context.n_classes} classes")
    private = epsilon is not None
    oc_alpha = resolve_oc_alpha(config.oc_alpha, private)
    sign = 2.0 * jnp.asarray(y, jnp.float32) - 1.0
    n_records = jnp.sum(records(y, 2), dtype=jnp.int32)        # padding rows (label 2) aside
    alpha = jnp.asarray(alpha, jnp.float32)
    alpha_link = link_alpha(alpha, config.oc_link_alpha)
    oc_private = private and oc_alpha == "private" and depth > 1
    active = n_trees if n_active is None else jnp.floor(jnp.asarray(n_active, jnp.float32))
    costs: collections.OrderedDict[str, Cost] = collections.OrderedDict()
    k_size, key = jax.random.split(key)
    margin = jnp.float32(0.0)
    with_prior = private and config.budget == "parallel" and config.prior_share > 0.0
    if with_prior:      # a share of ε for the class counts: the released size and H_0
        k_prior, k_majority = jax.random.split(jax.random.fold_in(k_size, CLASS_COUNTS_STREAM))
        prior_epsilon = share(epsilon, config.prior_share)
        epsilon = share(epsilon, 1.0 - config.prior_share)
        totals = class_totals(y, 2)
        # the prior, and the fallback's second release at the trees' budget (used where no
        # tree is affordable): one sampler draws both
        (prior, costs[PRIOR_LABEL]), (again, majority_cost) = release_class_counts_at(
            [k_prior, k_majority], totals, [prior_epsilon, epsilon], sensitivity)
        if size is None:
            size = jnp.clip(jnp.maximum(prior, 0.0).sum(), 1.0, MAX_SIZE)
        active = jnp.minimum(active, affordable_trees(size, epsilon, beta_tree, depth,
                                                      sensitivity, traced["min_signal"]))
        # no tree affordable: the trees' budget released the class counts again (pooled)
        fallback = active < 1
        costs[MAJORITY_LABEL] = majority_cost.gated(fallback)
        pooled = pooled_counts([(prior, prior_epsilon), (again, epsilon)])
        # H_0 is the fallback's alone: the trees' scores β_t·h_t live on their own scale
        # (β_t = (a/ñ)·Σ h·d with a = α/M²), where any prior margin would swamp them
        margin = jnp.where(fallback, prior_margin(pooled, zeta, clamp), 0.0)
    if private:
        budget = tree_budgets(epsilon, beta_tree, (alpha < 0) & oc_private,
                              n_trees=jnp.maximum(active, 1.0), depth=depth,
                              beta_oc=config.beta_oc, beta_share=config.beta_share,
                              beta_mode=beta_mode, leaf_composition=leaf_composition,
                              size_share=config.size_share if size is None else 0.0)
        if size is None:
            size, costs[SIZE_LABEL] = release_size(k_size, n_records, budget["size"])
        size = jnp.asarray(size, jnp.float32)
        bound = jnp.float32(clamp)
    else:
        size = n_records.astype(jnp.float32)
        bound = link_bound(alpha_link, zeta)

    def round_t(margin_sum: jax.Array, t: jax.Array):
        k_tree, k_leaf = jax.random.split(jax.random.fold_in(key, t))
        weights = jnp.clip(inverse_link(-sign * margin_sum, alpha_link),
                           WEIGHT_FLOOR, 1 - WEIGHT_FLOOR)
        grown, tree_costs = grow_malpha_tree(
            k_tree, codes, weights, y, depth, context.n_codes_per_feature, alpha,
            budget["splits"] if private else None, size=size if private else None,
            oc_alpha=oc_alpha, epsilon_oc=budget["oc"] if oc_private else None,
            sensitivity_multiplier=sensitivity, budget=config.budget)
        if private:
            values, beta, leaf_costs = release_leaves(
                k_leaf, grown.leaf_stats, alpha_link, clamp=clamp, zeta=zeta,
                epsilon_leaf=budget["leaf"], epsilon_beta=budget["beta"],
                sensitivity=sensitivity, size=size, leaf_mechanism=leaf_mechanism,
                beta_mode=beta_mode, leaf_composition=leaf_composition,
                shrinkage=traced["shrinkage"] if with_prior else 0.0)
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
        round_t, jnp.full(codes.shape[0], margin), jnp.arange(n_trees))
    model = MalphaModel(trees=DenseTree(feature=feature, threshold=threshold, leaf=values),
                         beta=beta, alpha=node_alpha, prior=margin)
    costs.update(tree_costs)
    return model, costs


__all__ = ["MAJORITY_LABEL", "PRIOR_LABEL", "WEIGHT_FLOOR", "affordable_trees", "fit",
           "prior_margin", "tree_budgets"]
