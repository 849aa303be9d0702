"""Dense trees: the pytree, histograms, random growth, greedy level mechanics, routing."""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized

from dpjax.losses import split_risk
from dpjax.trees import (
    DenseTree,
    apply_level,
    apply_tree,
    apply_trees,
    depth_of,
    frozen_nodes,
    leaf_index,
    leaf_stats,
    level_slice,
    level_split_stats,
    node_histogram,
    random_splits,
    split_stats,
    valid_thresholds,
)
from dpjax.trees.dense import set_level
from dpjax.trees.histogram import JOINT_CODES, group_size
from tests.conftest import Z, binomial_tolerance, forest_fn, make_data, reference_leaf

N_CODES = np.array([3, 5, 2, 4, 10], np.int32)


def random_codes(seed: int, m: int, n_codes: np.ndarray = N_CODES) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, c, m) for c in n_codes], axis=1).astype(np.uint8)


def brute_histogram(codes, node, stats, n_nodes, n_codes):
    m, n = codes.shape
    hist = np.zeros((n_nodes, n, n_codes, stats.shape[1]))
    for i in range(m):
        for f in range(n):
            hist[node[i], f, codes[i, f]] += stats[i]
    return hist


# One jitted, key-vmapped structure generator shared by several tests (one compile).
N_KEYS, DEPTH = 3000, 3
batched_splits = jax.jit(jax.vmap(functools.partial(random_splits, depth=DEPTH,
                                                    n_codes_per_feature=N_CODES)))


@functools.cache
def many_structures() -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(keys, feature, threshold)`` of ``N_KEYS`` depth-``DEPTH`` random trees."""
    keys = jax.random.split(jax.random.key(11), N_KEYS)
    return (keys, *batched_splits(keys))


# --------------------------------------------------------------------------------------------
# DenseTree
# --------------------------------------------------------------------------------------------


def test_dense_tree_shapes_and_dtypes():
    codes, y = make_data(0, 150, 3)
    k, h, c = 4, 3, 3
    forest, _ = forest_fn(k, h, c, True)(jax.random.key(0), jnp.asarray(codes),
                                         jnp.asarray(y), 1.0)
    assert isinstance(forest, DenseTree)
    chex.assert_shape(forest.feature, (k, 2**h - 1))
    chex.assert_shape(forest.threshold, (k, 2**h - 1))
    chex.assert_shape(forest.leaf, (k, 2**h, c))
    chex.assert_type([forest.feature, forest.threshold], jnp.int32)
    chex.assert_type(forest.leaf, jnp.float32)
    assert forest.depth == h
    assert len(jax.tree.leaves(forest)) == 3
    one = jax.tree.map(lambda a: a[1], forest)
    assert one.depth == h
    chex.assert_shape(apply_tree(one, jnp.asarray(codes)), (150, c))
    chex.assert_shape(apply_trees(forest, jnp.asarray(codes)), (k, 150, c))


def test_depth_helpers():
    assert [depth_of(2**d - 1) for d in range(1, 8)] == list(range(1, 8))
    for bad in (2, 4, 6, 10):
        with pytest.raises(ValueError, match="2\\*\\*d - 1"):
            depth_of(bad)
    assert level_slice(0) == slice(0, 1)
    assert level_slice(3) == slice(7, 15)


@pytest.mark.parametrize("traced", [False, True])
def test_set_level_writes_the_level_and_drops_the_padding(traced):
    """``set_level``: node ``i`` of level ``k`` takes ``values[i]``; values past ``2**k`` (a
    level padded to a common width) are dropped, with the level static or traced."""
    array = jnp.arange(15, dtype=jnp.int32)
    for level in range(4):
        values = 100 + jnp.arange(8, dtype=jnp.int32)
        if traced:
            out = jax.jit(set_level)(array, jnp.int32(level), values)
        else:
            out = set_level(array, level, values)
        expected = np.arange(15)
        expected[level_slice(level)] = 100 + np.arange(2**level)
        np.testing.assert_array_equal(out, expected)
    # static and exact width: the plain slice update
    np.testing.assert_array_equal(set_level(array, 2, jnp.full(4, -1, jnp.int32))[3:7], -1)


# --------------------------------------------------------------------------------------------
# Histograms
# --------------------------------------------------------------------------------------------


class HistogramTest(chex.TestCase):

    @chex.variants(with_jit=True, without_jit=True)
    def test_node_histogram_matches_brute_force(self):
        m, n_nodes = 300, 4
        codes = random_codes(1, m)
        rng = np.random.default_rng(2)
        node = rng.integers(0, n_nodes, m).astype(np.int32)
        stats = rng.integers(0, 5, (m, 2)).astype(np.float32)  # integers: exact sums
        n_codes = int(N_CODES.max())
        hist = self.variant(lambda c, nd, s: node_histogram(c, nd, s, n_nodes, n_codes))(
            jnp.asarray(codes), jnp.asarray(node), jnp.asarray(stats))
        chex.assert_shape(hist, (n_nodes, len(N_CODES), n_codes, 2))
        np.testing.assert_array_equal(hist, brute_histogram(codes, node, stats, n_nodes,
                                                            n_codes))

    @parameterized.parameters(
        (2, 1, 13), (2, 64, 23), (3, 5, 7), (10, 1, 20), (10, 300, 4), (255, 2, 3), (256, 3, 2))
    def test_packed_histogram_matches_brute_force(self, n_codes, n_nodes, n_features):
        """Every packing (``g`` features per joint code, a padded last group, ``g = 1`` for wide
        codes or many nodes) gives the exact per-feature histogram, int32 and float32."""
        rng = np.random.default_rng(n_codes * 1000 + n_nodes)
        m = 400
        codes = rng.integers(0, n_codes, (m, n_features)).astype(np.uint8)
        node = rng.integers(0, n_nodes, m).astype(np.int32)
        stats = rng.integers(0, 256, (m, 3)).astype(np.int32)
        group = min(group_size(n_codes, n_nodes), n_features)
        self.assertGreaterEqual(group, 1)
        self.assertLessEqual(n_codes**group, max(JOINT_CODES, n_codes))
        expected = brute_histogram(codes, node, stats, n_nodes, n_codes)
        for dtype in (np.int32, np.float32):
            hist = jax.jit(node_histogram, static_argnums=(3, 4))(
                jnp.asarray(codes), jnp.asarray(node), jnp.asarray(stats.astype(dtype)), n_nodes,
                n_codes)
            self.assertEqual(hist.dtype, dtype)
            np.testing.assert_array_equal(hist, expected)

    @chex.variants(with_jit=True, without_jit=True)
    def test_split_stats_left_plus_right_is_total(self):
        codes = random_codes(3, 200)
        node = np.arange(200, dtype=np.int32) % 2
        stats = np.eye(3, dtype=np.float32)[np.arange(200) % 3]
        hist = node_histogram(jnp.asarray(codes), jnp.asarray(node), jnp.asarray(stats), 2, 10)
        left, right = self.variant(split_stats)(hist)
        chex.assert_equal_shape([left, right, hist])
        total = np.asarray(hist).sum(axis=2, keepdims=True)
        np.testing.assert_array_equal(np.asarray(left) + np.asarray(right),
                                      np.broadcast_to(total, hist.shape))
        np.testing.assert_array_equal(left, np.cumsum(np.asarray(hist), axis=2))
        np.testing.assert_array_equal(np.asarray(right)[:, :, -1], 0)
        # every feature sees every example of the node once
        np.testing.assert_array_equal(total[:, :, 0, :].sum(-1), [[100] * 5, [100] * 5])

    @chex.variants(with_jit=True, without_jit=True)
    def test_leaf_stats_is_a_bincount(self):
        rng = np.random.default_rng(4)
        leaf = rng.integers(0, 8, 500).astype(np.int32)
        y = rng.integers(0, 2, 500)
        onehot = np.eye(2, dtype=np.float32)[y]
        counts = self.variant(lambda lf, s: leaf_stats(lf, s, 8))(jnp.asarray(leaf),
                                                                 jnp.asarray(onehot))
        expected = np.stack([np.bincount(leaf[y == c], minlength=8) for c in (0, 1)], 1)
        np.testing.assert_array_equal(counts, expected)
        # additive over shards of the data
        half = leaf_stats(jnp.asarray(leaf[:200]), jnp.asarray(onehot[:200]), 8) + leaf_stats(
            jnp.asarray(leaf[200:]), jnp.asarray(onehot[200:]), 8)
        np.testing.assert_array_equal(half, counts)


def test_valid_thresholds():
    valid = np.asarray(valid_thresholds(jnp.asarray([3, 1, 10]), 10))
    assert valid.shape == (3, 10)
    np.testing.assert_array_equal(valid.sum(1), [2, 0, 9])
    assert valid[0, :2].all() and not valid[0, 2:].any()


# --------------------------------------------------------------------------------------------
# Random (data-independent) splits
# --------------------------------------------------------------------------------------------


def cell_violations(feature, threshold, n_codes) -> tuple[int, int]:
    """``(checked, bad)``: nodes whose cell can still be split, and those among them whose
    threshold does not cut the cell's code range into two non-empty parts. (A cell reduced to
    a single code vector cannot be split by any rule; it is not checked.)"""
    checked = bad = 0

    def visit(node, lo, hi):
        nonlocal checked, bad
        if node >= len(feature):
            return
        f, t = int(feature[node]), int(threshold[node])
        if (hi > lo).any():
            checked += 1
            bad += not lo[f] <= t < hi[f]
        left_hi, right_lo = hi.copy(), lo.copy()
        left_hi[f], right_lo[f] = t, t + 1
        visit(2 * node + 1, lo, left_hi)
        visit(2 * node + 2, right_lo, hi)

    visit(0, np.zeros(len(n_codes), int), np.asarray(n_codes) - 1)
    return checked, bad


class RandomSplitsTest(chex.TestCase):

    @chex.variants(with_jit=True, without_jit=True)
    def test_global_thresholds_within_code_range(self):
        n_codes = np.array([3, 5, 1, 4, 2], np.int32)
        depth = 4
        fn = self.variant(lambda k: random_splits(k, depth, n_codes))
        for seed in range(5):
            feature, threshold = fn(jax.random.key(seed))
            chex.assert_shape([feature, threshold], (2**depth - 1,))
            chex.assert_type([feature, threshold], jnp.int32)
            feature, threshold = np.asarray(feature), np.asarray(threshold)
            assert np.all((0 <= feature) & (feature < len(n_codes)))
            upper = np.maximum(n_codes[feature] - 2, 0)
            assert np.all((0 <= threshold) & (threshold <= upper))

    @chex.variants(with_jit=True, without_jit=True)
    def test_same_key_same_structure(self):
        fn = self.variant(lambda k: random_splits(k, 5, N_CODES))
        a, b = fn(jax.random.key(7)), fn(jax.random.key(7))
        chex.assert_trees_all_equal(a, b)
        c = fn(jax.random.key(8))
        assert not np.array_equal(np.asarray(a[0]), np.asarray(c[0])) or not np.array_equal(
            np.asarray(a[1]), np.asarray(c[1]))

    def test_cell_mode_never_makes_an_empty_cell(self):
        n_codes = np.array([3, 5, 2, 4], np.int32)
        depth = 5
        keys = jax.random.split(jax.random.key(9), 64)
        both = jax.jit(jax.vmap(lambda k: (random_splits(k, depth, n_codes, "cell"),
                                           random_splits(k, depth, n_codes, "global"))))
        (features, thresholds), (gf, gt) = both(keys)
        chex.assert_shape([features, thresholds], (64, 2**depth - 1))
        checked = 0
        for f, t in zip(np.asarray(features), np.asarray(thresholds), strict=True):
            n_checked, bad = cell_violations(f, t, n_codes)
            assert bad == 0
            checked += n_checked
        assert checked > 64 * 7  # most of the 64 * 31 nodes could still be split
        # the paper's global thresholds do make empty cells (so the check has teeth)
        assert sum(cell_violations(f, t, n_codes)[1]
                   for f, t in zip(np.asarray(gf), np.asarray(gt), strict=True)) > 0

    def test_vmap_over_keys_matches_single_calls(self):
        keys, features, thresholds = many_structures()
        chex.assert_shape([features, thresholds], (N_KEYS, 2**DEPTH - 1))
        for i in (0, 1, 2, N_KEYS - 1):
            chex.assert_trees_all_equal((features[i], thresholds[i]),
                                        random_splits(keys[i], DEPTH, N_CODES))


def test_random_splits_rejects_unknown_range():
    with pytest.raises(ValueError, match="threshold_range"):
        random_splits(jax.random.key(0), 2, N_CODES, "local")


def test_global_features_and_thresholds_are_uniform():
    _, features, thresholds = many_structures()
    features, thresholds = np.asarray(features).ravel(), np.asarray(thresholds).ravel()
    n = features.size
    freq = np.bincount(features, minlength=len(N_CODES)) / n
    p = 1 / len(N_CODES)
    np.testing.assert_array_less(np.abs(freq - p), binomial_tolerance(p, n))
    for f, c in enumerate(N_CODES):
        t = thresholds[features == f]
        p = 1 / (c - 1)
        tfreq = np.bincount(t, minlength=c - 1) / t.size
        assert tfreq.size == c - 1  # never the last code: that split has an empty right side
        np.testing.assert_array_less(np.abs(tfreq - p),
                                      Z * np.sqrt(p * (1 - p) / t.size) + 1e-12)


def test_structure_independent_of_data():
    key = jax.random.key(12)
    fit = forest_fn(4, 3, 2, True)
    codes_a, y_a = make_data(20, 150)
    codes_b, _ = make_data(21, 150)
    y_b = np.random.default_rng(0).integers(0, 2, 150).astype(np.int32)
    a, _ = fit(key, jnp.asarray(codes_a), jnp.asarray(y_a), 1.0)
    b, _ = fit(key, jnp.asarray(codes_b), jnp.asarray(y_b), 0.05)
    np.testing.assert_array_equal(a.feature, b.feature)
    np.testing.assert_array_equal(a.threshold, b.threshold)
    assert not np.array_equal(a.leaf, b.leaf)
    c, _ = fit(jax.random.key(13), jnp.asarray(codes_a), jnp.asarray(y_a), 1.0)
    assert not np.array_equal(a.feature, c.feature)


# --------------------------------------------------------------------------------------------
# Routing
# --------------------------------------------------------------------------------------------


class LeafIndexTest(chex.TestCase):

    @chex.variants(with_jit=True, without_jit=True)
    def test_leaf_index_matches_reference(self):
        codes = random_codes(30, 200)
        for depth in (1, 3, 5):
            feature, threshold = random_splits(jax.random.key(depth), depth, N_CODES)
            leaf = self.variant(leaf_index)(feature, threshold, jnp.asarray(codes))
            chex.assert_shape(leaf, (200,))
            chex.assert_type(leaf, jnp.int32)
            expected = [reference_leaf(np.asarray(feature), np.asarray(threshold), row)
                        for row in codes]
            np.testing.assert_array_equal(leaf, expected)

    @chex.variants(with_jit=True, without_jit=True)
    def test_leaf_index_vmap_over_trees(self):
        codes = jnp.asarray(random_codes(31, 64))
        _, features, thresholds = many_structures()
        feature, threshold = features[:5], thresholds[:5]
        leaves = self.variant(jax.vmap(leaf_index, in_axes=(0, 0, None)))(feature, threshold,
                                                                           codes)
        chex.assert_shape(leaves, (5, 64))
        for t in range(5):
            expected = [reference_leaf(np.asarray(feature[t]), np.asarray(threshold[t]), row)
                        for row in np.asarray(codes)]
            np.testing.assert_array_equal(leaves[t], expected)


def test_apply_tree_reads_leaf_values():
    codes = random_codes(33, 40)
    feature, threshold = random_splits(jax.random.key(34), 3, N_CODES)
    values = jnp.arange(8.0) * 10
    tree = DenseTree(feature=feature, threshold=threshold, leaf=values)
    expected = [10.0 * reference_leaf(np.asarray(feature), np.asarray(threshold), row)
                for row in codes]
    np.testing.assert_array_equal(apply_tree(tree, jnp.asarray(codes)), expected)


# --------------------------------------------------------------------------------------------
# Greedy level mechanics (the Mα learner's greedy growth is tested in test_malpha_tree.py)
# --------------------------------------------------------------------------------------------


def planted():
    codes = random_codes(40, 400, np.full(5, 10, np.int32))
    y = (codes[:, 2] > 4).astype(np.int32)
    return jnp.asarray(codes), jnp.asarray(np.eye(2, dtype=np.float32)[y]), np.full(5, 10)


class GreedyLevelTest(chex.TestCase):

    @chex.variants(with_jit=True, without_jit=True)
    def test_argmin_levels_recover_planted_split_and_freeze_pure_children(self):
        codes, stats, n_codes = planted()

        def grow(codes, stats):
            feature, threshold = jnp.zeros(3, jnp.int32), jnp.zeros(3, jnp.int32)
            node = jnp.zeros(codes.shape[0], jnp.int32)
            for level in range(2):
                left, right, candidates = level_split_stats(codes, node, stats, level, n_codes,
                                                            stop_pure=True)
                risk = jnp.where(candidates, split_risk(left, right, 1.0), jnp.inf)
                choice = risk.reshape(2**level, -1).argmin(-1)
                feature, threshold, node = apply_level(
                    feature, threshold, node, codes, level, choice, n_codes,
                    frozen_nodes(left, candidates))
            return feature, threshold, node

        feature, threshold, leaf = self.variant(grow)(codes, stats)
        chex.assert_shape([feature, threshold], (3,))
        chex.assert_shape(leaf, (400,))
        assert (int(feature[0]), int(threshold[0])) == (2, 4)
        # the two children are pure: frozen (feature 0, last code), everything goes left
        np.testing.assert_array_equal(feature[1:], 0)
        np.testing.assert_array_equal(threshold[1:], 9)
        np.testing.assert_array_equal(leaf, leaf_index(feature, threshold, codes))
        np.testing.assert_array_equal(np.asarray(leaf) % 2, 0)
