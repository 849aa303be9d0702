"""Exact samplers and the mechanisms built on them: the pmfs match the exact ones (chi-square
over 10^6 draws, fixed keys), the support is not truncated, costs never exceed the budget, and
no released value carries floating-point noise."""

from __future__ import annotations

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from dpjax.mechanisms import laplace_mechanism, permute_and_flip
from dpjax.mechanisms.exact import (
    SATURATION,
    bernoulli_exp,
    discrete_laplace,
    joint_discrete_laplace,
    laplace_fraction,
    uniform_below,
    window_size,
)
from dpjax.mechanisms.laplace import grid_step, laplace_releases, plan_laplace
from dpjax.privacy import Cost, parallel
from tests.conftest import Z, binomial_tolerance, pf_probabilities

DRAWS = 10**6
P_FLOOR = 1e-4   # chi-square p-values below this fail (deterministic: fixed keys)

_laplace = jax.jit(lambda key, t, s: discrete_laplace(key, (DRAWS,), t, s))


def _chi_square(observed: np.ndarray, expected: np.ndarray) -> float:
    """p-value of a chi-square goodness-of-fit test, pooling cells with expected count < 20."""
    keep = expected >= 20
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    chi = float(((obs - exp) ** 2 / exp).sum())
    return float(stats.chi2.sf(chi, len(obs) - 1))


def _laplace_cdf(x: np.ndarray, q: float) -> np.ndarray:
    """``P(Z <= x)`` of the discrete Laplace ``P(z) ∝ q^|z|`` at integer ``x``."""
    x = np.asarray(x, float)
    return np.where(x < 0, q ** (-np.minimum(x, 0)) / (1 + q),
                    1 - q ** (np.maximum(x, 0) + 1) / (1 + q))


def _laplace_p_value(z: np.ndarray, scale: float) -> float:
    """Chi-square test of draws ``z`` against the discrete Laplace of ``scale``, on about 120
    cells of roughly equal mass plus the two tails."""
    inner = np.unique(np.round(np.linspace(-6 * scale, 6 * scale, 121)))
    edges = np.concatenate([[-np.inf], inner, [np.inf]])
    lo, hi = edges[:-1], edges[1:]
    observed = np.array([np.sum((z > a) & (z <= b)) for a, b in zip(lo, hi, strict=True)])
    q = math.exp(-1 / scale)
    cdf_hi = np.where(np.isinf(hi), 1.0, _laplace_cdf(np.where(np.isinf(hi), 0, hi), q))
    cdf_lo = np.where(np.isinf(lo), 0.0, _laplace_cdf(np.where(np.isinf(lo), 0, lo), q))
    return _chi_square(observed, (cdf_hi - cdf_lo) * len(z))


# --------------------------------------------------------------------------------------------
# Bernoulli(exp(-gamma)) and uniform integers
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gamma", [0.0, 2.0**-32, 0.3, 1.0, 2.7, 10.0])
def test_bernoulli_exp_frequency(gamma):
    n = 400_000
    whole = math.floor(gamma)
    frac = math.ceil((gamma - whole) * 2**32)
    coins = jax.jit(lambda key, w, f: bernoulli_exp(key, jnp.full(n, w, jnp.int32),
                                                    jnp.full(n, f, jnp.uint32)))
    freq = float(np.asarray(coins(jax.random.key(11), whole, np.uint32(frac))).mean())
    p = math.exp(-(whole + frac / 2**32))
    assert abs(freq - p) <= binomial_tolerance(p, n) + 1e-12


def test_bernoulli_exp_zero_rate_is_always_one_and_huge_rate_never():
    coins = bernoulli_exp(jax.random.key(0), jnp.array([0, 0, 2**30]), jnp.array([0, 0, 0],
                                                                                 jnp.uint32))
    np.testing.assert_array_equal(np.asarray(coins), [True, True, False])


def test_windowed_draws_keep_their_own_rates():
    """Far more draws than the window: each draw starts from its own initial state (rate 0:
    always 1, a huge rate: never, and 1.0 in between, interleaved) whichever slot runs it."""
    n = 200_003
    assert window_size(n) < n
    kind = np.arange(n) % 3
    whole = jnp.asarray(np.choose(kind, [0, 2**30, 1]), jnp.int32)
    coins = np.asarray(jax.jit(bernoulli_exp)(jax.random.key(5), whole,
                                              jnp.zeros(n, jnp.uint32)))
    assert coins[kind == 0].all() and not coins[kind == 1].any()
    p, middle = math.exp(-1.0), coins[kind == 2]
    assert abs(middle.mean() - p) <= binomial_tolerance(p, middle.size)


@pytest.mark.parametrize("shapes", [((2,), (40, 17), (3, 5)),        # every draw a lane
                                    ((2,), (3000,), (40, 100))])     # a window of lanes
def test_joint_draws_are_each_release_alone(shapes):
    """Several releases in one sampler loop (different scales, keys and sizes) give each
    release exactly the draws of :func:`discrete_laplace` alone, bit for bit."""
    keys = jax.random.split(jax.random.key(7), len(shapes))
    t, s = jax.vmap(laplace_fraction)(jnp.array([3.0, 0.7, 250.0]))
    joint = jax.jit(lambda k, t, s: joint_discrete_laplace(k, shapes, t, s))(keys, t, s)
    for i, shape in enumerate(shapes):
        alone = jax.jit(lambda k, t, s, shape=shape: discrete_laplace(k, shape, t, s))(
            keys[i], t[i], s[i])
        np.testing.assert_array_equal(np.asarray(joint[i]), np.asarray(alone))


def test_joint_laplace_releases_are_each_release_alone():
    """:func:`laplace_releases` of planned integer and real-valued releases: the values and
    costs of :func:`laplace_mechanism` with the same keys."""
    keys = list(jax.random.split(jax.random.key(3), 2))
    counts = jnp.array([[5, 0, 9], [2, 2, 40]], jnp.int32)
    real = jnp.linspace(-2.0, 2.0, 7)
    plans = [plan_laplace(counts, 1.0, 0.5, integer=True, event_ndim=1),
             plan_laplace(real, 0.25, 2.0, bound=1.5)]
    joint = laplace_releases(keys, plans)
    alone = [laplace_mechanism(keys[0], counts, 1.0, 0.5, integer=True, event_ndim=1),
             laplace_mechanism(keys[1], real, 0.25, 2.0, bound=1.5)]
    for (value, cost), (want, want_cost) in zip(joint, alone, strict=True):
        np.testing.assert_array_equal(np.asarray(value), np.asarray(want))
        np.testing.assert_array_equal(np.asarray(cost.epsilon), np.asarray(want_cost.epsilon))


@pytest.mark.parametrize("n", [1, 7, 3 * 2**30 + 5])
def test_uniform_below_is_uniform(n):
    draws = 300_000
    values = np.asarray(jax.jit(lambda key: uniform_below(key, jnp.full(draws, n, jnp.uint32)))(
        jax.random.key(3))).astype(np.int64)
    assert values.min() >= 0 and values.max() < n
    if n <= 16:
        counts = np.bincount(values, minlength=n)
        assert _chi_square(counts, np.full(n, draws / n)) > P_FLOOR or n == 1
    else:   # eight equal-width bins of the huge range
        counts = np.bincount(values * 8 // n, minlength=8)
        assert _chi_square(counts, np.full(8, draws / 8)) > P_FLOOR


# --------------------------------------------------------------------------------------------
# Discrete Laplace
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.1, 0.7, 1.0, 3.7, 50.0, 1e4, 3e6])
def test_discrete_laplace_pmf_chi_square(scale):
    """10^6 exact draws match the discrete Laplace pmf of the rational scale t/s."""
    t, s = laplace_fraction(jnp.float32(scale))
    exact_scale = int(t) / int(s)
    assert exact_scale >= scale * (1 - 1e-7)
    z = np.asarray(_laplace(jax.random.key(int(scale * 1000)), t, s)).astype(np.int64)
    if exact_scale < 5:
        values = np.arange(-40, 41)
        q = math.exp(-1 / exact_scale)
        pmf = (1 - q) / (1 + q) * q ** np.abs(values)
        observed = np.array([np.sum(z == v) for v in values] + [np.sum(np.abs(z) > 40)])
        expected = np.append(pmf, 1 - pmf.sum()) * DRAWS
        assert _chi_square(observed, expected) > P_FLOOR
    else:
        assert _laplace_p_value(z, exact_scale) > P_FLOOR


@pytest.mark.parametrize("scale", [2.0, 300.0])
def test_discrete_laplace_tails_are_not_truncated(scale):
    """The far tail holds the mass it should: P(|Z| >= 8b) = 2 q^(8b) / (1 + q) (about 6.7e-4
    of the draws), and the largest draws lie beyond it; a truncated sampler would fail both."""
    t, s = laplace_fraction(jnp.float32(scale))
    b = int(t) / int(s)
    q = math.exp(-1 / b)
    z = np.abs(np.asarray(_laplace(jax.random.key(5), t, s)).astype(np.int64))
    cut = math.ceil(8 * b)
    p = 2 * q**cut / (1 + q)
    freq = np.mean(z >= cut)
    assert abs(freq - p) <= binomial_tolerance(p, DRAWS)
    assert z.max() >= 11 * b


def test_discrete_laplace_saturates_beyond_two_to_the_thirty():
    """At the largest scale (t = 2**31, s = 1) draws beyond 2**30 come back saturated at
    +-2**30 (the clip of the mechanisms makes that exact), the rest are integers below it."""
    z = np.asarray(jax.jit(lambda key: discrete_laplace(key, (20_000,), jnp.uint32(2**31),
                                                        jnp.uint32(1)))(jax.random.key(2)))
    assert np.abs(z).max() <= SATURATION
    assert (np.abs(z) == SATURATION).mean() == pytest.approx(np.exp(-0.5), abs=0.02)


def test_laplace_fraction_is_never_below_and_tight():
    scales = np.geomspace(1e-3, 2e6, 500).astype(np.float32)
    t, s = laplace_fraction(jnp.asarray(scales))
    ratio = np.asarray(t, np.float64) / np.asarray(s, np.float64)
    assert (ratio >= scales.astype(np.float64)).all()
    within = (scales >= 1) & (scales <= 2**20)
    assert (ratio[within] / scales[within] - 1 <= 2.0**-10).all()


# --------------------------------------------------------------------------------------------
# The Laplace mechanism on a grid
# --------------------------------------------------------------------------------------------


def test_integer_release_noise_is_discrete_laplace_with_the_stated_cost():
    counts = jnp.arange(DRAWS, dtype=jnp.float32) % 7
    release = jax.jit(lambda key, eps: laplace_mechanism(key, counts, 1.0, eps, integer=True,
                                                         event_ndim=0))
    noisy, cost = release(jax.random.key(4), 0.8)
    noise = np.asarray(noisy) - np.asarray(counts)
    assert np.array_equal(noise, np.round(noise))       # integers: no float noise at all
    spent = np.asarray(cost.epsilon)
    assert spent.shape == (DRAWS,)
    assert (spent <= 0.8).all() and (spent >= 0.8 * (1 - 2**-9)).all()
    assert _laplace_p_value(noise, 1 / float(spent[0])) > P_FLOOR


@pytest.mark.parametrize("sensitivity, epsilon, bound", [(1.0, 1.0, 100.0), (0.2, 0.05, 0.1),
                                                        (3.0, 20.0, 1e6)])
def test_real_release_lies_on_the_public_grid(sensitivity, epsilon, bound):
    """A real value is released as a multiple of the public grid step g; the integer noise in
    grid units has scale ceil(Δ/g)/ε' with ε' the reported cost <= ε."""
    values = jnp.linspace(-2 * bound, 2 * bound, 200_001, dtype=jnp.float32)
    noisy, cost = jax.jit(lambda key: laplace_mechanism(
        key, values, sensitivity, epsilon, bound=bound, event_ndim=0))(jax.random.key(9))
    step = float(grid_step(sensitivity, epsilon, bound))
    assert math.log2(step) == round(math.log2(step))
    units = np.asarray(noisy, np.float64) / step
    assert np.array_equal(units, np.round(units))
    spent = float(np.asarray(cost.epsilon)[0])
    assert epsilon * (1 - 2**-9) <= spent <= epsilon
    grid = np.floor(np.clip(np.asarray(values), -bound, bound) / step)
    noise = units - grid
    scale = math.ceil(sensitivity / step) / spent
    q = math.exp(-1 / scale)
    assert np.std(noise) == pytest.approx(math.sqrt(2 * q) / (1 - q), rel=Z * 0.0032)


def test_cost_is_nan_beyond_the_sampler_range():
    _, cost = laplace_mechanism(jax.random.key(0), jnp.zeros(3), 1.0, 1e-10, integer=True)
    assert np.isnan(np.asarray(cost.epsilon))


@pytest.mark.slow
def test_release_vmaps_over_budgets_and_keys():
    keys = jax.random.split(jax.random.key(1), 4)
    eps = jnp.array([0.1, 1.0, 10.0, 100.0])
    out, cost = jax.vmap(lambda k, e: laplace_mechanism(k, jnp.ones(5), 1.0, e, bound=10.0))(
        keys, eps)
    chex.assert_shape(out, (4, 5))
    chex.assert_shape(cost.epsilon, (4,))
    assert (np.asarray(cost.epsilon) <= np.asarray(eps)).all()


def test_parallel_composition_and_gating():
    cost = Cost(jnp.array([[0.1, 0.2], [0.3, 0.1]]), jnp.zeros((2, 2)), "m")
    np.testing.assert_allclose(parallel(cost).epsilon, [0.2, 0.3])
    np.testing.assert_allclose(parallel(cost, touched=2).epsilon, [0.4, 0.6])
    np.testing.assert_allclose(cost.gated(jnp.array([[True], [False]])).epsilon,
                               [[0.1, 0.2], [0.0, 0.0]])


# --------------------------------------------------------------------------------------------
# Permute-and-flip
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.3, 2.0, 8.0])
def test_permute_and_flip_frequencies(epsilon):
    utility = np.array([0.0, 1.0, 2.5, 2.5, -1.0])
    n = 200_000
    pick = jax.jit(jax.vmap(lambda key, e: permute_and_flip(key, utility, 1.0, e)[0],
                            in_axes=(0, None)))
    index = np.asarray(pick(jax.random.split(jax.random.key(21), n), epsilon))
    freq = np.bincount(index, minlength=5) / n
    expected = pf_probabilities(utility, 1.0, epsilon)
    np.testing.assert_array_less(np.abs(freq - expected), binomial_tolerance(expected, n) + 1e-9)


@pytest.mark.slow
def test_permute_and_flip_masks_and_batches():
    utility = jnp.array([[0.0, -jnp.inf, 1.0], [-jnp.inf, -jnp.inf, -jnp.inf],
                         [5.0, 5.0, 5.0]])
    index, cost = jax.vmap(lambda k: permute_and_flip(k, utility, 2.0, 0.5))(
        jax.random.split(jax.random.key(0), 2000))
    index = np.asarray(index)
    assert (index[:, 0] != 1).all()
    assert (index[:, 1] == 0).all()               # no finite candidate: index 0
    chex.assert_shape(cost.epsilon, (2000, 3))
    np.testing.assert_allclose(np.asarray(cost.epsilon), 0.5)
    freq = np.bincount(index[:, 2], minlength=3) / 2000
    np.testing.assert_array_less(np.abs(freq - 1 / 3), binomial_tolerance(1 / 3, 2000))


@pytest.mark.slow
def test_permute_and_flip_huge_budget_picks_the_best():
    utility = jnp.array([3.0, 9.0, 8.999, 1.0])
    index, _ = permute_and_flip(jax.random.key(0), jnp.tile(utility, (500, 1)), 1.0, 1e6)
    assert (np.asarray(index) == 1).all()
