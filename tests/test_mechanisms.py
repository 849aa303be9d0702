"""DP mechanisms (exponential, Laplace, discrete Laplace, Gaussian) and the privacy ledger."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import Z, binomial_tolerance

from dpjax.mechanisms import (
    LedgerEntry,
    PrivacyLedger,
    advanced_composition,
    check_epsilon,
    discrete_laplace_mechanism,
    discrete_laplace_noise,
    exponential_logits,
    exponential_mechanism,
    gaussian_mechanism,
    gaussian_sigma,
    gaussian_sigma_zcdp,
    laplace_mechanism,
    laplace_scale,
    split_budget,
    zcdp_to_dp,
)
from dpjax.mechanisms.rounding import round_down

N_DRAWS = 100_000


def softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max())
    return z / z.sum()


def assert_frequencies(draws: np.ndarray, probs: np.ndarray) -> None:
    """Per-cell check of empirical frequencies against ``probs`` at Z binomial sigmas."""
    draws = np.asarray(draws).reshape(-1)
    freq = np.bincount(draws, minlength=len(probs)) / draws.size
    assert freq.shape == probs.shape
    np.testing.assert_array_less(np.abs(freq - probs), binomial_tolerance(probs, draws.size)
                                 + 1e-12)


# --------------------------------------------------------------------------------------------
# Exponential mechanism
# --------------------------------------------------------------------------------------------

UTILITY = np.array([0.0, 1.0, 2.0, 3.0, -1.0])


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.5, 1.0), (0.5, 2.0), (4.0, 3.0)])
def test_exponential_frequencies_batched(epsilon, sensitivity):
    utility = jnp.broadcast_to(jnp.asarray(UTILITY, jnp.float32), (N_DRAWS, len(UTILITY)))
    draws = exponential_mechanism(jax.random.key(0), utility, sensitivity, epsilon)
    assert draws.shape == (N_DRAWS,)
    assert draws.dtype == jnp.int32
    assert_frequencies(draws, softmax(epsilon * UTILITY / (2.0 * sensitivity)))


def test_exponential_frequencies_vmap_over_keys():
    keys = jax.random.split(jax.random.key(1), N_DRAWS)
    draws = jax.vmap(lambda k: exponential_mechanism(k, UTILITY, 1.0, 2.0))(keys)
    assert draws.shape == (N_DRAWS,)
    assert_frequencies(draws, softmax(2.0 * UTILITY / 2.0))


def test_exponential_vmap_over_epsilon():
    epsilons = jnp.asarray([0.2, 1.0, 6.0])
    n = 50_000
    utility = jnp.broadcast_to(jnp.asarray(UTILITY, jnp.float32), (n, len(UTILITY)))
    draws = jax.vmap(lambda e: exponential_mechanism(jax.random.key(2), utility, 1.0, e))(
        epsilons)
    assert draws.shape == (3, n)
    for row, eps in zip(np.asarray(draws), [0.2, 1.0, 6.0], strict=True):
        assert_frequencies(row, softmax(eps * UTILITY / 2.0))


def test_exponential_neg_inf_never_chosen():
    utility = np.array([0.0, -np.inf, 0.5, -np.inf, -3.0], np.float32)
    for eps in (0.01, 1.0, 50.0):
        batch = jnp.broadcast_to(jnp.asarray(utility), (N_DRAWS, 5))
        draws = np.asarray(exponential_mechanism(jax.random.key(3), batch, 1.0, eps))
        assert not np.isin(draws, [1, 3]).any()
        # the finite candidates all remain possible at small epsilon
        if eps == 0.01:
            assert set(np.unique(draws)) == {0, 2, 4}


def test_exponential_monotonic_flag():
    eps, sens = 1.2, 1.0
    plain = exponential_logits(UTILITY, sens, eps)
    mono = exponential_logits(UTILITY, sens, eps, monotonic=True)
    np.testing.assert_allclose(np.asarray(plain), eps * UTILITY / (2 * sens), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(mono), eps * UTILITY / sens, rtol=1e-6)
    utility = jnp.broadcast_to(jnp.asarray(UTILITY, jnp.float32), (N_DRAWS, len(UTILITY)))
    draws = exponential_mechanism(jax.random.key(4), utility, sens, eps, monotonic=True)
    assert_frequencies(draws, softmax(eps * UTILITY / sens))


def test_exponential_under_jit():
    fn = jax.jit(lambda k, e: exponential_mechanism(k, UTILITY, 1.0, e))
    a = fn(jax.random.key(5), 1.0)
    b = fn(jax.random.key(5), 1.0)
    assert a.shape == ()
    assert int(a) == int(b)
    assert 0 <= int(a) < len(UTILITY)


# --------------------------------------------------------------------------------------------
# Laplace
# --------------------------------------------------------------------------------------------

N_NOISE = 200_000


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1.0, 1.0), (2.0, 0.5), (1.0, 10.0)])
def test_laplace_moments(sensitivity, epsilon):
    b = sensitivity / epsilon
    assert float(laplace_scale(sensitivity, epsilon)) == pytest.approx(b, rel=1e-6)
    value = 3.0
    out = np.asarray(laplace_mechanism(jax.random.key(10), jnp.full(N_NOISE, value),
                                       sensitivity, epsilon), np.float64)
    noise = out - value
    var = 2 * b * b
    # mean: sd sqrt(var / n); sample variance: sd sqrt((E X^4 - var^2) / n) = sqrt(20 b^4 / n)
    assert abs(noise.mean()) < Z * math.sqrt(var / N_NOISE)
    assert abs(noise.var() - var) < Z * math.sqrt(20 * b**4 / N_NOISE)
    # the tail: P(|X| > b) = exp(-1)
    p = math.exp(-1)
    assert abs(np.mean(np.abs(noise) > b) - p) < binomial_tolerance(p, N_NOISE)


def test_laplace_is_scaled_standard_laplace():
    key = jax.random.key(11)
    unit = np.asarray(jax.random.laplace(key, (1000,)))
    out = np.asarray(laplace_mechanism(key, jnp.zeros(1000), 3.0, 0.75))
    np.testing.assert_allclose(out, unit * 4.0, rtol=1e-6)


# --------------------------------------------------------------------------------------------
# Discrete Laplace
# --------------------------------------------------------------------------------------------


def discrete_laplace_pmf(z: np.ndarray, q: float) -> np.ndarray:
    return (1 - q) / (1 + q) * q ** np.abs(z)


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(1.0, 0.7), (2.0, 1.0), (1.0, 2.5)])
def test_discrete_laplace_distribution(sensitivity, epsilon):
    q = math.exp(-epsilon / sensitivity)
    noise = np.asarray(discrete_laplace_noise(jax.random.key(20), (N_NOISE,), sensitivity,
                                              epsilon), np.float64)
    assert np.all(noise == np.round(noise))
    zs = np.arange(-3, 4)
    freq = np.array([np.mean(noise == z) for z in zs])
    pmf = discrete_laplace_pmf(zs, q)
    np.testing.assert_array_less(np.abs(freq - pmf), binomial_tolerance(pmf, N_NOISE))
    var = 2 * q / (1 - q) ** 2
    # exact fourth moment from the pmf (the series converges geometrically)
    support = np.arange(-2000, 2001)
    fourth = float(np.sum(discrete_laplace_pmf(support, q) * support.astype(float) ** 4))
    assert abs(noise.mean()) < Z * math.sqrt(var / N_NOISE)
    assert abs(noise.var() - var) < Z * math.sqrt((fourth - var**2) / N_NOISE)


def test_discrete_laplace_mechanism_integer_counts():
    counts = jnp.arange(50, dtype=jnp.int32)
    out = discrete_laplace_mechanism(jax.random.key(21), counts, 1.0, 0.5)
    assert out.dtype == jnp.float32
    assert out.shape == (50,)
    delta = np.asarray(out) - np.arange(50)
    assert np.all(delta == np.round(delta))
    assert np.any(delta != 0)


# --------------------------------------------------------------------------------------------
# Gaussian
# --------------------------------------------------------------------------------------------


def test_gaussian_sigma_classic():
    sigma = gaussian_sigma(1.0, 0.5, 1e-5)
    assert sigma == pytest.approx(math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5, rel=1e-12)
    assert gaussian_sigma(3.0, 0.5, 1e-5) == pytest.approx(3 * sigma, rel=1e-12)


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-5), (2.0, 1e-5), (0.0, 1e-5),
                                                (-0.5, 1e-5), (0.5, 0.0), (0.5, 1.0)])
def test_gaussian_sigma_classic_rejects(epsilon, delta):
    with pytest.raises(ValueError, match="epsilon|delta"):
        gaussian_sigma(1.0, epsilon, delta)


def test_gaussian_sigma_zcdp():
    assert gaussian_sigma_zcdp(2.0, 0.5) == pytest.approx(2.0, rel=1e-12)
    sigma = gaussian_sigma_zcdp(1.5, 0.08)
    assert 1.5**2 / (2 * sigma**2) == pytest.approx(0.08, rel=1e-12)
    for rho in (0.0, -1.0):
        with pytest.raises(ValueError, match="rho"):
            gaussian_sigma_zcdp(1.0, rho)


def test_gaussian_mechanism_moments():
    sigma = 3.0
    out = np.asarray(gaussian_mechanism(jax.random.key(30), jnp.full(N_NOISE, -2.0), sigma),
                     np.float64) + 2.0
    assert abs(out.mean()) < Z * sigma / math.sqrt(N_NOISE)
    assert abs(out.var() - sigma**2) < Z * math.sqrt(2 * sigma**4 / N_NOISE)


# --------------------------------------------------------------------------------------------
# Every mechanism under vmap over keys and over epsilon
# --------------------------------------------------------------------------------------------

KEYS = jax.random.split(jax.random.key(40), 4)
EPSILONS = np.array([0.1, 1.0, 3.0])


def test_laplace_vmap_keys_and_epsilon():
    x = jnp.zeros(1000)
    by_key = jax.vmap(lambda k: laplace_mechanism(k, x, 1.0, 0.5))(KEYS)
    assert by_key.shape == (4, 1000)
    for i in range(4):
        np.testing.assert_allclose(by_key[i], laplace_mechanism(KEYS[i], x, 1.0, 0.5),
                                   rtol=1e-6)
    assert not np.allclose(by_key[0], by_key[1])
    by_eps = jax.vmap(lambda e: laplace_mechanism(KEYS[0], x, 1.0, e))(jnp.asarray(EPSILONS))
    unit = np.asarray(jax.random.laplace(KEYS[0], (1000,)))
    for i, eps in enumerate(EPSILONS):
        np.testing.assert_allclose(by_eps[i], unit / eps, rtol=1e-5)


def test_discrete_laplace_vmap_keys_and_epsilon():
    by_key = jax.vmap(lambda k: discrete_laplace_noise(k, (1000,), 1.0, 0.5))(KEYS)
    assert by_key.shape == (4, 1000)
    for i in range(4):
        np.testing.assert_array_equal(by_key[i], discrete_laplace_noise(KEYS[i], (1000,), 1.0,
                                                                       0.5))
    n = 100_000
    by_eps = np.asarray(jax.vmap(lambda e: discrete_laplace_noise(KEYS[1], (n,), 1.0, e))(
        jnp.asarray(EPSILONS)), np.float64)
    for row, eps in zip(by_eps, EPSILONS, strict=True):
        q = math.exp(-eps)
        assert np.all(row == np.round(row))
        p0 = (1 - q) / (1 + q)
        assert abs(np.mean(row == 0) - p0) < binomial_tolerance(p0, n)


def test_gaussian_vmap_keys_and_sigma():
    x = jnp.zeros(1000)
    by_key = jax.vmap(lambda k: gaussian_mechanism(k, x, 2.0))(KEYS)
    for i in range(4):
        np.testing.assert_allclose(by_key[i], gaussian_mechanism(KEYS[i], x, 2.0), rtol=1e-6)
    sigmas = jnp.asarray([0.5, 1.0, 4.0])
    by_sigma = jax.vmap(lambda s: gaussian_mechanism(KEYS[0], x, s))(sigmas)
    unit = np.asarray(jax.random.normal(KEYS[0], (1000,)))
    for i, s in enumerate([0.5, 1.0, 4.0]):
        np.testing.assert_allclose(by_sigma[i], unit * s, rtol=1e-5, atol=1e-6)


def test_exponential_vmap_keys_matches_single_calls():
    utility = jnp.asarray(np.random.default_rng(0).normal(size=(200, 7)), jnp.float32)
    by_key = jax.vmap(lambda k: exponential_mechanism(k, utility, 1.0, 1.0))(KEYS)
    assert by_key.shape == (4, 200)
    for i in range(4):
        np.testing.assert_array_equal(by_key[i],
                                      exponential_mechanism(KEYS[i], utility, 1.0, 1.0))


# --------------------------------------------------------------------------------------------
# Budget splitting and composition
# --------------------------------------------------------------------------------------------

_RNG = np.random.default_rng(7)
BUDGETS = [0.01, 0.1, 0.3, 1 / 3, 0.7, 1.0, 2.2, 10.0, 1e-6, 123.456,
           *(float(v) for v in _RNG.uniform(1e-3, 20, 30))]


def test_split_budget_never_exceeds():
    for eps in BUDGETS:
        for k in [*range(1, 120), 127, 255, 1000, 1001, 4096, 99_991]:
            share = split_budget(eps, k)
            assert share > 0
            assert share * k <= eps, (eps, k, share)
            # rounded down by at most a few ulps
            assert share >= eps / k * (1 - 1e-14)
            # the ledger's own arithmetic also stays within the budget
            ledger = PrivacyLedger(requested_epsilon=eps).record(
                LedgerEntry("x", "Laplace", share, count=k))
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
# float32 rounding never gives less noise than the ledger pays for
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sensitivity", [1.0, 2.0, 3.0])
def test_noise_parameters_are_conservative_after_float32_rounding(sensitivity):
    """The learners compute ``scale = Delta / (float32(eps) / k)`` in float32; over a dense grid
    of budgets the released scale is >= the exact ``Delta * k / eps`` and the discrete rate and
    exponential-mechanism factor are <= their exact values."""
    epsilons = np.concatenate([np.logspace(-3, 2, 400), [0.1, 0.3, 1 / 3, 0.7, 1.1, 25.0]])
    for k in (1, 3, 7, 11, 21, 101):
        eps_tree = jnp.float32(epsilons) / k
        scale = np.asarray(laplace_scale(sensitivity, eps_tree), np.float64)
        assert np.all(scale >= sensitivity * k / epsilons)
        rate = np.asarray(round_down(eps_tree / jnp.float32(sensitivity)), np.float64)
        assert np.all(rate <= epsilons / (k * sensitivity))
        factor = np.asarray(exponential_logits(jnp.ones(1), sensitivity, eps_tree[:, None]),
                            np.float64)[:, 0]
        assert np.all(factor <= epsilons / k / (2 * sensitivity))
