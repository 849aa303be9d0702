"""Private oblivious trees (:mod:`dpjax.trees.oblivious`): the level utility's sensitivity, the
dense layout (one split per level), the leaves as comparison bits, and the selection."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.mechanisms.exponential import permute_and_flip
from dpjax.privacy import fixed_point
from dpjax.privacy.fixed_point import UNIT, to_units
from dpjax.trees.dense import level_slice
from dpjax.trees.oblivious import GAP_FLOOR, grow_oblivious, level_utility
from dpjax.trees.predict import leaf_index, step

N_CODES = np.asarray([2, 5, 8, 3], np.int32)


def random_problem(m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of :data:`N_CODES`, a random cell of four per record and gradients in units."""
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c, m) for c in N_CODES], 1).astype(np.uint8)
    gradient = np.asarray(to_units(rng.uniform(-1.0, 1.0, m)))
    return codes, rng.integers(0, 4, m).astype(np.int32), gradient


def utility_units(codes: np.ndarray, cell: np.ndarray, gradient: np.ndarray,
                  n_cells: int = 4) -> np.ndarray:
    """The level's utilities ``u(f, t)`` (not the gaps) directly, by int64 histograms of each
    cell and feature (``int64`` minimum where ``t`` is not a split)."""
    n_codes = int(N_CODES.max())
    out = np.full((len(N_CODES), n_codes), np.iinfo(np.int64).min)
    for f, codes_f in enumerate(N_CODES):
        hist = np.bincount(cell * n_codes + codes[:, f], weights=gradient.astype(np.float64),
                           minlength=n_cells * n_codes)
        left = np.cumsum(np.rint(hist).astype(np.int64).reshape(n_cells, n_codes), axis=1)
        right = left[:, -1:] - left
        out[f, :codes_f - 1] = (np.abs(left) + np.abs(right)).sum(0)[:codes_f - 1]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_level_utility_is_the_gradient_sums_separated_by_each_split(seed):
    codes, cell, gradient = random_problem(200, seed)
    gaps = np.asarray(level_utility(jnp.asarray(codes), jnp.asarray(cell),
                                    jnp.asarray(gradient), 4, 8, N_CODES))
    direct = utility_units(codes, cell, gradient)
    valid = direct > np.iinfo(np.int64).min
    np.testing.assert_array_equal(gaps[valid], (direct - direct[valid].max())[valid])
    assert np.all(gaps[~valid] == np.iinfo(np.int32).min)


def test_level_utility_goes_wide_with_the_same_floored_gaps(monkeypatch):
    """Past the (lowered) int32 limit the level's sums run per chunk and add up in two limbs:
    the same gaps as the int32 path and the direct sums."""
    codes, cell, gradient = random_problem(700, 4)
    args = (jnp.asarray(codes), jnp.asarray(cell), jnp.asarray(gradient), 4, 8, N_CODES)
    narrow = np.asarray(level_utility(*args))
    monkeypatch.setattr(fixed_point, "MAX_ROWS", 100)
    monkeypatch.setattr(fixed_point, "CHUNK_BITS", 6)
    np.testing.assert_array_equal(np.asarray(level_utility(*args)), narrow)
    direct = utility_units(codes, cell, gradient)
    valid = direct > np.iinfo(np.int64).min
    np.testing.assert_array_equal(narrow[valid], (direct - direct[valid].max())[valid])


@pytest.mark.slow
def test_level_utility_is_exact_where_int32_sums_would_overflow():
    """9.4 million records of gradient ``±1`` (``±2**8`` units), the sign set by feature 2's
    codes above 3 (2% flipped): the planted split's utility is ``2.3·10**9`` units, beyond
    int32, and the gaps are still the exact ones (some beyond the floor)."""
    m = 2**23 + 2**20
    rng = np.random.default_rng(7)
    codes = np.stack([rng.integers(0, c, m) for c in N_CODES], 1).astype(np.uint8)
    cell = rng.integers(0, 2, m).astype(np.int32)
    sign = np.where(codes[:, 2] > 3, 1, -1) * np.where(rng.uniform(size=m) < 0.02, -1, 1)
    gradient = (UNIT * sign).astype(np.int32)
    gaps = np.asarray(jax.jit(level_utility, static_argnums=(3, 4))(
        jnp.asarray(codes), jnp.asarray(cell), jnp.asarray(gradient), 2, 8, N_CODES))
    direct = utility_units(codes, cell, gradient, 2)
    valid = direct > np.iinfo(np.int64).min
    assert direct[valid].max() > 2**31
    expected = np.maximum(direct[valid] - direct[valid].max(), GAP_FLOOR)
    assert expected.min() == GAP_FLOOR and expected.max() == 0
    np.testing.assert_array_equal(gaps[valid], expected)


@pytest.mark.parametrize("seed", range(6))
def test_adding_a_record_moves_every_utility_by_at_most_one_unit_record(seed):
    """The sensitivity the selection is calibrated to: a record in one cell, on one side of
    every split, moves each ``u(f, t)`` by at most its ``|g| <= 2**8`` units."""
    codes, cell, gradient = random_problem(120, seed)
    rng = np.random.default_rng(100 + seed)
    extra_codes = np.asarray([[rng.integers(0, c) for c in N_CODES]], np.uint8)
    extra_gradient = np.asarray([UNIT * rng.choice([-1, 1])], np.int32)
    before = utility_units(codes, cell, gradient)
    after = utility_units(np.concatenate([codes, extra_codes]),
                          np.concatenate([cell, [rng.integers(0, 4)]]),
                          np.concatenate([gradient, extra_gradient]))
    valid = before > np.iinfo(np.int64).min
    assert np.max(np.abs(after[valid] - before[valid])) <= UNIT


def test_oblivious_tree_shares_each_level_split_and_its_leaves_are_the_comparison_bits():
    codes, _, gradient = random_problem(300, 9)
    feature, threshold, leaf, cost = grow_oblivious(
        jax.random.key(0), jnp.asarray(codes), jnp.asarray(gradient), 3, N_CODES,
        jnp.float32(0.5), 1.0)
    chex.assert_shape((feature, threshold), (7,))
    for level in range(3):
        assert len(set(np.asarray(feature[level_slice(level)]).tolist())) == 1
        assert len(set(np.asarray(threshold[level_slice(level)]).tolist())) == 1
    np.testing.assert_array_equal(leaf, leaf_index(feature, threshold, jnp.asarray(codes)))
    np.testing.assert_allclose(cost.epsilon, [0.5, 0.5, 0.5])
    assert np.all(np.asarray(threshold) < N_CODES[np.asarray(feature)] - 1)


def planted_gradients(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Feature 2's codes above 3 carry gradient −1, the rest +1 (up to 10% flips): the
    best first split is feature 2 at threshold 3."""
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c, m) for c in N_CODES], 1).astype(np.uint8)
    sign = np.where(codes[:, 2] > 3, -1.0, 1.0) * np.where(rng.uniform(size=m) < 0.1, -1, 1)
    return codes, np.asarray(to_units(0.5 * sign))


def test_without_privacy_each_level_takes_its_best_split():
    codes, gradient = planted_gradients(500, 1)
    feature, threshold, _, cost = grow_oblivious(
        jax.random.key(0), jnp.asarray(codes), jnp.asarray(gradient), 2, N_CODES, None, 1.0)
    assert (int(feature[0]), int(threshold[0])) == (2, 3)
    np.testing.assert_array_equal(cost.epsilon, [0.0, 0.0])


def test_private_selection_finds_a_strong_split_and_is_uniform_at_a_tiny_budget():
    """At ``ε_l = 1`` on 2,000 rows the planted split leads the others by hundreds of rows and
    is drawn every time; at ``ε_l = 1e-6`` the draw is nearly uniform over the 14 splits (the
    planted one about 1/14 of 400 draws: 28.6 expected, at most 60 by a wide margin)."""
    codes, gradient = planted_gradients(2000, 2)
    grow = jax.jit(jax.vmap(
        lambda key, eps: grow_oblivious(key, jnp.asarray(codes), jnp.asarray(gradient), 1,
                                        N_CODES, eps, 1.0)[:2], in_axes=(0, None)))
    keys = jax.random.split(jax.random.key(3), 400)
    feature, threshold = grow(keys, jnp.float32(1.0))
    assert np.all(np.asarray(feature[:, 0]) == 2) and np.all(np.asarray(threshold[:, 0]) == 3)
    feature, threshold = grow(keys, jnp.float32(1e-6))
    planted = np.sum((np.asarray(feature[:, 0]) == 2) & (np.asarray(threshold[:, 0]) == 3))
    assert planted < 60
    assert len(set(np.asarray(feature[:, 0]).tolist())) == len(N_CODES)


@pytest.mark.parametrize("epsilon", [None, 0.5])
def test_the_level_scan_equals_the_unrolled_unpadded_levels(epsilon):
    """``grow_oblivious`` runs its levels as a ``lax.scan`` whose histograms are padded to the
    last level's cells; level ``l`` by hand, at its own ``2**l`` cells with the same key
    ``fold_in(key, l)``, draws the same split bit for bit (the padded cells add 0 to every
    exact utility)."""
    codes, _, gradient = random_problem(400, 11)
    codes, gradient, key = jnp.asarray(codes), jnp.asarray(gradient), jax.random.key(5)
    eps = None if epsilon is None else jnp.float32(epsilon)
    feature, threshold, leaf, cost = grow_oblivious(key, codes, gradient, 3, N_CODES, eps, 1.0)
    cell = jnp.zeros(400, jnp.int32)
    for level in range(3):
        gaps = level_utility(codes, cell, gradient, 2**level, int(N_CODES.max()), N_CODES)
        utility = jnp.where(gaps > jnp.iinfo(jnp.int32).min,
                            jnp.maximum(gaps, GAP_FLOOR).astype(jnp.float32), -jnp.inf)
        utility = utility.reshape(-1)
        index = (jnp.argmax(utility) if eps is None else permute_and_flip(
            jax.random.fold_in(key, level), utility, UNIT, eps)[0])
        f, t = int(index) // int(N_CODES.max()), int(index) % int(N_CODES.max())
        np.testing.assert_array_equal(feature[level_slice(level)], f)
        np.testing.assert_array_equal(threshold[level_slice(level)], t)
        cell = 2 * cell + step(feature, threshold, codes, cell + 2**level - 1)
    np.testing.assert_array_equal(leaf, cell)
    chex.assert_shape(cost.epsilon, (3,))


# --- every model's level at once (docs/design.md, "Models share reads") ---------------------

@pytest.mark.parametrize("depth", [1, 2, 4, 5])
def test_vmapped_trees_are_each_models_own_tree(depth):
    """Vmapped, a level's left cells are every model's windowed scatter and its right cells a
    subtraction from the parent level (:func:`dpjax.trees.oblivious.level_histogram`); the
    trees, leaves and draws are each model's own, bit for bit, nested vmaps included."""
    codes, _, _ = random_problem(700, 3)
    rng = np.random.default_rng(depth)
    gradients = jnp.asarray(to_units(rng.uniform(-1.0, 1.0, (2, 3, 700))))
    keys = jax.random.split(jax.random.key(depth), 6).reshape(2, 3)

    def grow(key, gradient):
        return grow_oblivious(key, jnp.asarray(codes), gradient, depth, N_CODES, 0.5, 1.0)

    batched = jax.jit(jax.vmap(jax.vmap(grow)))(keys, gradients)
    for i in range(2):
        for j in range(3):
            chex.assert_trees_all_equal(jax.tree.map(lambda a, i=i, j=j: a[i, j], batched),
                                        jax.jit(grow)(keys[i, j], gradients[i, j]))


def test_window_histograms_are_each_models_node_histogram():
    from dpjax.trees.histogram import group_size, node_histogram, pack_codes, window_histograms
    codes, _, _ = random_problem(400, 4)
    rng = np.random.default_rng(5)
    lanes, n_models = 3, 7
    lane = jnp.asarray(rng.integers(-1, lanes + 1, (n_models, 400)), jnp.int32)  # -1, 3: out
    stats = jnp.asarray(rng.integers(-256, 257, (n_models, 400)), jnp.int32)
    n_codes = int(N_CODES.max())
    group = min(group_size(n_codes, 1), codes.shape[1])
    hist = window_histograms(pack_codes(jnp.asarray(codes), n_codes, group), lane, stats, lanes,
                             n_codes, group, codes.shape[1])
    for b in range(n_models):
        node = jnp.where((lane[b] >= 0) & (lane[b] < lanes), lane[b], lanes)
        own = node_histogram(jnp.asarray(codes), node, stats[b][:, None], lanes + 1, n_codes)
        np.testing.assert_array_equal(np.asarray(hist[b]), np.asarray(own[:lanes, ..., 0]))
