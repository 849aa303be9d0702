"""DP mechanisms: permute-and-flip selection (McKenna & Sheldon 2020)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.mechanisms import permute_and_flip
from dpjax.privacy import Cost
from tests.conftest import binomial_tolerance, pf_probabilities, pf_probabilities_by_count

N_DRAWS = 100_000


def assert_frequencies(draws: np.ndarray, probs: np.ndarray) -> None:
    """Per-cell check of empirical frequencies against ``probs`` at Z binomial sigmas."""
    draws = np.asarray(draws).reshape(-1)
    freq = np.bincount(draws, minlength=len(probs)) / draws.size
    assert freq.shape == probs.shape
    np.testing.assert_array_less(np.abs(freq - probs), binomial_tolerance(probs, draws.size)
                                 + 1e-12)


# --------------------------------------------------------------------------------------------
# Permute-and-flip (McKenna & Sheldon 2020)
# --------------------------------------------------------------------------------------------

UTILITY = np.array([0.0, 1.0, 2.0, 3.0, -1.0])


def pf_by_permutations(p: np.ndarray) -> np.ndarray:
    """The definition itself: visit the candidates in each of the ``n!`` orders and stop at the
    first head (the best candidate's coin is always heads)."""
    probs = np.zeros(len(p))
    orders = list(itertools.permutations(range(len(p))))
    for order in orders:
        survive = 1.0
        for r in order:
            probs[r] += survive * p[r] / len(orders)
            survive *= 1.0 - p[r]
    return probs


def softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max())
    return z / z.sum()


# One compiled program for every (N_DRAWS, 5) batched check: sensitivity and epsilon traced.
pf_batched = jax.jit(lambda key, utility, sensitivity, epsilon: permute_and_flip(
    key, utility, sensitivity, epsilon, label="sens. 1"))


def batched(utility: np.ndarray) -> jax.Array:
    return jnp.broadcast_to(jnp.asarray(utility, jnp.float32), (N_DRAWS, len(utility)))


@pytest.mark.parametrize("utility", [UTILITY, [1.0, 3.0, 3.0, 0.0], [0.0, -np.inf, 2.0, 0.5]])
@pytest.mark.parametrize(("epsilon", "sensitivity"), [(0.3, 1.0), (2.0, 1.0), (4.0, 3.0)])
def test_permute_and_flip_reference(utility, epsilon, sensitivity):
    """The head-set formula equals the definition (first head in a random order), sums to 1
    and never picks ``-inf``; its expected utility is at least the exponential mechanism's
    (McKenna & Sheldon 2020)."""
    utility = np.asarray(utility)
    finite = np.isfinite(utility)
    best = utility[finite].max()
    p = np.where(finite, np.exp(epsilon * (np.where(finite, utility, best) - best)
                                / (2.0 * sensitivity)), 0.0)
    probs = pf_probabilities(utility, sensitivity, epsilon)
    np.testing.assert_allclose(probs, pf_by_permutations(p), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(pf_probabilities_by_count(utility, sensitivity, epsilon), probs,
                               rtol=1e-12, atol=1e-15)
    assert probs.sum() == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_array_equal(probs[~finite], 0.0)
    exponential = softmax(epsilon * utility[finite] / (2.0 * sensitivity))
    assert probs[finite] @ utility[finite] >= exponential @ utility[finite] - 1e-12


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.5, 1.0), (0.5, 2.0), (4.0, 3.0)])
def test_permute_and_flip_frequencies_batched(epsilon, sensitivity):
    draws, cost = pf_batched(jax.random.key(0), batched(UTILITY), sensitivity, epsilon)
    assert draws.shape == (N_DRAWS,)
    assert draws.dtype == jnp.int32
    assert_frequencies(draws, pf_probabilities(UTILITY, sensitivity, epsilon))
    # one selection per row, each spending epsilon
    assert isinstance(cost, Cost)
    assert cost.epsilon.shape == cost.delta.shape == (N_DRAWS,)
    np.testing.assert_array_equal(cost.epsilon, np.float32(epsilon))
    np.testing.assert_array_equal(cost.delta, 0.0)
    assert cost.mechanism == "permute-and-flip (sens. 1)"


def test_permute_and_flip_is_not_the_exponential_mechanism():
    """The frequency checks have power: at eps = 4 permute-and-flip picks the best candidate
    far more often than softmax(eps u / 2) would."""
    draws, _ = pf_batched(jax.random.key(1), batched(UTILITY), 1.0, 4.0)
    freq_best = float(np.mean(np.asarray(draws) == 3))
    softmax_best = softmax(4.0 * UTILITY / 2.0)[3]
    assert pf_probabilities(UTILITY, 1.0, 4.0)[3] > softmax_best + 0.05
    assert abs(freq_best - softmax_best) > 10 * binomial_tolerance(softmax_best, N_DRAWS)


def test_permute_and_flip_ties_are_uniform():
    utility = np.array([3.0, 1.0, 3.0, 0.0, -1.0])
    draws, _ = pf_batched(jax.random.key(2), batched(utility), 1.0, 2.0)
    probs = pf_probabilities(utility, 1.0, 2.0)
    assert probs[0] == pytest.approx(probs[2], rel=1e-12)
    assert_frequencies(draws, probs)


def test_permute_and_flip_frequencies_vmap_over_keys():
    keys = jax.random.split(jax.random.key(3), N_DRAWS)
    draws, cost = jax.jit(jax.vmap(lambda k: permute_and_flip(k, UTILITY, 1.0, 2.0)))(keys)
    assert draws.shape == (N_DRAWS,)
    assert cost.epsilon.shape == (N_DRAWS,)
    assert_frequencies(draws, pf_probabilities(UTILITY, 1.0, 2.0))


@pytest.mark.slow
def test_permute_and_flip_vmap_over_epsilon():
    epsilons = [0.2, 1.0, 6.0]
    n = 50_000
    utility = jnp.broadcast_to(jnp.asarray(UTILITY, jnp.float32), (n, len(UTILITY)))
    draws, cost = jax.jit(jax.vmap(lambda e: permute_and_flip(jax.random.key(4), utility, 1.0,
                                                              e)))(jnp.asarray(epsilons))
    assert draws.shape == (3, n)
    np.testing.assert_array_equal(cost.epsilon, np.broadcast_to(
        np.float32(epsilons)[:, None], (3, n)))
    for row, eps in zip(np.asarray(draws), epsilons, strict=True):
        assert_frequencies(row, pf_probabilities(UTILITY, 1.0, eps))


def test_permute_and_flip_neg_inf_never_chosen_and_huge_epsilon_is_argmax():
    utility = np.array([0.0, -np.inf, 0.5, -np.inf, -3.0], np.float32)
    for eps in (0.01, 1.0, 50.0):
        draws = np.asarray(pf_batched(jax.random.key(5), batched(utility), 1.0, eps)[0])
        assert not np.isin(draws, [1, 3]).any()
        # the finite candidates all remain possible at small epsilon
        if eps == 0.01:
            assert set(np.unique(draws)) == {0, 2, 4}
    # a huge budget leaves only the best candidate's coin heads, but for the cap: every other
    # coin is heads with probability e^-16 (GAMMA_CAP), so about N_DRAWS·4·e^-16 ≈ 0.05 draws in
    # all miss the argmax; 3 or more has probability below 2e-5
    draws = np.asarray(pf_batched(jax.random.key(6), batched(UTILITY), 1.0, 1e5)[0])
    assert (draws != 3).sum() <= 2
    # a row with no finite utility returns index 0
    index, _ = permute_and_flip(jax.random.key(7), jnp.full((2, 3), -jnp.inf), 1.0, 1.0)
    np.testing.assert_array_equal(index, 0)


def test_permute_and_flip_under_jit():
    fn = jax.jit(lambda k, e: permute_and_flip(k, UTILITY, 1.0, e))
    a, cost = fn(jax.random.key(8), 1.0)
    b, _ = fn(jax.random.key(8), 1.0)
    assert a.shape == () and cost.epsilon.shape == ()
    assert int(a) == int(b)
    assert 0 <= int(a) < len(UTILITY)
    assert len({int(fn(jax.random.key(s), 0.1)[0]) for s in range(20)}) > 1


@pytest.mark.slow
def test_permute_and_flip_vmap_keys_matches_single_calls():
    keys = jax.random.split(jax.random.key(40), 4)
    utility = jnp.asarray(np.random.default_rng(0).normal(size=(200, 7)), jnp.float32)
    single = jax.jit(lambda k: permute_and_flip(k, utility, 1.0, 1.0)[0])
    by_key = jax.jit(jax.vmap(single))(keys)
    assert by_key.shape == (4, 200)
    for i in range(4):
        np.testing.assert_array_equal(by_key[i], single(keys[i]))
    assert not np.array_equal(by_key[0], by_key[1])


def test_integer_utilities_past_float32_precision_are_compared_exactly():
    """Counts of ``2**26`` and ``2**26 + 1`` are the same float32: read as floats they would
    tie (each picked half the time). As integers their gap is 1: at ``ε = 4``, ``Δ = 1`` the
    lesser one is picked with permute-and-flip's exact probability ``e**−2/2`` (2,000 draws,
    within the binomial tolerance); small integers give the float path's picks bit for bit."""
    draw = jax.jit(jax.vmap(lambda key, u: permute_and_flip(key, u, 1.0, 4.0)[0],
                            in_axes=(0, None)))
    keys = jax.random.split(jax.random.key(0), 2_000)
    expected = pf_probabilities([1.0, 2.0], 1.0, 4.0)[0]
    frequency = float(jnp.mean(draw(keys, jnp.asarray([2**26, 2**26 + 1], jnp.int32)) == 0))
    assert abs(frequency - expected) <= binomial_tolerance(expected, 2_000)
    small = jnp.asarray([3, 7, 1, 7, 0], jnp.int32)
    np.testing.assert_array_equal(draw(keys, small), draw(keys, small.astype(jnp.float32)))
    extremes = jnp.asarray([-2**31, 2**31 - 1], jnp.int32)       # a gap past int32: floored
    assert set(np.asarray(draw(keys[:50], extremes)).tolist()) == {1}
    with pytest.raises(TypeError, match="int32"):
        permute_and_flip(keys[0], jnp.asarray([1, 2], jnp.int16), 1.0, 1.0)
