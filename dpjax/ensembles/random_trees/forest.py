"""(Differentially private) completely random decision-tree forests — Bojarski, Choromanska,
Choromanski & LeCun (2014); spec ``docs/specs/dp-random-decision-trees.md``.

The structure of each of the ``k`` trees comes from the key alone (spec §1.2); only the leaf
class counts touch the data. Under DP every counter of every leaf (empty ones included) gets
Laplace noise of scale ``k * Delta / eps`` (Algorithm 2, §3.1: the paper's ``g(eta/k)``, where
the paper's privacy budget ``eta`` is our ``epsilon``) — exact discrete Laplace noise, since the
counts are integers (:func:`dpjax.mechanisms.laplace_mechanism`); ``Delta = 1`` for
add/remove-one neighbours and 2 for replace-one (A2). Each tree's count vector is one
``eps/k``-DP release, so the forest is ``eps``-DP by sequential composition (§3.2).

Multi-class is the spec's A11 extension: ``C`` counters per leaf, each noised the same way, the
leaf distribution ``theta`` their normalisation, a uniform Dirichlet(1) draw as the fallback
(for ``C = 2`` exactly the binary algorithm's ``theta ~ U[0, 1]``).

The same function fits the RF-L / RF-E baselines of Nock & Henecka (spec
``docs/specs/boosted-dp-trees-malpha.md`` §6.5): each leaf's counts are released on their own
(``budget="paper"``: ``eps / (k * 2^d)`` per leaf, the paper's "evenly among the leaves"; by
default, ``budget="parallel"``, a tree's leaves partition its records and are released together
at ``eps / k``, parallel composition), with the Laplace mechanism and the noisy argmax as the
leaf label (RF-L, ``leaf_estimate="label"``) or a private selection on the counts (RF-E,
``noise="exponential"``, utility sensitivity 1; permute-and-flip, which has the exponential
mechanism's guarantee), and the forest takes the majority vote.

:func:`fit` is the composition of pure stages, public so that experiments build on them
instead of copying them: :func:`forest_structures` (from the key alone),
:func:`forest_leaf_index` and :func:`leaf_class_counts` (the only data access),
:func:`release_counts` (the one private release, at :func:`leaf_epsilon`),
:func:`leaf_estimates` (post-processing, :func:`leaf_distribution`), and :func:`vote` (behind
:func:`forest_proba` / :func:`forest_predict`), which can count only the first ``n_active``
trees of a nested forest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

from dpjax.learner import FitContext
from dpjax.mechanisms import laplace_mechanism, permute_and_flip
from dpjax.mechanisms.size import (
    AGAIN_LABEL,
    CLASS_COUNTS_STREAM,
    pooled_counts,
    release_class_counts_at,
)
from dpjax.privacy import Cost, fixed_point, parallel
from dpjax.privacy.composition import parts, share
from dpjax.trees import DenseTree, apply_trees, leaf_index, leaf_stats, random_splits

if TYPE_CHECKING:
    from dpjax.ensembles.random_trees.config import Forest

VOTING = ("majority", "threshold", "probabilistic")
NOISE = ("laplace", "exponential")
LEAF_ESTIMATES = ("smoothed", "paper", "label")
FOREST_BUDGETS = ("parallel", "paper")
"""A tree's leaves released together at ``ε/k`` (parallel composition over the disjoint
leaves), or each leaf at ``ε/(k·2^d)`` (Nock & Henecka's split)."""
COSTS = {"laplace": "leaf class counts", "exponential": "leaf labels"}
"""The name of each noise's release in the costs of :func:`fit`."""


def tree_keys(key: jax.Array, n_trees: int) -> jax.Array:
    """Structure keys of trees ``0..n_trees-1``: ``fold_in(key, i)``, so the first ``k`` trees
    of a larger forest are exactly the trees of a ``k``-tree forest (nested forests)."""
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n_trees))


def leaf_distribution(key: jax.Array, counts: jax.Array, estimate: str,
                      pseudo: jax.Array | None = None) -> jax.Array:
    """Leaf class distributions ``theta [..., C]`` from (noisy) counts ``[..., C]``.

    ``"paper"`` (Algorithm 2 step 3, A8, A9, A11): ``theta = counts / sum(counts)``, except where
    a count is negative or all are zero: there ``theta`` is a fresh uniform draw on the simplex.

    ``"label"`` (RF-L, Nock & Henecka §6.5): the one-hot of the (noisy) counts' argmax, ties to
    the lower class.

    ``"smoothed"`` [not in paper; A9's flagged alternative]: ``theta = (max(counts, 0) + 1) /
    sum(max(counts, 0) + 1)``, the add-one (Laplace-rule) estimate of the clamped counts. Both are
    post-processing of the same noisy counts, so the privacy guarantee is identical; smoothing
    stops empty and noise-dominated leaves from voting with a random ``theta``, which lifts
    accuracy a lot at small budgets (banknote, eps = 1: ~0.96 vs ~0.89, see the issue note).

    ``pseudo`` (``[C]``, released or public): pseudo-counts added to the counts (after the
    add-one of ``"smoothed"``, before the argmax of ``"label"``): a leaf whose evidence is
    weaker than them follows them (:func:`fit`'s shrinkage to the released class prior). The
    ``"paper"`` estimate ignores them (it is Algorithm 2 exactly).
    """
    if estimate == "label":
        scores = counts if pseudo is None else counts + pseudo
        return jax.nn.one_hot(scores.argmax(-1), counts.shape[-1], dtype=counts.dtype)
    if estimate == "smoothed":
        clamped = jnp.maximum(counts, 0.0) + 1.0 + (0.0 if pseudo is None else pseudo)
        return clamped / clamped.sum(-1, keepdims=True)
    fallback = fallback_leaves(counts)
    uniform = jax.random.exponential(key, counts.shape)
    uniform = uniform / uniform.sum(-1, keepdims=True)
    total = jnp.where(fallback, 1.0, counts.sum(-1))
    return jnp.where(fallback[..., None], uniform, counts / total[..., None])


def fallback_leaves(counts: jax.Array) -> jax.Array:
    """Where the ``"paper"`` estimate of :func:`leaf_distribution` falls back to a uniform draw:
    bool ``[...]`` of counts ``[..., C]`` with a negative count or all counts zero."""
    return (counts < 0).any(-1) | (counts == 0).all(-1)


def leaf_epsilon(epsilon: jax.Array, n_trees: int, depth: int, budget: str) -> jax.Array:
    """Budget of one released count vector, rounded down: a whole tree's (``eps / k``,
    ``"parallel"``: the tree's leaves are disjoint and released as one vector) or one leaf's
    (``eps / (k * 2^d)``, ``"paper"``)."""
    return share(epsilon, 1.0, n_trees * (2**depth if budget == "paper" else 1))


def forest_structures(
    key: jax.Array,
    n_trees: int,
    depth: int,
    n_codes_per_feature: jax.Array,
    threshold_range: str,
) -> tuple[jax.Array, jax.Array]:
    """The forest's data-independent structures (spec §1.2): split arrays ``(feature,
    threshold)``, int32 ``[n_trees, 2**depth - 1]``, tree ``i`` drawn by
    :func:`dpjax.trees.random_splits` from ``tree_keys(key, n_trees)[i]`` -- so the first ``k``
    trees drawn from a key are the ``k``-tree forest of that key."""
    return jax.vmap(random_splits, in_axes=(0, None, None, None))(
        tree_keys(key, n_trees), depth, n_codes_per_feature, threshold_range)


def forest_leaf_index(feature: jax.Array, threshold: jax.Array, codes: jax.Array) -> jax.Array:
    """Leaf reached by each row of ``codes`` (uint8 ``[m, n]``) in every tree of split arrays
    ``[n_trees, 2**d - 1]``: int32 ``[n_trees, m]``."""
    return jax.vmap(leaf_index, in_axes=(0, 0, None))(feature, threshold, codes)


def weight_units(weights: jax.Array) -> jax.Array:
    """Record weights in ``[0, 1]`` as int32 fixed-point units
    (:func:`dpjax.privacy.fixed_point.to_units`, rounded down, so a record never counts more
    than its weight): exact int32 sums of up to :data:`dpjax.privacy.fixed_point.MAX_ROWS`
    rows."""
    return fixed_point.to_units(jnp.clip(weights, 0.0, 1.0))


def leaf_class_counts(leaves: jax.Array, y: jax.Array, n_classes: int, n_leaves: int,
                      weights: jax.Array | None = None) -> jax.Array:
    """Exact class counts, int32 ``[n_trees, n_leaves, n_classes]``, of the rows with labels
    ``y`` (int ``[m]``) that reach ``leaves`` (``[n_trees, m]``, :func:`forest_leaf_index`):
    records, or with ``weights`` (float ``[m]`` in ``[0, 1]``) their weights in fixed-point
    units (:func:`weight_units`). The forest's only statistic of the data (the
    sensitive input of :func:`release_counts`)."""
    onehot = jax.nn.one_hot(y, n_classes, dtype=jnp.int32)     # int32: exact counts
    if weights is not None:
        onehot = onehot * weight_units(weights)[:, None]
    return jax.vmap(leaf_stats, in_axes=(0, None, None))(leaves, onehot, n_leaves)


COUNT_CAP = 2**30
"""Leaf counts (units) past this tie in the exponential selection: beyond ``10**9`` records of
one class in one leaf, or any weighted fit's row limit."""
OFFSET_CAP = 2.0**29
"""The exponential selection's pseudo-count offset is capped here (units)."""


def release_counts(
    key: jax.Array,
    counts: jax.Array,
    epsilon_each: jax.Array,
    *,
    sensitivity: float,
    noise: str,
    budget: str,
    unit: int = 1,
    offset: jax.Array | None = None,
) -> tuple[jax.Array, Cost]:
    """The forest's private release of its leaf counts ``[n_trees, L, C]`` (int32).

    Args:
      key: PRNG key of this release (never shared with another one).
      counts: exact counts of :func:`leaf_class_counts`.
      epsilon_each: budget of one released vector, traced (:func:`leaf_epsilon`: a tree's
        counts for ``budget="parallel"``, a leaf's for ``"paper"``).
      sensitivity: L1 sensitivity of one tree's counts (1 add/remove, 2 replace-one).
      noise: ``"laplace"``: exact discrete Laplace noise on every counter (empty leaves
        included); ``"exponential"``: each leaf's label selected by permute-and-flip on its
        counts (utility sensitivity 1).
      unit: ``counts`` are in units of ``1/unit`` of a record (weighted counts): one record
        moves a counter by at most ``unit``, and the released counts are divided by it.
      offset: ``[C]`` records added to every leaf's utility before the exponential selection
        (a released class prior: data-independent given the release, so the sensitivity is
        unchanged).

    Returns:
      ``(release, cost)``: noisy counts float32 ``[n_trees, L, C]`` (Laplace) or labels int32
      ``[n_trees, L]`` (exponential), and the cost of each released vector, ``[n_trees]``
      (``"parallel"``) or ``[n_trees, L]`` (``"paper"``).
    """
    if noise not in NOISE:
        raise ValueError(f"noise must be one of {NOISE}, got {noise!r}")
    per_leaf = budget == "paper"
    if noise == "exponential":
        # One example moves each class's count of a leaf by at most 1 under either relation; a
        # replaced example can touch two leaves of a tree, which share the tree's budget then.
        touched = 1 if per_leaf else int(sensitivity)
        # exact integer utilities, compared by their int32 gaps (permute_and_flip): the
        # offset in whole units (float32 rounding of a fractional offset could widen a
        # neighbour's gap past the sensitivity), each part capped (a cap is 1-Lipschitz; the
        # offset's is post-processing) so that their sum stays within int32
        utility = jnp.minimum(counts, COUNT_CAP)
        if offset is not None:
            utility = utility + jnp.minimum(jnp.floor(unit * offset),
                                            OFFSET_CAP).astype(utility.dtype)
        label, cost = permute_and_flip(key, utility, float(unit), parts(epsilon_each, touched),
                                       label="sens. 1")
        return label, (cost if per_leaf else parallel(cost, touched=touched))
    noisy, cost = laplace_mechanism(key, counts, sensitivity * unit, epsilon_each,
                                    integer=True, event_ndim=1 if per_leaf else 2,
                                    label=f"L1 sens. {sensitivity:g}")
    return (noisy if unit == 1 else noisy / unit), cost


def leaf_estimates(key: jax.Array, release: jax.Array, n_classes: int, *,
                   noise: str, estimate: str, pseudo: jax.Array | None = None) -> jax.Array:
    """Leaf class distributions ``theta [n_trees, L, C]`` from a :func:`release_counts` release
    (post-processing): the one-hot of the released labels (``"exponential"``) or
    :func:`leaf_distribution` of the noisy counts (with ``pseudo``-counts), ``key`` seeding its
    fallback draws."""
    if noise == "exponential":
        return jax.nn.one_hot(release, n_classes, dtype=jnp.float32)
    return leaf_distribution(key, release, estimate, pseudo)


def fit(config: Forest, key: jax.Array, codes: jax.Array, y: jax.Array,
        epsilon: jax.Array | None, context: FitContext,
        traced: dict[str, jax.Array] | None = None) -> tuple[DenseTree, dict[str, Cost]]:
    """Fit a forest of ``config.n_trees`` random trees of height ``config.depth`` (spec
    Algorithms 1 and 2; the config's fields are documented on
    :class:`~dpjax.ensembles.random_trees.Forest`).

    Args:
      config: the forest's configuration (:class:`~dpjax.ensembles.random_trees.RandomTrees`,
        ``RFLaplace``, ``RFExponential``).
      key: PRNG key of the releases (noise and fallback draws use independent subkeys).
      codes: uint8 ``[m, n]``; y: int32 ``[m]`` class indices.
      epsilon: total budget (the paper's ``eta``), traced; ``None`` fits without noise.
      context: the codes per feature, the classes, the count sensitivity (1 add/remove, 2
        replace-one), the ``structure_key`` of the data-independent tree structures (default:
        derived from ``key``; structures read no data, so models that differ only in their
        budget may share them, as a sweep does, while every release keeps its own noise), and
        the record ``weights`` (float ``[m]`` in ``[0, 1]``, or ``None``: every record counts
        1; a record still moves each counter by at most 1, so the sensitivities and the budget
        are unchanged; the counts are exact fixed point, :func:`weight_units`).

    Returns:
      ``(forest, costs)``: a batched :class:`DenseTree` with ``[n_trees]`` leading axis and
      leaf ``theta [n_trees, 2**depth, n_classes]``, and ``{COSTS[noise]: cost}`` (``"leaf
      class counts"`` or ``"leaf labels"``) with one cost per released vector (``[n_trees]``
      or ``[n_trees, 2**depth]``, :func:`release_counts`; empty without DP).
    """
    n_trees, depth, n_classes = config.n_trees, config.depth, context.n_classes
    k_structure, k_noise, k_fallback = jax.random.split(key, 3)
    if context.structure_key is not None:
        k_structure = context.structure_key
    feature, threshold = forest_structures(k_structure, n_trees, depth,
                                           context.n_codes_per_feature, config.threshold_range)
    counts = leaf_class_counts(forest_leaf_index(feature, threshold, codes), y, n_classes,
                               2**depth, context.weights)
    unit = 1 if context.weights is None else fixed_point.UNIT
    if epsilon is None:
        leaf = leaf_distribution(k_fallback, counts.astype(jnp.float32) / unit,
                                 config.leaf_estimate)
        return DenseTree(feature=feature, threshold=threshold, leaf=leaf), {}
    costs: dict[str, Cost] = {}
    with_prior = config.budget == "parallel" and config.prior_share > 0.0
    if with_prior:      # a share of ε for the class counts: the released size and the majority
        traced = config.resolve_traced(traced or {})
        k_prior, k_majority = jax.random.split(jax.random.fold_in(key, CLASS_COUNTS_STREAM))
        prior_epsilon = share(epsilon, config.prior_share)
        epsilon = share(epsilon, 1.0 - config.prior_share)
        totals = counts[0].sum(0)          # every record reaches one leaf of the first tree
        # the prior, and the fallback's second release of the class counts at the leaves'
        # budget (used below where no leaf can beat its noise): one sampler draws both
        (prior, costs[PRIOR_LABEL]), (again, majority_cost) = release_class_counts_at(
            [k_prior, k_majority], totals, [prior_epsilon, epsilon], context.sensitivity, unit)
        # a leaf's evidence is weighed against the prior: pseudo-counts of the prior's class
        # distribution, ``shrinkage`` times the Laplace scale of a tree's counts
        scale = count_scale(epsilon, n_trees, context.sensitivity)
        weights = jnp.maximum(prior, 0.0) + 0.5
        pseudo = traced["shrinkage"] * scale * (weights / weights.sum())
        # the leaves are released at a public depth k <= d: each leaf shares its depth-k
        # ancestor's counts (a coarser partition of the same records, same sensitivity)
        group = jnp.arange(2**depth) >> (depth - effective_depth(
            jnp.maximum(prior, 0.0).sum(), scale, depth, traced["depth_signal"]))
        counts = jnp.zeros_like(counts).at[:, group].add(counts)
    else:
        pseudo, group = None, jnp.arange(2**depth)
    release, cost = release_counts(
        k_noise, counts, leaf_epsilon(epsilon, n_trees, depth, config.budget),
        sensitivity=context.sensitivity, noise=config.noise, budget=config.budget, unit=unit,
        offset=pseudo)
    leaf = leaf_estimates(k_fallback, release, n_classes, noise=config.noise,
                          estimate=config.leaf_estimate, pseudo=pseudo)[:, group]
    if not with_prior:
        return DenseTree(feature=feature, threshold=threshold, leaf=leaf), {
            COSTS[config.noise]: cost}
    learns = forest_learns(jnp.maximum(prior, 0.0).sum(), scale, depth, traced["min_signal"])
    # the fallback spends the leaves' budget on the class counts again, pooled with the prior
    pooled = pooled_counts([(prior, prior_epsilon), (again, epsilon)])
    majority = jnp.broadcast_to(leaf_estimates(k_fallback, pooled, n_classes, noise="laplace",
                                               estimate=config.leaf_estimate), leaf.shape)
    # a budget too small to release (NaN cost) is refused whichever branch the prior picked
    costs[COSTS[config.noise]] = cost.gated(learns | ~jnp.isfinite(cost.epsilon))
    costs[MAJORITY_LABEL] = majority_cost.gated(~learns | ~jnp.isfinite(majority_cost.epsilon))
    leaf = jnp.where(learns, leaf, majority)
    return DenseTree(feature=feature, threshold=threshold, leaf=leaf), costs


PRIOR_LABEL = "class counts (released size, majority)"
MAJORITY_LABEL = AGAIN_LABEL


def count_scale(epsilon: jax.Array, n_trees: int, sensitivity: float) -> jax.Array:
    """The Laplace scale ``Δ·T/ε`` of a tree's counts when ``T`` trees share the leaves'
    budget ``ε``."""
    return sensitivity * n_trees / jnp.maximum(jnp.asarray(epsilon, jnp.float32), 1e-30)


def forest_learns(size: jax.Array, scale: jax.Array, depth: int,
                  min_signal: jax.Array) -> jax.Array:
    """The public schedule of the parallel budget: the forest is fitted where an average leaf's
    records ``ñ/2^d`` are at least ``min_signal`` times the Laplace scale of its tree's counts
    (``ñ`` the released size, ``scale`` from :func:`count_scale`); below that the leaves are
    noise and the forest predicts the released majority instead."""
    return size / 2.0**depth >= min_signal * scale


def effective_depth(size: jax.Array, scale: jax.Array, depth: int,
                    depth_signal: jax.Array) -> jax.Array:
    """The public depth ``k`` at which the parallel budget releases a tree's leaves: the
    deepest ``k <= d`` whose ``2^k`` groups hold on average ``ñ/2^k >= depth_signal`` times
    the Laplace scale of a tree's counts (at least 1; ``depth_signal = 0``: ``d``). A function
    of the released size, ``ε`` and the configuration."""
    ratio = jnp.asarray(size, jnp.float32) / jnp.maximum(
        jnp.asarray(depth_signal, jnp.float32) * scale, 1e-30)
    return jnp.clip(jnp.floor(jnp.log2(jnp.maximum(ratio, 1.0))), 1, depth).astype(jnp.int32)


def vote(theta: jax.Array, voting: str, n_active: jax.Array | int | None = None) -> jax.Array:
    """Class scores ``[m, C]`` from the leaf distributions ``theta [n_trees, m, C]`` that the
    rows reach in each tree (spec §2).

    ``majority``: fraction of trees voting each class (a tree votes its leaf's argmax; ties go
    to the lower class index, i.e. ``+`` iff ``theta > 1/2``, A6). ``threshold`` and
    ``probabilistic``: the mean leaf distribution ``theta^d``. ``n_active`` (traced allowed):
    only the first ``n_active`` trees vote (default: all) -- with nested structures
    (:func:`forest_structures`) the votes of the first ``k`` trees of one forest, so a single
    forest serves every forest size ``k`` (the leaf estimates of those ``k`` trees given).
    """
    if voting == "majority":
        theta = jax.nn.one_hot(theta.argmax(-1), theta.shape[-1])
    if n_active is None:
        return theta.mean(0)
    n_active = jnp.clip(n_active, 1, theta.shape[0])   # at least one tree, at most all
    active = (jnp.arange(theta.shape[0]) < n_active).reshape((-1,) + (1,) * (theta.ndim - 1))
    return jnp.where(active, theta, 0.0).sum(0) / n_active


def forest_proba(forest: DenseTree, codes: jax.Array, voting: str,
                 n_active: jax.Array | int | None = None) -> jax.Array:
    """Class scores ``[m, C]`` of a forest: :func:`vote` of the leaves ``codes`` reach
    (``n_active``: only the first ``n_active`` trees vote)."""
    return vote(apply_trees(forest, codes), voting, n_active)


def forest_predict(
    forest: DenseTree, codes: jax.Array, voting: str, key: jax.Array | None = None,
    n_active: jax.Array | int | None = None,
) -> jax.Array:
    """Class indices ``[m]``. MV and TA take the argmax of :func:`forest_proba` (ties go to the
    lower index: the paper's strict ``num > k/2`` and ``theta > 1/2``, A7); PA samples a class
    from ``theta^d`` with ``key`` (A24). ``n_active``: only the first ``n_active`` trees vote."""
    proba = forest_proba(forest, codes, voting, n_active)
    if voting == "probabilistic":
        if key is None:
            raise ValueError("probabilistic voting draws a coin per example: pass key=...")
        return jax.random.categorical(key, jnp.log(proba)).astype(jnp.int32)
    return proba.argmax(-1).astype(jnp.int32)
