"""DP mechanisms (permute-and-flip selection; the Laplace mechanism with exact discrete Laplace
noise on a fixed-point grid), the costs they report and the privacy ledger."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import Z, binomial_tolerance, pf_probabilities, pf_probabilities_by_count

from dpjax.ensembles.random_trees import leaf_epsilon
from dpjax.mechanisms import (
    Cost,
    LedgerEntry,
    PrivacyLedger,
    advanced_composition,
    check_epsilon,
    laplace_mechanism,
    parallel,
    permute_and_flip,
    zcdp_to_dp,
)
from dpjax.mechanisms.exact import laplace_fraction
from dpjax.mechanisms.laplace import grid_step
from dpjax.mechanisms.rounding import round_up

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
    # a huge budget leaves only the best candidate's coin heads: the argmax every time
    draws = np.asarray(pf_batched(jax.random.key(6), batched(UTILITY), 1.0, 1e5)[0])
    np.testing.assert_array_equal(draws, 3)
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


def test_permute_and_flip_vmap_keys_matches_single_calls():
    keys = jax.random.split(jax.random.key(40), 4)
    utility = jnp.asarray(np.random.default_rng(0).normal(size=(200, 7)), jnp.float32)
    single = jax.jit(lambda k: permute_and_flip(k, utility, 1.0, 1.0)[0])
    by_key = jax.jit(jax.vmap(single))(keys)
    assert by_key.shape == (4, 200)
    for i in range(4):
        np.testing.assert_array_equal(by_key[i], single(keys[i]))
    assert not np.array_equal(by_key[0], by_key[1])


# --------------------------------------------------------------------------------------------
# The Laplace mechanism: exact discrete Laplace noise on a fixed-point grid
# --------------------------------------------------------------------------------------------

N_NOISE = 200_000


def fraction(scale: float) -> tuple[int, int]:
    """``(t, s)`` of ``laplace_fraction`` for the (rounded-up) scale ``scale``."""
    t, s = laplace_fraction(round_up(jnp.float32(scale)))
    return int(t), int(s)


def discrete_laplace_pmf(z: np.ndarray, q: float) -> np.ndarray:
    return (1 - q) / (1 + q) * q ** np.abs(z)


def discrete_laplace_moments(q: float) -> tuple[float, float]:
    """Variance ``2q/(1-q)^2`` and the fourth moment (series summed far into the tail)."""
    var = 2 * q / (1 - q) ** 2
    limit = int(60 / -math.log(q)) + 50
    support = np.arange(-limit, limit + 1).astype(np.float64)
    return var, float(np.sum(discrete_laplace_pmf(support, q) * support**4))


def assert_discrete_laplace(noise: np.ndarray, q: float) -> None:
    """Integer noise whose pmf near 0, mean and variance are discrete Laplace ``q``."""
    assert np.all(noise == np.round(noise))
    n = noise.size
    zs = np.arange(-3, 4)
    pmf = discrete_laplace_pmf(zs, q)
    freq = np.array([np.mean(noise == z) for z in zs])
    np.testing.assert_array_less(np.abs(freq - pmf), binomial_tolerance(pmf, n) + 1e-12)
    var, fourth = discrete_laplace_moments(q)
    assert abs(noise.mean()) < Z * math.sqrt(var / n)
    assert abs(noise.var() - var) < Z * math.sqrt((fourth - var**2) / n)


laplace_counts = jax.jit(lambda key, value, sensitivity, epsilon: laplace_mechanism(
    key, value, sensitivity, epsilon, integer=True, label="L1 sens. 1"))


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1.0, 0.7), (2.0, 1.0), (1.0, 2.5),
                                                      (3.0, 0.5)])
def test_laplace_integer_counts_are_exact_discrete_laplace(sensitivity, epsilon):
    """Counts (grid 1): noise ``P(Z = z) ∝ exp(-|z| s/t)`` with ``t/s >= Delta/eps``; the cost
    reported is the epsilon that noise buys, ``Delta s/t <= eps``."""
    released, cost = laplace_counts(jax.random.key(10), jnp.full(N_NOISE, 7.0), sensitivity,
                                    epsilon)
    assert released.dtype == jnp.float32 and released.shape == (N_NOISE,)
    t, s = fraction(sensitivity / epsilon)
    assert Fraction(t, s) >= Fraction(sensitivity) / Fraction(epsilon)
    assert_discrete_laplace(np.asarray(released, np.float64) - 7.0, math.exp(-s / t))
    # the whole vector is one release (event_ndim=None): one scalar cost
    assert cost.epsilon.shape == cost.delta.shape == ()
    assert float(cost.epsilon) == pytest.approx(sensitivity * s / t, rel=1e-7)
    assert float(cost.epsilon) <= epsilon
    assert float(cost.epsilon) >= epsilon * (1 - 2**-10)
    assert float(cost.delta) == 0.0
    assert cost.mechanism == "discrete Laplace (L1 sens. 1)"


def test_laplace_noise_is_independent_per_counter():
    released, _ = laplace_counts(jax.random.key(11), jnp.zeros(N_NOISE), 1.0, 0.5)
    pairs = np.asarray(released, np.float64).reshape(-1, 2)
    corr = np.corrcoef(pairs[:, 0], pairs[:, 1])[0, 1]
    assert abs(corr) < Z / math.sqrt(len(pairs))


def test_laplace_real_values_on_the_grid():
    """Real values: the grid ``g`` is a power of two with ``2^10 <= Delta/g < 2^11`` (at eps
    >= 2^-10); the release is a multiple of ``g`` whose noise in grid units is discrete Laplace
    of scale ``t/s >= ceil(Delta/g)/eps``; each scalar (event_ndim=0) is one release."""
    sensitivity, epsilon, bound, value = 2.0, 0.5, 4.0, 0.25
    g = float(grid_step(sensitivity, epsilon, bound))
    assert math.log2(g) == int(math.log2(g))
    assert 2**10 <= sensitivity / g < 2**11
    released, cost = jax.jit(lambda k: laplace_mechanism(
        k, jnp.full(N_NOISE, value), sensitivity, epsilon, bound=bound, event_ndim=0))(
            jax.random.key(12))
    grid_units = np.asarray(released, np.float64) / g
    np.testing.assert_array_equal(grid_units, np.round(grid_units))
    delta_int = math.ceil(sensitivity / g)
    t, s = fraction(delta_int / epsilon)
    assert Fraction(t, s) * Fraction(g) >= Fraction(sensitivity) / Fraction(epsilon)
    assert_discrete_laplace(grid_units - value / g, math.exp(-s / t))
    assert cost.epsilon.shape == (N_NOISE,)
    np.testing.assert_allclose(cost.epsilon, delta_int * s / t, rtol=1e-7)
    assert float(cost.epsilon.max()) <= epsilon


def test_laplace_release_does_not_carry_low_order_bits():
    """Mironov (2012): float noise leaks the input through the output's low-order bits. Here
    two inputs in the same grid cell give the very same release with the same key."""
    sensitivity, epsilon, bound = 1.0, 1.0, 1.0
    g = float(grid_step(sensitivity, epsilon, bound))
    release = jax.jit(lambda k, v: laplace_mechanism(k, v, sensitivity, epsilon, bound=bound,
                                                     event_ndim=0)[0])
    a = jnp.full(1000, 0.25 + g / 8)
    b = jnp.full(1000, 0.25 + 5 * g / 8)
    np.testing.assert_array_equal(release(jax.random.key(13), a), release(jax.random.key(13), b))
    # while a value one grid step away does move the release
    c = jnp.full(1000, 0.25 + g)
    np.testing.assert_array_equal(release(jax.random.key(13), c) - release(jax.random.key(13), a),
                                  np.float32(g))


def test_laplace_clips_to_the_bound_and_needs_one_for_real_values():
    release = jax.jit(lambda k, v: laplace_mechanism(k, v, 1.0, 1e6, bound=1.0,
                                                     event_ndim=0)[0])
    # a huge budget: noise of at most a few grid steps (P(|Z| > 10) < e^-40); values are
    # clipped to [-1, 1] first
    g = float(grid_step(1.0, 1e6, 1.0))
    out = np.asarray(release(jax.random.key(14), jnp.asarray([10.0, -10.0, 0.5, -0.25])))
    np.testing.assert_allclose(out, [1.0, -1.0, 0.5, -0.25], rtol=0, atol=10 * g)
    with pytest.raises(ValueError, match="bound"):
        laplace_mechanism(jax.random.key(0), jnp.zeros(3), 1.0, 1.0)
    # counts need none: grid 1, never rounded (a bound only widens the grid, to a power of two,
    # when the counts need more than 28 bits)
    counts = jnp.asarray([5, 50, 2**29 + 7], jnp.int32)
    out, cost = laplace_mechanism(jax.random.key(0), counts[:2], 1.0, 1e6, integer=True,
                                  bound=100.0)
    np.testing.assert_array_equal(out, [5.0, 50.0])
    out, wide = laplace_mechanism(jax.random.key(0), counts, 8.0, 3.0, integer=True,
                                  bound=2.0**30, event_ndim=0)
    np.testing.assert_array_equal(np.asarray(out) % 4, 0)  # the grid is 2**30 / 2**28 = 4
    assert abs(float(out[2]) - (2**29 + 4)) < 4 * 200  # floor(v / 4) * 4 + 4 * noise
    t, s = fraction(math.ceil(8.0 / 4) / 3.0)  # integer sensitivity on the grid: 2
    np.testing.assert_allclose(wide.epsilon, 2 * s / t, rtol=1e-7)
    # on a grid coarser than 1 each changed coordinate of a block can cross one more step
    _, block = laplace_mechanism(jax.random.key(0), counts, 8.0, 3.0, integer=True,
                                 bound=2.0**30)
    t, s = fraction((math.ceil(8.0 / 4) + 2) / 3.0)
    assert float(block.epsilon) == pytest.approx(4 * s / t, rel=1e-7)
    assert float(block.epsilon) <= 3.0


def test_laplace_event_ndim_sets_the_releases_and_their_sensitivity():
    """Leading axes are releases (one cost each); the trailing ``event_ndim`` axes form one
    release. On the real grid a block of ``c`` coordinates has integer sensitivity
    ``ceil(Delta/g) + c - 1`` (each coordinate's floor can move by one more step)."""
    key = jax.random.key(15)
    counts, cost = laplace_mechanism(key, jnp.zeros((3, 4, 2)), 2.0, 0.5, integer=True,
                                     event_ndim=2)
    assert counts.shape == (3, 4, 2) and cost.epsilon.shape == (3,)
    t, s = fraction(2.0 / 0.5)
    np.testing.assert_allclose(cost.epsilon, 2.0 * s / t, rtol=1e-7)
    sensitivity, epsilon, bound = 1.0, 2.0, 1.0
    g = float(grid_step(sensitivity, epsilon, bound))
    for shape, event_ndim, coordinates in (((6,), 0, 1), ((3, 2), 1, 2), ((3, 2), 2, 6)):
        _, cost = laplace_mechanism(key, jnp.zeros(shape), sensitivity, epsilon, bound=bound,
                                    event_ndim=event_ndim)
        assert cost.epsilon.shape == shape[:len(shape) - event_ndim]
        t, s = fraction((math.ceil(sensitivity / g) + coordinates - 1) / epsilon)
        np.testing.assert_allclose(cost.epsilon, (math.ceil(sensitivity / g) + coordinates - 1)
                                   * s / t, rtol=1e-7)
        assert float(np.max(cost.epsilon)) <= epsilon


def test_laplace_vmap_keys_and_epsilon():
    keys = jax.random.split(jax.random.key(41), 4)
    single = jax.jit(lambda k: laplace_mechanism(k, jnp.zeros(1000), 1.0, 0.5, integer=True))
    by_key, cost = jax.jit(jax.vmap(single))(keys)
    assert by_key.shape == (4, 1000) and cost.epsilon.shape == (4,)
    for i in range(4):
        np.testing.assert_array_equal(by_key[i], single(keys[i])[0])
    assert not np.array_equal(by_key[0], by_key[1])
    epsilons = [0.1, 1.0, 3.0]
    n = 100_000
    by_eps, cost = jax.jit(jax.vmap(lambda e: laplace_mechanism(
        keys[1], jnp.zeros(n), 1.0, e, integer=True)))(jnp.asarray(epsilons))
    for row, eps, spent in zip(np.asarray(by_eps, np.float64), epsilons, np.asarray(cost.epsilon),
                               strict=True):
        t, s = fraction(1.0 / eps)
        q = math.exp(-s / t)
        assert np.all(row == np.round(row))
        p0 = (1 - q) / (1 + q)
        assert abs(np.mean(row == 0) - p0) < binomial_tolerance(p0, n)
        assert spent == pytest.approx(s / t, rel=1e-7) and spent <= eps


def test_laplace_fraction_is_a_conservative_power_of_two_ratio():
    scales = np.concatenate([np.logspace(0, 20 * math.log10(2), 500), [1.0, 3.0, 1 / 0.7]])
    t, s = (np.asarray(a, np.int64) for a in laplace_fraction(round_up(jnp.float32(scales))))
    for ti, si, scale in zip(t, s, np.float32(scales).astype(np.float64), strict=True):
        k = int(ti).bit_length() - 1
        assert ti == 2**k and 11 <= k <= 31
        assert si >= 1
        assert Fraction(int(ti), int(si)) >= Fraction(scale)
        assert ti / si <= scale * (1 + 2**-10)
    # beyond 2**31 the sampler has no room: s = 0 marks it
    _, s = laplace_fraction(jnp.float32(2.0**32))
    assert int(s) == 0


def test_too_small_epsilon_gives_a_nan_cost_that_the_ledger_refuses():
    _, cost = laplace_mechanism(jax.random.key(16), jnp.zeros(3), 1.0, 1e-10, integer=True)
    assert np.isnan(cost.epsilon)
    with pytest.raises(ValueError, match="epsilon is too small"):
        PrivacyLedger(requested_epsilon=1.0).with_costs({"counts": cost})


# --------------------------------------------------------------------------------------------
# Costs: pytrees, gating, parallel composition, the ledger built from them
# --------------------------------------------------------------------------------------------


def test_cost_is_a_pytree_through_jit_vmap_and_scan():
    def release(key, epsilon):
        return laplace_mechanism(key, jnp.zeros(4), 1.0, epsilon, integer=True)[1]

    cost = jax.jit(release)(jax.random.key(0), 0.5)
    assert isinstance(cost, Cost) and cost.mechanism == "discrete Laplace"
    assert len(jax.tree.leaves(cost)) == 2
    batched_cost = jax.vmap(release, in_axes=(None, 0))(jax.random.key(0), jnp.ones(3))
    assert batched_cost.epsilon.shape == (3,)

    def step(carry, eps):
        return carry, release(jax.random.key(0), eps)

    _, scanned = jax.lax.scan(step, 0, jnp.asarray([0.5, 1.0]))
    assert scanned.epsilon.shape == (2,) and scanned.mechanism == "discrete Laplace"


def test_cost_gated_and_parallel():
    cost = Cost(jnp.asarray([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]), jnp.zeros((2, 3)), "m")
    gated = cost.gated(jnp.asarray([True, False])[:, None])
    np.testing.assert_allclose(gated.epsilon, [[0.1, 0.2, 0.3], [0, 0, 0]])
    assert gated.mechanism == "m"
    together = parallel(cost)
    np.testing.assert_allclose(together.epsilon, [0.3, 0.6])
    assert together.mechanism == "m"
    np.testing.assert_allclose(parallel(cost, axis=0).epsilon, [0.4, 0.5, 0.6])
    np.testing.assert_allclose(parallel(cost, touched=2).epsilon, [0.6, 1.2])
    np.testing.assert_allclose(parallel(cost, axis=(0, 1)).epsilon, 0.6)


def test_ledger_with_costs_groups_distinct_releases_in_order():
    costs = {
        "splits": Cost(np.float32([[0.1, 0.05, 0.05], [0.1, 0.05, 0.05]]), np.float32(0.0),
                       "permute-and-flip"),
        "skipped": Cost(np.zeros(3, np.float32), np.zeros(3, np.float32), "discrete Laplace"),
        "leaves": Cost(np.float32([0.2, 0.0]), np.float32([1e-6, 0.0]), "discrete Laplace"),
    }
    ledger = PrivacyLedger(requested_epsilon=1.0).with_costs(costs)
    got = [(e.what, e.mechanism, e.epsilon, e.delta, e.count) for e in ledger.entries]
    assert got == [
        ("splits", "permute-and-flip", pytest.approx(0.05), 0.0, 4),
        ("splits", "permute-and-flip", pytest.approx(0.1), 0.0, 2),
        ("leaves", "discrete Laplace", pytest.approx(0.2), pytest.approx(1e-6), 1),
    ]  # releases that spent nothing are left out
    assert ledger.epsilon == pytest.approx(4 * 0.05 + 2 * 0.1 + 0.2, rel=1e-6)
    assert ledger.delta == pytest.approx(1e-6)
    assert ledger.private
    assert PrivacyLedger(requested_epsilon=1.0).with_costs({}).entries == ()


# --------------------------------------------------------------------------------------------
# Budget shares and composition
# --------------------------------------------------------------------------------------------

_RNG = np.random.default_rng(7)
BUDGETS = [0.01, 0.1, 0.3, 1 / 3, 0.7, 1.0, 2.2, 10.0, 1e-6, 123.456,
           *(float(v) for v in _RNG.uniform(1e-3, 20, 30))]


def test_budget_shares_never_exceed():
    """The per-release shares the learners use (float32, rounded down: ``leaf_epsilon``) times
    their count never exceed the requested budget, and stay within a few ulps of it; the ledger
    built from them stays within the budget."""
    counts = np.asarray([*range(1, 120), 127, 255, 1000, 1001, 4096, 99_991])
    shares = jax.jit(jax.vmap(jax.vmap(lambda e, k: leaf_epsilon(e, k, 0, "tree"),
                                       in_axes=(None, 0)), in_axes=(0, None)))
    all_shares = np.asarray(shares(jnp.float32(BUDGETS), jnp.float32(counts)), np.float64)
    for eps, row in zip(BUDGETS, all_shares, strict=True):
        assert np.all(row > 0)
        assert np.all(row * counts <= eps), eps
        assert np.all(row >= eps / counts * (1 - 1e-6))
        for share, k in zip(row[::25], counts[::25], strict=True):
            ledger = PrivacyLedger(requested_epsilon=eps).with_costs(
                {"x": Cost(np.full(k, share, np.float32), np.float32(0.0), "Laplace")})
            assert ledger.epsilon <= eps


def test_basic_composition_totals():
    ledger = PrivacyLedger(requested_epsilon=2.0)
    ledger = ledger.record(LedgerEntry("counts", "Laplace", 0.1, count=5))
    ledger2 = ledger.record(LedgerEntry("means", "Gaussian", 0.25, delta=1e-6, count=4))
    assert len(ledger.entries) == 1  # record returns a new ledger
    assert ledger.epsilon == pytest.approx(0.5)
    assert ledger2.epsilon == pytest.approx(1.5)
    assert ledger2.delta == pytest.approx(4e-6)
    assert ledger2.private
    assert ledger2.not_private_reasons == ()
    assert ledger2.entries[1].total_epsilon == pytest.approx(1.0)
    assert ledger2.entries[1].total_delta == pytest.approx(4e-6)


def test_non_private_entry_makes_epsilon_infinite():
    ledger = PrivacyLedger(requested_epsilon=1.0).record(LedgerEntry("counts", "Laplace", 0.5))
    bad = ledger.record(LedgerEntry("bounds from data", "none", 0.0, private=False))
    assert bad.entries[1].total_epsilon == math.inf
    assert not bad.private
    assert bad.epsilon == math.inf
    assert "bounds from data" in bad.not_private_reasons
    with pytest.raises(ValueError, match="not differentially private"):
        bad.advanced(1e-6)
    with pytest.raises(ValueError, match="not differentially private"):
        bad.zcdp(1e-6)


def test_epsilon_none_is_not_private():
    ledger = PrivacyLedger(requested_epsilon=None)
    assert not ledger.private
    assert ledger.epsilon == math.inf
    assert any("epsilon=None" in r for r in ledger.not_private_reasons)


def test_advanced_composition_hand_computation():
    eps, k, slack = 0.1, 10, 1e-5
    expected = math.sqrt(2 * math.log(1 / slack) * k * eps**2) + k * eps * (math.exp(eps) - 1)
    assert advanced_composition([eps] * k, slack) == pytest.approx(expected, rel=1e-12)
    hetero = [0.05, 0.2, 0.3]
    expected = (math.sqrt(2 * math.log(1e3) * sum(e * e for e in hetero))
                + sum(e * (math.exp(e) - 1) for e in hetero))
    assert advanced_composition(hetero, 1e-3) == pytest.approx(expected, rel=1e-12)
    for slack in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="delta_slack"):
            advanced_composition([0.1], slack)


def test_advanced_composition_vs_basic():
    many_small = PrivacyLedger(requested_epsilon=1.0).record(
        LedgerEntry("counts", "Laplace", 0.01, count=100))
    eps_adv, delta = many_small.advanced(1e-6)
    raw = advanced_composition([0.01] * 100, 1e-6)
    assert eps_adv == pytest.approx(raw, rel=1e-12)
    assert eps_adv < many_small.epsilon  # advanced wins with many small releases
    assert delta == pytest.approx(1e-6)
    few_large = PrivacyLedger(requested_epsilon=2.0).record(
        LedgerEntry("counts", "Laplace", 1.0, count=2))
    assert advanced_composition([1.0, 1.0], 1e-6) > few_large.epsilon
    eps_adv, _ = few_large.advanced(1e-6)
    assert eps_adv == pytest.approx(few_large.epsilon)  # the min of the two bounds


def test_zcdp_conversion():
    rho, delta = 0.05, 1e-6
    assert zcdp_to_dp(rho, delta) == pytest.approx(
        rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-12)
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError, match="delta"):
            zcdp_to_dp(rho, bad)
    pure = PrivacyLedger(requested_epsilon=1.0).record(
        LedgerEntry("counts", "Laplace", 0.1, count=10))
    eps, d = pure.zcdp(delta)
    assert d == delta
    assert eps == pytest.approx(zcdp_to_dp(10 * 0.1**2 / 2, delta), rel=1e-12)
    gauss = pure.record(LedgerEntry("sums", "Gaussian", 0.5, delta=1e-7, count=3, rho=0.02))
    eps, _ = gauss.zcdp(delta)
    assert eps == pytest.approx(zcdp_to_dp(10 * 0.1**2 / 2 + 3 * 0.02, delta), rel=1e-12)
    no_rho = pure.record(LedgerEntry("sums", "Gaussian", 0.5, delta=1e-7))
    with pytest.raises(ValueError, match="rho"):
        no_rho.zcdp(delta)


def test_ledger_str():
    ledger = PrivacyLedger(requested_epsilon=1.0).record(
        LedgerEntry("leaf counts", "Laplace", 0.25, count=4))
    text = str(ledger)
    assert "leaf counts" in text
    assert "spent: epsilon = 1" in text
    assert "requested epsilon = 1" in text
    assert "NOT DIFFERENTIALLY PRIVATE" not in text
    assert "add/remove-one" in text
    bad = PrivacyLedger(requested_epsilon=1.0, neighbouring="replace_one").record(
        LedgerEntry("bounds read off the data", "none", 0.0, private=False))
    text = str(bad)
    assert "NOT DIFFERENTIALLY PRIVATE" in text
    assert "bounds read off the data" in text
    assert "replace-one" in text
    assert "NOT DIFFERENTIALLY PRIVATE" in str(PrivacyLedger(requested_epsilon=None))


@pytest.mark.parametrize("value", [0, 0.0, -1.0, -1e-9, float("nan"), float("inf"),
                                   -float("inf"), "abc", "1.0", None, [1.0], True])
def test_check_epsilon_rejects(value):
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon(value)


@pytest.mark.parametrize("value", [1e-9, 0.5, 1, 10.0, np.float32(2.0)])
def test_check_epsilon_accepts(value):
    assert check_epsilon(value) == pytest.approx(float(value))
    assert isinstance(check_epsilon(value), float)


# --------------------------------------------------------------------------------------------
# float32 rounding never gives less noise than the reported cost pays for
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sensitivity", [1.0, 2.0, 3.0])
def test_costs_are_conservative_after_float32_rounding(sensitivity):
    """Over a dense grid of budgets split over ``k`` releases (float32, as the learners do):
    the exact discrete-Laplace scale ``t/s`` is >= ``Delta/eps_each`` (exact rational
    arithmetic), the reported cost ``Delta s/t`` is <= ``eps_each`` and ``k`` of them fit in
    the requested budget; permute-and-flip reports exactly the budget it was given."""
    epsilons = np.concatenate([np.logspace(-3, 2, 400), [0.1, 0.3, 1 / 3, 0.7, 1.1, 25.0]])

    @jax.jit
    def costs(eps_tree):
        each = leaf_epsilon(eps_tree, 1, 0, "tree")
        _, lap = laplace_mechanism(jax.random.key(0), jnp.zeros(2), sensitivity, each,
                                   integer=True)
        _, pf = permute_and_flip(jax.random.key(0), jnp.zeros(2), sensitivity, each)
        t, s = laplace_fraction(round_up(jnp.ceil(jnp.float32(sensitivity)) / each))
        return each, lap.epsilon, pf.epsilon, t, s

    for k in (1, 3, 7, 11, 21, 101):
        each, lap, pf, t, s = (np.asarray(a) for a in jax.vmap(costs)(
            jnp.float32(epsilons) / jnp.float32(k)))
        each64 = each.astype(np.float64)
        assert np.all(each64 * k <= epsilons)
        assert np.all(lap.astype(np.float64) <= each64)
        assert np.all(lap.astype(np.float64) * k <= epsilons)
        np.testing.assert_allclose(lap, sensitivity * s.astype(np.float64) / t, rtol=1e-7)
        np.testing.assert_array_equal(pf, each)
        for ti, si, e in zip(t[::40], s[::40], each[::40], strict=True):
            assert Fraction(int(ti), int(si)) >= Fraction(sensitivity) / Fraction(float(e))
