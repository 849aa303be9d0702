"""(Differentially private) completely random decision-tree forests — Bojarski, Choromanska,
Choromanski & LeCun (2014); spec ``shared/specs/dp-random-decision-trees.md``.

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
``shared/specs/boosted-dp-trees-malpha.md`` §6.5): each leaf's counts are released on their own
(``leaf_composition="leaf"``: ``eps / (k * 2^d)`` per leaf, the paper's "evenly among the
leaves"), with the Laplace mechanism and the noisy argmax as the leaf label (RF-L,
``leaf_estimate="label"``) or a private selection on the counts (RF-E, ``noise="exponential"``,
utility sensitivity 1; permute-and-flip, which has the exponential mechanism's guarantee), and
the forest takes the majority vote.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpjax.mechanisms import Cost, laplace_mechanism, parallel, permute_and_flip
from dpjax.mechanisms.rounding import round_down
from dpjax.trees import DenseTree, apply_trees, leaf_index, leaf_stats, random_splits

VOTING = ("majority", "threshold", "probabilistic")
NOISE = ("laplace", "exponential")
LEAF_ESTIMATES = ("smoothed", "paper", "label")
FOREST_COMPOSITIONS = ("tree", "leaf")


def tree_keys(key: jax.Array, n_trees: int) -> jax.Array:
    """Structure keys of trees ``0..n_trees-1``: ``fold_in(key, i)``, so the first ``k`` trees
    of a larger forest are exactly the trees of a ``k``-tree forest (nested forests)."""
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n_trees))


def leaf_distribution(
    key: jax.Array, counts: jax.Array, estimate: str = "smoothed"
) -> jax.Array:
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
    """
    if estimate == "label":
        return jax.nn.one_hot(counts.argmax(-1), counts.shape[-1], dtype=counts.dtype)
    if estimate == "smoothed":
        clamped = jnp.maximum(counts, 0.0) + 1.0
        return clamped / clamped.sum(-1, keepdims=True)
    fallback = (counts < 0).any(-1) | (counts == 0).all(-1)
    uniform = jax.random.exponential(key, counts.shape)
    uniform = uniform / uniform.sum(-1, keepdims=True)
    total = jnp.where(fallback, 1.0, counts.sum(-1))
    return jnp.where(fallback[..., None], uniform, counts / total[..., None])


def leaf_epsilon(epsilon: jax.Array, n_trees: int, depth: int, composition: str) -> jax.Array:
    """Budget of one released count vector, rounded down: a whole tree's (``eps / k``, ``"tree"``,
    the tree's leaves are disjoint and released as one vector) or one leaf's (``eps / (k *
    2^d)``, ``"leaf"``)."""
    return round_down(epsilon / (n_trees * (2**depth if composition == "leaf" else 1)))


def fit_random_trees(
    key: jax.Array,
    codes: jax.Array,
    y: jax.Array,
    epsilon: jax.Array | None,
    *,
    n_trees: int,
    depth: int,
    n_codes_per_feature: jax.Array,
    n_classes: int,
    sensitivity: float = 1.0,
    noise: str = "laplace",
    threshold_range: str = "global",
    leaf_estimate: str = "smoothed",
    leaf_composition: str = "tree",
    structure_key: jax.Array | None = None,
) -> tuple[DenseTree, dict[str, Cost]]:
    """Fit a forest of ``n_trees`` random trees of height ``depth`` (spec Algorithms 1 and 2).

    Args:
      key: PRNG key of the releases (noise and fallback draws use independent subkeys).
      codes: uint8 ``[m, n]``; y: int32 ``[m]`` class indices.
      epsilon: total budget (the paper's ``eta``), traced; ``None`` fits without noise.
      n_trees, depth, n_classes: static sizes; n_codes_per_feature: int ``[n]``.
      sensitivity: L1 sensitivity of one tree's counts (1 add/remove, 2 replace-one).
      noise: ``"laplace"`` (the paper's mechanism, with exact discrete Laplace noise on the
        integer counts) or ``"exponential"`` (RF-E: each leaf's label drawn by the
        exponential-mechanism family, permute-and-flip on the counts).
      threshold_range: ``"global"`` (paper) or ``"cell"`` (A4; see
        :func:`dpjax.trees.random_splits`).
      leaf_estimate: ``"smoothed"``, ``"paper"`` or ``"label"`` (see
        :func:`leaf_distribution`).
      leaf_composition: ``"tree"`` or ``"leaf"`` (see :func:`leaf_epsilon`).
      structure_key: key of the data-independent tree structures (default: derived from
        ``key``). Structures read no data, so models that differ only in their budget may share
        them (a sweep does) while every release keeps its own noise.

    Returns:
      ``(forest, costs)``: a batched :class:`DenseTree` with ``[n_trees]`` leading axis and
      leaf ``theta [n_trees, 2**depth, n_classes]``, and ``{"leaf class counts": cost}`` with
      one cost per released vector (``[n_trees]`` or ``[n_trees, 2**depth]``; empty without
      DP).
    """
    k_structure, k_noise, k_fallback = jax.random.split(key, 3)
    if structure_key is not None:
        k_structure = structure_key
    feature, threshold = jax.vmap(random_splits, in_axes=(0, None, None, None))(
        tree_keys(k_structure, n_trees), depth, n_codes_per_feature, threshold_range)
    leaves = jax.vmap(leaf_index, in_axes=(0, 0, None))(feature, threshold, codes)
    onehot = jax.nn.one_hot(y, n_classes, dtype=jnp.int32)     # int32: exact counts
    counts = jax.vmap(leaf_stats, in_axes=(0, None, None))(leaves, onehot, 2**depth)
    if epsilon is None:
        return DenseTree(feature=feature, threshold=threshold, leaf=leaf_distribution(
            k_fallback, counts.astype(jnp.float32), leaf_estimate)), {}
    epsilon_each = leaf_epsilon(epsilon, n_trees, depth, leaf_composition)
    per_leaf = leaf_composition == "leaf"
    if noise == "exponential":
        # One example moves each class's count of a leaf by at most 1 under either relation; a
        # replaced example can touch two leaves of a tree, which share the tree's budget then.
        touched = 1 if per_leaf else int(sensitivity)
        label, cost = permute_and_flip(k_noise, counts, 1.0, epsilon_each / touched,
                                       label="sens. 1")
        cost = cost if per_leaf else parallel(cost, touched=touched)
        leaf = jax.nn.one_hot(label, n_classes, dtype=jnp.float32)
        return DenseTree(feature=feature, threshold=threshold, leaf=leaf), {
            "leaf labels": cost}
    counts, cost = laplace_mechanism(k_noise, counts, sensitivity, epsilon_each, integer=True,
                                     event_ndim=1 if per_leaf else 2,
                                     label=f"L1 sens. {sensitivity:g}")
    forest = DenseTree(feature=feature, threshold=threshold,
                       leaf=leaf_distribution(k_fallback, counts, leaf_estimate))
    return forest, {"leaf class counts": cost}


def forest_proba(forest: DenseTree, codes: jax.Array, voting: str = "majority") -> jax.Array:
    """Class scores ``[m, C]`` of a forest (spec §2).

    ``majority``: fraction of trees voting each class (a tree votes its leaf's argmax; ties go
    to the lower class index, i.e. ``+`` iff ``theta > 1/2``, A6). ``threshold`` and
    ``probabilistic``: the mean leaf distribution ``theta^d``.
    """
    theta = apply_trees(forest, codes)
    if voting == "majority":
        return jax.nn.one_hot(theta.argmax(-1), theta.shape[-1]).mean(0)
    return theta.mean(0)


def forest_predict(
    forest: DenseTree, codes: jax.Array, voting: str = "majority", key: jax.Array | None = None
) -> jax.Array:
    """Class indices ``[m]``. MV and TA take the argmax of :func:`forest_proba` (ties go to the
    lower index: the paper's strict ``num > k/2`` and ``theta > 1/2``, A7); PA samples a class
    from ``theta^d`` with ``key`` (A24)."""
    proba = forest_proba(forest, codes, voting)
    if voting == "probabilistic":
        if key is None:
            raise ValueError("probabilistic voting draws a coin per example: pass key=...")
        return jax.random.categorical(key, jnp.log(proba)).astype(jnp.int32)
    return proba.argmax(-1).astype(jnp.int32)
