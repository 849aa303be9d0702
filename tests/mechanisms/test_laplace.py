"""DP mechanisms: the Laplace mechanism with exact discrete Laplace noise on a fixed-point
grid."""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.mechanisms import laplace_mechanism
from dpjax.mechanisms.exact import laplace_fraction
from dpjax.mechanisms.laplace import grid_step, report_noisy_min
from dpjax.privacy import PrivacyLedger
from dpjax.privacy.rounding import round_up
from tests.conftest import Z, binomial_tolerance

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


@pytest.mark.slow
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


@pytest.mark.slow
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
# Report noisy min
# --------------------------------------------------------------------------------------------

noisy_min = jax.jit(jax.vmap(
    lambda key, scores, valid, epsilon: report_noisy_min(key, scores, valid, 0.5, epsilon,
                                                         bound=1.0, label="Δ = 1/2"),
    in_axes=(0, None, None, None)))


def test_report_noisy_min_costs_at_most_epsilon_and_selects_only_valid_candidates():
    keys = jax.random.split(jax.random.key(3), 2_000)
    scores = jnp.array([0.1, -0.2, 0.3, 0.0])
    valid = jnp.array([True, False, True, True])
    index, cost = noisy_min(keys, scores, valid, jnp.float32(0.8))
    assert set(np.unique(index).tolist()) == {0, 2, 3}
    assert cost.mechanism == "report noisy min, discrete Laplace (Δ = 1/2)"
    assert np.all(cost.epsilon <= 0.8) and np.all(cost.epsilon >= 0.8 * 0.99)
    assert np.all(cost.delta == 0.0)
    best, _ = noisy_min(keys[:50], scores, valid, jnp.float32(2_000.0))
    assert np.all(best == 3)            # the smallest valid score, when the noise is negligible


def test_report_noisy_min_selection_odds_are_laplace_and_within_e_epsilon():
    """Neighbouring scores ``(0.2, 0.2)`` and ``(0.7, −0.3)`` (each moved by ``Δ = 1/2``): the
    first is selected with probability 1/2, then ``P(Z₁ − Z₀ > 1) = 3/(4e)`` for Laplace noise of
    scale ``2Δ/ε = 1`` (the grid moves it by far less than the tolerance), and the two are within
    a factor ``e^ε``."""
    n, epsilon = 40_000, 1.0
    keys = jax.random.split(jax.random.key(4), n)
    valid = jnp.array([True, True])
    first = [float(np.mean(noisy_min(keys, jnp.array(s), valid, jnp.float32(epsilon))[0] == 0))
             for s in ([0.2, 0.2], [0.7, -0.3])]
    expected = np.array([0.5, 3.0 / (4.0 * math.e)])
    np.testing.assert_array_less(np.abs(np.array(first) - expected),
                                 binomial_tolerance(expected, n) + 1e-3)
    assert first[0] <= math.exp(epsilon) * first[1]
