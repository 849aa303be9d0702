"""Greedy Mα tree induction (``shared/specs/boosted-dp-trees-malpha.md`` §2.3, §4.2–§4.3)."""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.ensembles.malpha import (
    OBJECTIVE_CALIBRATION,
    WEIGHT_UNIT,
    GrownTree,
    MalphaRule,
    class_stats,
    grow_malpha_level,
    grow_malpha_tree,
    malpha_root_state,
    merge_level_costs,
    split_level_epsilons,
)
from dpjax.losses import split_risk, split_sensitivity
from dpjax.trees import leaf_index, level_slice, level_split_stats, valid_thresholds
from tests.conftest import binomial_tolerance, pf_probabilities_by_count, reference_leaf

N_CODES = np.array([3, 5, 2, 4, 10], np.int32)
N_VALID = int((N_CODES - 1).sum())  # valid (feature, threshold) candidates per node
M = 300


def make_problem(seed: int, m: int = M) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Codes on ``N_CODES``, weights in (0, 1], labels from feature 4 with 20% noise. The
    weights lie on the fixed-point grid of private trees (multiples of ``2**-WEIGHT_BITS``), so
    private and non-private trees see the very same class sums."""
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c, m) for c in N_CODES], axis=1).astype(np.uint8)
    y = ((codes[:, 4] > 5) ^ (rng.uniform(size=m) < 0.2)).astype(np.int32)
    weights = np.floor(rng.uniform(0.05, 1.0, m) * WEIGHT_UNIT) / WEIGHT_UNIT
    return jnp.asarray(codes), jnp.asarray(weights, jnp.float32), jnp.asarray(y)


@functools.cache
def grow_fn(depth: int, private: bool):
    """Jitted ``grow_malpha_tree`` vmapped over ``(key, alpha[, epsilon])`` (one compile per
    configuration, shared by the tests); private trees take the public size ``M`` (the row
    count of ``make_problem``). Returns the tree only (the costs are checked below)."""
    if private:
        def grow(key, codes, weights, y, alpha, eps):
            return grow_malpha_tree(key, codes, weights, y, depth, N_CODES, alpha, eps,
                                    size=M, budget="paper")[0]
        return jax.jit(jax.vmap(grow, in_axes=(0, None, None, None, 0, 0)))

    def grow_exact(key, codes, weights, y, alpha):
        tree, costs = grow_malpha_tree(key, codes, weights, y, depth, N_CODES, alpha, None,
                                       budget="paper")
        assert costs == {}
        return tree
    return jax.jit(jax.vmap(grow_exact, in_axes=(0, None, None, None, 0)))


def one(tree: GrownTree, i: int = 0) -> GrownTree:
    return jax.tree.map(lambda a: np.asarray(a[i]), tree)


def frozen_threshold(feature: np.ndarray) -> np.ndarray:
    """The "send everything left" threshold of a frozen node: its feature's last code."""
    return N_CODES[feature] - 1


def node_members(tree: GrownTree, codes: np.ndarray, node: int) -> np.ndarray:
    """bool ``[m]``: the examples that pass through heap node ``node`` (reference traversal)."""
    depth = int(np.log2(len(tree.feature) + 1))
    leaves = np.array([reference_leaf(tree.feature, tree.threshold, row) for row in codes])
    level = int(np.log2(node + 1))
    return (leaves >> (depth - level)) + 2**level - 1 == node


# --------------------------------------------------------------------------------------------
# Budget split, eq. (18)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1, 3, 6])
def test_split_level_epsilons_follow_eq_18_and_sum_to_the_tree_budget(depth):
    eps = split_level_epsilons(0.7, depth, budget="paper")
    chex.assert_shape(eps, (depth,))
    chex.assert_type(eps, jnp.float32)
    np.testing.assert_allclose(eps, [0.7 / (depth * 2**k) for k in range(depth)], rtol=1e-6)
    np.testing.assert_allclose((eps * 2.0 ** np.arange(depth)).sum(), 0.7, rtol=1e-6)
    levels = jax.jit(jax.vmap(lambda e: split_level_epsilons(e, depth,
                                                             budget="paper")))(jnp.array([1.0,
                                                                                          2.0]))
    np.testing.assert_allclose(levels[1], 2 * levels[0], rtol=1e-6)


@pytest.mark.slow
def test_private_tree_uses_per_level_budget():
    """Each level's nodes draw with budget eps/(d*2^k) (eq. (18)), one selection per node, as
    the costs report; the selections of the whole tree spend eps. The label names the doubled
    (replace-one) sensitivity on the public size."""
    codes, weights, y = make_problem(3)
    depth, alpha, eps, size, multiplier = 3, 0.4, 0.9, 1000, 2.0
    _, costs = jax.jit(lambda key: grow_malpha_tree(
        key, codes, weights, y, depth, N_CODES, alpha, eps, size=size,
        sensitivity_multiplier=multiplier, budget="paper"))(jax.random.key(0))
    assert list(costs) == [f"splits at depth {k}" for k in range(depth)]
    for k in range(depth):
        cost = costs[f"splits at depth {k}"]
        assert cost.mechanism == "permute-and-flip (sens. 2·(Δ^(α)(ñ) + 2^-18·ñ))"
        chex.assert_shape(cost.epsilon, (2**k,))
        np.testing.assert_allclose(cost.epsilon, eps / (depth * 2**k), rtol=1e-6)
        np.testing.assert_array_equal(cost.delta, 0.0)
    spent = sum(np.asarray(c.epsilon, np.float64).sum() for c in costs.values())
    np.testing.assert_allclose(spent, eps, rtol=1e-6)


def test_private_tree_needs_the_public_size():
    codes, weights, y = make_problem(3, 20)
    with pytest.raises(ValueError, match="size"):
        grow_malpha_tree(jax.random.key(0), codes, weights, y, 1, N_CODES, 0.5, 1.0, budget="paper")


def root_split_probabilities(codes, weights, y, alpha, size, sensitivity, eps) -> np.ndarray:
    """Exact permute-and-flip probabilities of the root's flat ``feature * 10 + threshold``
    choice: utility ``-crit_alpha`` of the children's class sums clamped to the public size
    ``size`` (numpy partition sums), sensitivity ``sensitivity``, invalid candidates ``-inf``."""
    codes, stats = np.asarray(codes), np.asarray(class_stats(weights, y), np.float64)
    assert np.array_equal(stats * WEIGHT_UNIT, np.round(stats * WEIGHT_UNIT))  # fixed point
    valid = np.asarray(valid_thresholds(N_CODES, 10))
    utility = np.full(valid.size, -np.inf)
    for feature, threshold in zip(*np.nonzero(valid), strict=True):
        left = stats[codes[:, feature] <= threshold].sum(0)
        right = stats[codes[:, feature] > threshold].sum(0)
        utility[feature * 10 + threshold] = -float(split_risk(
            np.minimum(left, size), np.minimum(right, size), alpha))
    return pf_probabilities_by_count(utility, sensitivity, eps)


@pytest.mark.slow
def test_private_root_split_distribution():
    """The root's split is permute-and-flip on ``-crit_alpha`` of the class sums clamped to the
    public size ``ñ`` (here below the sums, so the clamp bites), with sensitivity
    ``multiplier * Delta^(alpha)(ñ)`` and the tree's first-level budget: frequencies over many
    keys match the exact probabilities; the unclamped criterion or the undoubled sensitivity
    would be told apart."""
    codes, weights, y = make_problem(12)
    alpha, size, multiplier, eps, n_keys = 0.4, 25.0, 2.0, 3.0, 4000
    sensitivity = multiplier * float(split_sensitivity(size, alpha))
    grow = jax.jit(jax.vmap(lambda key: grow_malpha_tree(
        key, codes, weights, y, 1, N_CODES, alpha, eps, size=size,
        sensitivity_multiplier=multiplier, budget="paper")[0]))
    tree = grow(jax.random.split(jax.random.key(13), n_keys))
    choice = np.asarray(tree.feature[:, 0]) * 10 + np.asarray(tree.threshold[:, 0])
    freq = np.bincount(choice, minlength=10 * len(N_CODES)) / n_keys
    expected = root_split_probabilities(codes, weights, y, alpha, size, sensitivity, eps)
    assert expected.max() < 0.9 and (expected > 0.02).sum() >= 3  # a spread-out choice
    np.testing.assert_array_less(np.abs(freq - expected),
                                 binomial_tolerance(expected, n_keys) + 1e-12)
    # the test has power against the wrong clamp or sensitivity
    for wrong in (root_split_probabilities(codes, weights, y, alpha, np.inf, sensitivity, eps),
                  root_split_probabilities(codes, weights, y, alpha, size, sensitivity / 2,
                                           eps)):
        assert np.any(np.abs(freq - wrong) > 2 * binomial_tolerance(wrong, n_keys) + 1e-12)


# --------------------------------------------------------------------------------------------
# Non-private trees: argmin, purity rule, frozen-node encoding
# --------------------------------------------------------------------------------------------


def test_planted_split_recovered_and_pure_children_frozen():
    codes, weights, _ = make_problem(0)
    y = (codes[:, 3] > 1).astype(jnp.int32)  # noiseless: both children of the root are pure
    tree = one(grow_fn(2, False)(jax.random.split(jax.random.key(0), 1), codes, weights, y,
                                 jnp.array([0.5])))
    assert (int(tree.feature[0]), int(tree.threshold[0])) == (3, 1)
    # level 1 is frozen: everything goes left, so leaves 1 and 3 are empty
    np.testing.assert_array_equal(tree.threshold[1:], frozen_threshold(tree.feature[1:]))
    np.testing.assert_array_equal(tree.example_leaf, np.where(np.asarray(y) == 1, 2, 0))
    np.testing.assert_array_equal(tree.example_leaf, leaf_index(tree.feature, tree.threshold,
                                                                codes))
    w = np.asarray(weights)
    np.testing.assert_allclose(tree.leaf_stats, [[w[np.asarray(y) == 0].sum(), 0], [0, 0],
                                                 [0, w[np.asarray(y) == 1].sum()], [0, 0]],
                               rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize(("case", "labels"), [("pure", "zeros"), ("unsplittable", "mixed")])
def test_root_not_split_without_dp(case, labels):
    codes, weights, _ = make_problem(1, 40)
    if case == "unsplittable":  # every example has the same codes: no split separates them
        codes = jnp.broadcast_to(codes[:1], codes.shape)
    y = jnp.zeros(40, jnp.int32) if labels == "zeros" else jnp.arange(40, dtype=jnp.int32) % 2
    tree, _ = grow_malpha_tree(jax.random.key(0), codes, weights, y, 2, N_CODES, 1.0, None,
                               budget="paper")
    np.testing.assert_array_equal(tree.threshold, frozen_threshold(np.asarray(tree.feature)))
    np.testing.assert_array_equal(tree.example_leaf, 0)
    np.testing.assert_allclose(tree.leaf_stats[0], class_stats(weights, y).sum(0), rtol=1e-6)
    np.testing.assert_array_equal(tree.leaf_stats[1:], 0)


@pytest.mark.slow
def test_non_private_nodes_split_iff_impure_and_splittable():
    """Every node of a deeper tree: frozen iff pure/empty/unsplittable, else the argmin of
    crit over the candidates that leave both children non-empty (ties to the lowest index)."""
    codes, weights, y = make_problem(2, 120)
    alpha, depth = 0.3, 4
    tree, _ = grow_malpha_tree(jax.random.key(0), codes, weights, y, depth, N_CODES, alpha,
                               None, budget="paper")
    tree = jax.tree.map(np.asarray, tree)
    stats = np.asarray(class_stats(weights, y), np.float64)
    codes_np, valid = np.asarray(codes), np.asarray(valid_thresholds(N_CODES, 10))
    n_frozen = n_split = 0
    for node in range(2**depth - 1):
        inside = node_members(tree, codes_np, node)
        f, t = int(tree.feature[node]), int(tree.threshold[node])
        crit = np.full(valid.shape, np.inf)
        for feat, thr in zip(*np.nonzero(valid), strict=True):
            left = inside & (codes_np[:, feat] <= thr)
            right = inside & (codes_np[:, feat] > thr)
            if stats[left].sum() > 0 and stats[right].sum() > 0:
                crit[feat, thr] = split_risk(stats[left].sum(0), stats[right].sum(0), alpha)
        pure = (stats[inside].sum(0) > 0).sum() < 2
        if pure or np.isinf(crit).all():
            n_frozen += 1
            assert t == N_CODES[f] - 1
        else:
            n_split += 1
            assert crit[f, t] <= crit.min() * (1 + 1e-5)
    assert n_frozen > 0 and n_split > 0  # the data exercise both branches


# --------------------------------------------------------------------------------------------
# Private trees: exponential mechanism per node, complete trees
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_huge_epsilon_matches_non_private_argmin():
    codes, weights, y = make_problem(4)
    alphas = jnp.array([0.3, 0.7, 1.0])
    keys = jax.random.split(jax.random.key(5), 3)
    exact = grow_fn(2, False)(keys, codes, weights, y, alphas)
    frozen = exact.threshold == jnp.asarray(N_CODES)[exact.feature] - 1
    assert not bool(frozen.any())  # no ties to break, no pure node: DP and non-DP agree
    private = grow_fn(2, True)(keys, codes, weights, y, alphas, jnp.full(3, 1e6))
    np.testing.assert_array_equal(private.feature, exact.feature)
    np.testing.assert_array_equal(private.threshold, exact.threshold)
    np.testing.assert_array_equal(private.example_leaf, exact.example_leaf)


@pytest.mark.slow
def test_tiny_epsilon_is_uniform_over_valid_candidates():
    codes, weights, y = make_problem(6)
    n_keys = 3000
    keys = jax.random.split(jax.random.key(7), n_keys)
    tree = grow_fn(2, True)(keys, codes, weights, y, jnp.full(n_keys, 0.5),
                            jnp.full(n_keys, 1e-6))
    valid = np.asarray(valid_thresholds(N_CODES, 10))
    for node in range(3):  # the root and both children: each node is an independent draw
        f, t = np.asarray(tree.feature[:, node]), np.asarray(tree.threshold[:, node])
        assert valid[f, t].all()
        freq = np.bincount(f * 10 + t, minlength=valid.size)[valid.reshape(-1)] / n_keys
        chex.assert_shape(freq, (N_VALID,))
        p = 1.0 / N_VALID
        assert np.all(np.abs(freq - p) <= binomial_tolerance(p, n_keys)), (node, freq)


@pytest.mark.slow
def test_private_tree_is_complete_even_on_pure_data():
    """No purity test under DP (§2.3): every node gets a real split, even pure or empty ones."""
    codes, weights, _ = make_problem(8, 60)
    y = jnp.zeros(60, jnp.int32)
    tree, _ = jax.jit(lambda key: grow_malpha_tree(key, codes, weights, y, 3, N_CODES, 1.0, 1.0,
                                                   size=60, budget="paper"))(jax.random.key(1))
    valid = np.asarray(valid_thresholds(N_CODES, 10))
    assert valid[np.asarray(tree.feature), np.asarray(tree.threshold)].all()
    assert len(np.unique(tree.example_leaf)) > 1


# --------------------------------------------------------------------------------------------
# Shapes, jit, vmap
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
class MalphaTreeTest(chex.TestCase):

    @chex.variants(with_jit=True, without_jit=True)
    def test_shapes_and_dtypes(self):
        codes, weights, y = make_problem(9, 50)
        depth = 3
        for eps in (None, 1.0):
            grow = self.variant(lambda k, c, w, yy, a, e=eps: grow_malpha_tree(
                k, c, w, yy, depth, N_CODES, a, e, size=50, budget="paper"))
            tree, costs = grow(jax.random.key(0), codes, weights, y, 0.5)
            assert isinstance(tree, GrownTree)
            assert len(costs) == (0 if eps is None else depth)
            chex.assert_shape([tree.feature, tree.threshold], (2**depth - 1,))
            chex.assert_shape(tree.example_leaf, (50,))
            chex.assert_shape(tree.leaf_stats, (2**depth, 2))
            chex.assert_type([tree.feature, tree.threshold, tree.example_leaf], jnp.int32)
            if eps is None:
                chex.assert_type(tree.leaf_stats, jnp.float32)
                np.testing.assert_allclose(tree.leaf_stats.sum(0),
                                           class_stats(weights, y).sum(0), rtol=1e-5)
            else:  # exact int32 fixed-point sums, in units of 2**-WEIGHT_BITS
                chex.assert_type(tree.leaf_stats, jnp.int32)
                np.testing.assert_array_equal(
                    tree.leaf_stats.sum(0), class_stats(weights, y, exact=True).sum(0))
                np.testing.assert_allclose(np.asarray(tree.leaf_stats.sum(0)) / WEIGHT_UNIT,
                                           class_stats(weights, y).sum(0), rtol=1e-6)
            np.testing.assert_array_equal(tree.example_leaf,
                                          leaf_index(tree.feature, tree.threshold, codes))

    @pytest.mark.slow
    def test_vmap_over_keys_alpha_and_epsilon(self):
        codes, weights, y = make_problem(10, 80)
        keys = jax.random.split(jax.random.key(3), 4)
        alphas, epsilons = jnp.array([0.1, 1.0]), jnp.array([0.5, 50.0])

        def grow(key, alpha, eps):
            return grow_malpha_tree(key, codes, weights, y, 2, N_CODES, alpha, eps, size=80,
                                    budget="paper")

        over_budgets = jax.vmap(jax.vmap(grow, in_axes=(None, 0, 0)), in_axes=(0, None, None))
        trees, costs = jax.jit(over_budgets)(keys, alphas, epsilons)
        chex.assert_shape(costs["splits at depth 1"].epsilon, (4, 2, 2))
        np.testing.assert_allclose(costs["splits at depth 1"].epsilon[:, :, 0],
                                   np.broadcast_to(epsilons / 4, (4, 2)), rtol=1e-6)
        chex.assert_shape([trees.feature, trees.threshold], (4, 2, 3))
        chex.assert_shape(trees.example_leaf, (4, 2, 80))
        chex.assert_shape(trees.leaf_stats, (4, 2, 4, 2))
        single, _ = jax.jit(grow)(keys[2], alphas[1], epsilons[1])
        np.testing.assert_array_equal(trees.feature[2, 1], single.feature)
        np.testing.assert_array_equal(trees.threshold[2, 1], single.threshold)
        # different keys give different private trees
        assert len({tuple(np.asarray(f)) for f in trees.feature[:, 0]}) > 1


def test_level_helpers_need_concrete_code_counts():
    """The histogram width is static: a traced ``n_codes_per_feature`` is rejected."""
    codes, weights, y = make_problem(11, 20)
    stats = class_stats(weights, y)
    node = jnp.zeros(20, jnp.int32)
    with pytest.raises(ValueError, match="concrete"):
        jax.jit(lambda nc: level_split_stats(codes, node, stats, 0, nc))(jnp.asarray(N_CODES))


# --------------------------------------------------------------------------------------------
# One level at a time: grow_malpha_level, a pure function of the state
# --------------------------------------------------------------------------------------------


def malpha_rule(alpha, oc_alpha, eps=None, depth=3, epsilon_oc=None, size=M, multiplier=1.0,
                budget="paper"):
    """The :class:`MalphaRule` that ``grow_malpha_tree`` builds for these arguments."""
    private = eps is not None
    return MalphaRule(jnp.float32(alpha), oc_alpha,
                      split_level_epsilons(eps, depth, budget=budget) if private else None,
                      jnp.float32(size) if private else None, epsilon_oc, multiplier,
                      budget == "parallel")


def fold_levels(key, codes, weights, y, depth, rule):
    """``grow_malpha_tree`` by hand: the same key streams, one ``grow_malpha_level`` per level.
    Returns the tree, the merged costs, and each level's state and costs."""
    stats = class_stats(weights, y, exact=rule.private)
    k_splits, k_oc = jax.random.split(key)
    split_keys, oc_keys = jax.random.split(k_splits, depth), jax.random.split(k_oc, depth)
    states, level_costs = [malpha_root_state(codes.shape[0], depth, stats.dtype)], []
    for level in range(depth):
        state, costs = grow_malpha_level(states[-1], level, split_keys[level], oc_keys[level],
                                         codes, stats, N_CODES, rule)
        states, level_costs = [*states, state], [*level_costs, costs]
    tree = GrownTree(state.feature, state.threshold, state.node,
                     jax.ops.segment_sum(stats, state.node, 2**depth), state.node_alpha)
    return tree, merge_level_costs(level_costs), states, level_costs


@pytest.mark.slow
@pytest.mark.parametrize("oc_alpha, eps, epsilon_oc", [
    ("private", None, None), ("exact", None, None), ("exact", 2.0, None),
    ("private", 2.0, None), ("private", 2.0, 0.01)])
def test_level_zero_sets_the_root_error_and_alpha_one_under_oc(oc_alpha, eps, epsilon_oc):
    """Level 0 sets ``ε_0/1(h_1)·w(S) = min(w^-1(S), w^1(S))`` (§5.1; released with noise
    ``Ẽ_0`` under O.C ``"private"`` with ``epsilon_oc``, §5.3) and splits the root with
    ``α_1 = 1`` (§5.1, §5.3); the deeper splits are untouched."""
    codes, weights, y = make_problem(12, 40)
    rule = malpha_rule(OBJECTIVE_CALIBRATION, oc_alpha, eps, 3, epsilon_oc, size=40)
    stats = class_stats(weights, y, exact=rule.private)
    state, costs = grow_malpha_level(malpha_root_state(40, 3, stats.dtype), 0,
                                     jax.random.key(0), jax.random.key(1), codes, stats,
                                     N_CODES, rule)
    released = epsilon_oc is not None
    root_error = np.asarray(stats).sum(0).min()
    assert (int(state.root_error) != int(root_error)) if released else (  # noise ~25k units
        state.root_error == root_error)
    np.testing.assert_array_equal(state.node_alpha, np.ones(7, np.float32))
    np.testing.assert_array_equal(state.level_alpha, 1.0)
    np.testing.assert_array_equal([state.feature[1:], state.threshold[1:]], 0)
    assert set(np.unique(state.node)) <= {0, 1}
    assert list(costs) == (["splits at depth 0"] * rule.private + ["O.C level error"] * released)
    if released:
        assert 0.0099 < float(costs["O.C level error"].epsilon) <= 0.01  # exact-noise grid


@pytest.mark.slow
@pytest.mark.parametrize("eps, epsilon_oc", [(None, None), (4.0, None), (4.0, 0.02)])
def test_private_oc_alpha_is_non_increasing_across_levels(eps, epsilon_oc):
    """O.C ``"private"``: every node of level ``k`` is split with ``α_k``, and
    ``α_0 = 1 ≥ α_1 ≥ … ≥ α_{d−1}`` (§5.3), even with very noisy errors (``epsilon_oc``)."""
    codes, weights, y = make_problem(13)
    rule = malpha_rule(OBJECTIVE_CALIBRATION, "private", eps, 5, epsilon_oc)
    _, _, states, _ = fold_levels(jax.random.key(4), codes, weights, y, 5, rule)
    level_alpha = np.array([float(s.level_alpha) for s in states[1:]])
    assert level_alpha[0] == 1.0
    assert np.all(np.diff(level_alpha) <= 0), level_alpha
    if epsilon_oc is None:      # exact errors shrink α by the last level; noisy ones may not
        assert level_alpha[-1] < 1.0
    for k, state in enumerate(states[1:]):
        np.testing.assert_array_equal(state.node_alpha[level_slice(k)], level_alpha[k])


@pytest.mark.slow
def test_level_costs_have_the_shape_of_the_level():
    """Level ``k``'s selections cost ``[2**k]`` (one per node, budget ``ε_k``, eq. (18)) and
    its O.C error release a scalar; without DP a level reports nothing."""
    codes, weights, y = make_problem(14, 80)
    rule = malpha_rule(OBJECTIVE_CALIBRATION, "private", 1.5, 4, epsilon_oc=0.3, size=80)
    _, _, _, level_costs = fold_levels(jax.random.key(5), codes, weights, y, 4, rule)
    for k, costs in enumerate(level_costs):
        assert list(costs) == [f"splits at depth {k}", "O.C level error"]
        chex.assert_shape(costs[f"splits at depth {k}"].epsilon, (2**k,))
        np.testing.assert_allclose(costs[f"splits at depth {k}"].epsilon, 1.5 / (4 * 2**k),
                                   rtol=1e-6)
        chex.assert_shape(costs["O.C level error"].epsilon, ())
    for oc_alpha in ("private", "exact"):
        rule = malpha_rule(OBJECTIVE_CALIBRATION, oc_alpha, None, 4)
        _, costs, _, level_costs = fold_levels(jax.random.key(5), codes, weights, y, 4, rule)
        assert costs == {} and all(c == {} for c in level_costs)


@pytest.mark.slow
@pytest.mark.parametrize("alpha, oc_alpha, eps, epsilon_oc, multiplier, budget, depth", [
    (OBJECTIVE_CALIBRATION, "exact", None, None, 1.0, "paper", 3),
    (OBJECTIVE_CALIBRATION, "private", None, None, 1.0, "paper", 3),
    (0.3, "private", 2.0, 0.1, 2.0, "paper", 3),
    (OBJECTIVE_CALIBRATION, "private", 2.0, 0.1, 1.0, "paper", 3),
    (OBJECTIVE_CALIBRATION, "exact", 2.0, None, 2.0, "paper", 3),
    (OBJECTIVE_CALIBRATION, "private", 2.0, 0.1, 2.0, "parallel", 3),
    (0.5, "exact", 2.0, None, 1.0, "parallel", 3),
    (OBJECTIVE_CALIBRATION, "private", 2.0, 0.1, 1.0, "parallel", 6),
    (OBJECTIVE_CALIBRATION, "exact", 2.0, None, 1.0, "paper", 6),
])
def test_folding_the_level_function_by_hand_equals_grow_malpha_tree(
        alpha, oc_alpha, eps, epsilon_oc, multiplier, budget, depth):
    """``grow_malpha_tree`` is the fold of ``grow_malpha_level`` over the levels: same keys,
    same tree, same costs in the same order. The tree runs the fold as a ``lax.scan`` whose
    levels are padded to the last level's nodes; the fold here is unrolled and unpadded, so
    this is also the padding's bit-for-bit test (private releases included). At depth 6 the
    padded levels hold 32 nodes x 50 candidates = 1,600 coins, past the exact samplers' window
    of 1,024 lanes that the shallow levels' own coins (at most 800) stay within."""
    codes, weights, y = make_problem(15, 90)
    rule = malpha_rule(alpha, oc_alpha, eps, depth, epsilon_oc, 90, multiplier, budget)
    tree, costs, _, _ = fold_levels(jax.random.key(6), codes, weights, y, depth, rule)
    expected_tree, expected_costs = grow_malpha_tree(
        jax.random.key(6), codes, weights, y, depth, N_CODES, alpha, eps, size=90,
        oc_alpha=oc_alpha, epsilon_oc=epsilon_oc, sensitivity_multiplier=multiplier,
        budget=budget)
    chex.assert_trees_all_equal(tree, expected_tree)
    assert list(costs) == list(expected_costs)
    chex.assert_trees_all_equal(costs, expected_costs)
