"""The exact discrete Gaussian sampler and the Gaussian mechanism on a fixed-point grid: the
64-bit arithmetic of the acceptance rate is exact, the draws match the exact pmf (moments and
binned frequencies within ``Z`` standard errors, fixed keys), the grid rounding stays within the
sensitivity the cost is computed from, and the cost never exceeds the budget."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.mechanisms.exact import SATURATION, discrete_gaussian, gaussian_rate, square_64
from dpjax.mechanisms.gaussian import (
    MAX_ROUNDING_SHARE,
    NOISE_BITS,
    gaussian_cost,
    gaussian_grid_step,
    gaussian_mechanism,
    grid_floor,
)
from dpjax.privacy import PrivacyLedger
from tests.conftest import Z, binomial_tolerance

DRAWS = 200_000
J = 11
SIGMA = 2.0**J


def _step_parts(step: float) -> tuple[int, int]:
    """``(exponent, multiplier)`` of a grid step ``m·2**e`` with ``16 <= m <= 32``."""
    mantissa, exponent = math.frexp(step)          # step = mantissa·2**exponent, [0.5, 1)
    exponent -= 5                                   # step / 2**exponent in [16, 32)
    multiplier = Fraction(step) / Fraction(2) ** exponent
    assert multiplier.denominator == 1 and 16 <= multiplier <= 32
    return exponent, int(multiplier)


def _exact_floor(values: np.ndarray, step: float) -> np.ndarray:
    """``floor(v / g)`` in exact rational arithmetic."""
    g = Fraction(step)
    return np.array([math.floor(Fraction(float(v)) / g) for v in values.reshape(-1)],
                    np.int64).reshape(values.shape)


def _discrete_gaussian_pmf(sigma: float, support: np.ndarray) -> np.ndarray:
    """Exact (float64) pmf ``∝ exp(−z²/(2σ²))`` of the integers within ``±12σ``, on
    ``support``."""
    z = np.arange(-int(12 * sigma), int(12 * sigma) + 1)
    norm = np.exp(-(z.astype(np.float64) ** 2) / (2 * sigma**2)).sum()
    return np.exp(-(support.astype(np.float64) ** 2) / (2 * sigma**2)) / norm


# --------------------------------------------------------------------------------------------
# 64-bit square and the acceptance rate
# --------------------------------------------------------------------------------------------


def test_square_64_exact():
    edges = [0, 1, 2, 2**15, 2**16 - 1, 2**16, 2**16 + 1, 2**17 - 1, 2**30 - 1, 2**30,
             2**30 + 2**15, 2**31 - 1, 2**31, 2**32 - 1, 0xDEADBEEF]
    rng = np.random.default_rng(0)
    d = np.concatenate([np.array(edges, np.uint64),
                        rng.integers(0, 2**32, 2000, dtype=np.uint64)]).astype(np.uint32)
    high, low = jax.jit(square_64)(jnp.asarray(d))
    chex.assert_type([high, low], jnp.uint32)
    for x, h, lo in zip(d.tolist(), np.asarray(high).tolist(), np.asarray(low).tolist(),
                        strict=True):
        assert (h << 32) + lo == x * x, x


@pytest.mark.parametrize("j", [11, 13, 15])
def test_gaussian_rate_exact(j):
    rng = np.random.default_rng(j)
    y = np.concatenate([[0, 1, -1, 2**j, -(2**j), 2**j + 1, 3 * 2**j, 2**20, 2**25,
                         SATURATION - 1, SATURATION, -SATURATION],
                        rng.integers(-(2**30), 2**30 + 1, 500),
                        rng.integers(-40 * 2**j, 40 * 2**j, 500)]).astype(np.int32)
    whole, frac = jax.jit(gaussian_rate)(jnp.asarray(y), j)
    chex.assert_type([whole, frac], [jnp.int32, jnp.uint32])
    bits = 2 * j + 1
    for v, w, f in zip(y.tolist(), np.asarray(whole).tolist(), np.asarray(frac).tolist(),
                       strict=True):
        square = (abs(v) - 2**j) ** 2                  # γ = square / 2**bits
        if square >> bits >= SATURATION:
            assert w == SATURATION, v
        else:
            assert w == square >> bits, v
        assert f == (square % 2**bits) << (32 - bits), v


# --------------------------------------------------------------------------------------------
# discrete Gaussian draws
# --------------------------------------------------------------------------------------------


@functools.cache
def _draws() -> np.ndarray:
    """``DRAWS`` draws of ``N_Z(0, 2**(2·J))`` from a fixed key (``j`` traced)."""
    sample = jax.jit(lambda key, j: discrete_gaussian(key, (DRAWS,), j))
    z = sample(jax.random.key(2024), jnp.int32(J))
    chex.assert_shape(z, (DRAWS,))
    chex.assert_type(z, jnp.int32)
    return np.asarray(z).astype(np.int64)


@pytest.mark.slow
def test_discrete_gaussian_moments():
    z = _draws()
    assert abs(z.mean()) <= Z * SIGMA / math.sqrt(DRAWS)
    # Var(X²) = 2σ⁴ for the (continuous) Gaussian; the discrete one's variance is σ² up to
    # exp(−2π²σ²), far below float64 resolution at σ = 2**11
    variance = np.mean(z.astype(np.float64) ** 2)
    assert abs(variance - SIGMA**2) <= Z * math.sqrt(2.0 / DRAWS) * SIGMA**2


def test_discrete_gaussian_binned_pmf():
    z = _draws()
    edges = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, np.inf])
    support = np.arange(-int(12 * SIGMA), int(12 * SIGMA) + 1)
    pmf = _discrete_gaussian_pmf(SIGMA, support)
    assert np.abs(z).max() <= 12 * SIGMA
    scaled = np.abs(support) / SIGMA
    observed = np.abs(z) / SIGMA
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        p = pmf[(scaled >= lo) & (scaled < hi)].sum()
        freq = np.mean((observed >= lo) & (observed < hi))
        assert abs(freq - p) <= binomial_tolerance(p, DRAWS), (lo, hi, freq, p)
    # the signs and the low bits are fair (an off-by-one in the sampler would show here)
    assert abs(np.mean(z > 0) - np.mean(z < 0)) <= Z * math.sqrt(2.0 / DRAWS)
    residues = np.bincount(np.mod(z, 4), minlength=4) / DRAWS
    assert np.all(np.abs(residues - 0.25) <= binomial_tolerance(0.25, DRAWS))
    # the centre, where the rejection step matters most
    near_zero = np.mean(np.abs(z) <= 64)
    p_near_zero = pmf[np.abs(support) <= 64].sum()
    assert abs(near_zero - p_near_zero) <= binomial_tolerance(p_near_zero, DRAWS)


def test_discrete_gaussian_shape_and_determinism():
    sample = jax.jit(lambda key, j: discrete_gaussian(key, (3, 5, 7), j))
    first = sample(jax.random.key(5), jnp.int32(NOISE_BITS))
    chex.assert_shape(first, (3, 5, 7))
    chex.assert_type(first, jnp.int32)
    chex.assert_trees_all_equal(first, sample(jax.random.key(5), jnp.int32(NOISE_BITS)))
    assert not np.array_equal(first, sample(jax.random.key(6), jnp.int32(NOISE_BITS)))
    assert np.abs(np.asarray(first)).max() <= 8 * 2**NOISE_BITS
    chex.assert_shape(discrete_gaussian(jax.random.key(0), (0, 4), 12), (0, 4))


# --------------------------------------------------------------------------------------------
# the Gaussian mechanism
# --------------------------------------------------------------------------------------------

COORDINATES = 64
DELTA = 1e-6


@functools.cache
def _mechanism():
    """The mechanism on ``COORDINATES`` values, jitted with traced sensitivity, ``ρ`` and
    bound."""
    return jax.jit(lambda key, value, sensitivity, rho, bound: gaussian_mechanism(
        key, value, sensitivity, rho, bound=bound, delta=DELTA, label="1"))


@pytest.mark.slow
def test_noise_scale_over_keys():
    rng = np.random.default_rng(3)
    value = jnp.asarray(rng.uniform(-3.0, 3.0, COORDINATES), jnp.float32)
    sensitivity, rho, bound = 1.0, 0.05, 2.0
    keys = jax.random.split(jax.random.key(7), 400)
    released, cost = jax.vmap(lambda k: _mechanism()(k, value, sensitivity, rho, bound))(keys)
    chex.assert_shape(released, (400, COORDINATES))
    chex.assert_type(released, jnp.float32)
    step = float(gaussian_grid_step(sensitivity, rho, COORDINATES, bound))
    sigma = step * 2**NOISE_BITS
    # at least the noise the budget asks for, at most 1/16 more than the grid needs
    assert sigma >= sensitivity / math.sqrt(2 * rho)
    needed = sensitivity / (2**NOISE_BITS * math.sqrt(2 * rho) - math.sqrt(COORDINATES))
    assert step <= needed * (1 + 1 / 16) * (1 + 1e-6)
    residual = np.asarray(released, np.float64) - np.clip(np.asarray(value), -bound, bound)
    n = residual.size
    # the floor onto the grid shifts by at most one step (2**-15 of σ): inside the tolerance
    assert abs(residual.mean()) <= Z * sigma / math.sqrt(n) + step
    assert abs(np.mean(residual**2) / sigma**2 - 1.0) <= Z * math.sqrt(2.0 / n) + 4 * 2.0**-15
    # the noise is independent across keys and coordinates: correlation of neighbours ~ 0
    noise = residual - residual.mean(0)
    corr = np.mean(noise[:-1] * noise[1:]) / sigma**2
    assert abs(corr) <= Z / math.sqrt(n)
    chex.assert_trees_all_equal(cost.rho, jnp.full(400, cost.rho[0]))


@pytest.mark.parametrize("coordinates", [1, 10, 640, 10_000])
def test_spent_rho_within_budget(coordinates):
    sensitivities = np.array([1e-4, 0.04, 1.0, 3.0, 1e3], np.float32)
    rhos = np.array([1e-5, 1e-3, 0.1, 0.5, 2.0, 100.0], np.float32)
    s, r = (a.reshape(-1) for a in np.meshgrid(sensitivities, rhos))
    bound = 30.0   # binding for the smallest sensitivities only
    binding = 0
    costs = jax.jit(jax.vmap(lambda s, r: gaussian_cost(
        s, r, coordinates, bound=bound, delta=DELTA)))(s, r)
    steps = jax.jit(jax.vmap(lambda s, r: gaussian_grid_step(s, r, coordinates, bound)))(s, r)
    refused = np.sqrt(coordinates) > MAX_ROUNDING_SHARE * 2**NOISE_BITS * np.sqrt(
        2 * r.astype(np.float64))
    chex.assert_shape(costs.rho, s.shape)
    for i in range(len(s)):
        rho_i, step = float(r[i]), float(steps[i])
        spent = float(costs.rho[i])
        if refused[i]:
            assert math.isnan(spent) and math.isnan(step) and math.isnan(float(costs.epsilon[i]))
            continue
        assert bound / step <= 2**28
        exact = (Fraction(float(s[i])) / Fraction(step) + math.sqrt(coordinates)) ** 2 / 2**31
        assert float(exact) <= spent <= rho_i
        needed = float(s[i]) / (2**NOISE_BITS * math.sqrt(2 * rho_i) - math.sqrt(coordinates))
        if needed >= bound * 2.0**-28:
            # the 4-bit mantissa of the step wastes at most (1 + 1/16)² of the budget
            assert spent >= rho_i / (1 + 1 / 16) ** 2 * (1 - 1e-5), (s[i], rho_i, spent)
        else:
            # the bound sets the grid: a coarser one, at most 1/16 above B·2**−28
            assert step <= bound * 2.0**-28 * (1 + 1 / 16) * (1 + 1e-6)
            binding += 1
    assert not refused.all() and binding < len(s)


def test_bound_sets_a_coarser_grid():
    """A bound beyond 2**28 steps coarsens the grid to ``≥ B·2**−28``: more noise, less ρ."""
    cost = gaussian_cost(1e-3, 1.0, 4, bound=1e6, delta=DELTA)
    step = float(gaussian_grid_step(1e-3, 1.0, 4, 1e6))
    assert 1e6 / step <= 2**28 and step <= 1e6 * 2.0**-28 * (1 + 1 / 16) * (1 + 1e-6)
    exact = (Fraction(float(np.float32(1e-3))) / Fraction(step) + 2) ** 2
    assert float(exact / 2**31) <= float(cost.rho) < 1e-3


@pytest.mark.parametrize(("sensitivity", "rho", "bound"),
                         [(1.0, 0.5, 3.0), (0.04, 1e-3, 0.05), (1e-3, 2.0, 1e4),
                          (2.5, 7.0, 2.0**20)])
def test_grid_rounding_within_sensitivity(sensitivity, rho, bound):
    """``floor(v/g)`` is exact, and for ``‖v − v'‖₂ <= Δ₂`` the grid values are within
    ``Δ₂/g + sqrt(D)`` in L2 (the sensitivity the cost is computed from)."""
    dims, pairs = 24, 40
    step = float(gaussian_grid_step(sensitivity, rho, dims, bound))
    exponent, multiplier = _step_parts(step)
    rng = np.random.default_rng(int(rho * 1000))
    # values up to the bound (|x| up to 2**33 before the division by m) and near grid points
    base = rng.uniform(-bound, bound, (pairs, dims))
    base[: pairs // 2] = (np.round(base[: pairs // 2] / step) * step
                          - rng.uniform(0, 1e-3, (pairs // 2, dims)) * step)
    direction = rng.normal(size=(pairs, dims))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    v = np.clip(base, -bound, bound).astype(np.float32)
    v_other = np.clip(v + sensitivity * rng.uniform(0.5, 1.0, (pairs, 1)) * direction,
                      -bound, bound).astype(np.float32)
    v_other = np.where(np.linalg.norm(v_other.astype(np.float64) - v, axis=1,
                                      keepdims=True) <= sensitivity, v_other, v)
    floor = jax.jit(grid_floor)
    a = np.asarray(floor(jnp.asarray(v), exponent, multiplier))
    b = np.asarray(floor(jnp.asarray(v_other), exponent, multiplier))
    np.testing.assert_array_equal(a, _exact_floor(v, step))
    np.testing.assert_array_equal(b, _exact_floor(v_other, step))
    assert np.all(np.abs(a) <= 2**28)
    distance = np.linalg.norm((a - b).astype(np.float64), axis=1)
    assert np.all(distance <= sensitivity / step + math.sqrt(dims))


def test_grid_floor_edges():
    step = 24.0 * 2.0**80
    exponent, multiplier = _step_parts(step)
    values = np.array([-1e-30, 1e-30, -0.0, 0.0, -step, step, -step * (1 + 2**-20), 3 * step,
                       np.float32(2**28 * step), -np.float32(2**28 * step)], np.float32)
    got = np.asarray(grid_floor(jnp.asarray(values), exponent, multiplier))
    np.testing.assert_array_equal(got, _exact_floor(values, step))
    step = 17.0 * 2.0**-20
    exponent, multiplier = _step_parts(step)
    values = np.float32(np.arange(-40, 41) * step * 0.37)
    got = np.asarray(grid_floor(jnp.asarray(values), exponent, multiplier))
    np.testing.assert_array_equal(got, _exact_floor(values, step))


def test_cost_epsilon_converts_rho():
    key, value = jax.random.key(0), jnp.zeros(COORDINATES)
    released, cost = _mechanism()(key, value, 1.0, 0.3, 1.0)
    chex.assert_shape([cost.epsilon, cost.delta, cost.rho], ())
    assert cost.mechanism == "discrete Gaussian (L2 sens. 1)"
    rho = float(cost.rho)
    formula = rho + 2 * math.sqrt(rho * math.log(1 / DELTA))
    assert formula <= float(cost.epsilon) <= formula * (1 + 1e-5)
    assert DELTA <= float(cost.delta) <= DELTA * (1 + 1e-6)
    chex.assert_trees_all_close(cost, gaussian_cost(1.0, 0.3, COORDINATES, bound=1.0,
                                                    delta=DELTA, label="1"))
    ledger = PrivacyLedger().with_costs({"mean": cost})
    assert ledger.entries[0].rho == pytest.approx(rho)


def test_tiny_rho_is_refused():
    _, cost = _mechanism()(jax.random.key(0), jnp.zeros(COORDINATES), 1.0, 1e-9, 1.0)
    assert math.isnan(float(cost.epsilon)) and math.isnan(float(cost.rho))
    with pytest.raises(ValueError, match="epsilon is too small"):
        PrivacyLedger().with_costs({"mean": cost})


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"rho": 0.0}, "rho"), ({"rho": -1.0}, "rho"), ({"rho": float("nan")}, "rho"),
    ({"delta": 0.0}, "delta"), ({"delta": 1.0}, "delta"), ({"delta": 1.5}, "delta"),
    ({"delta": "small"}, "delta"), ({"l2_sensitivity": -1.0}, "l2_sensitivity"),
    ({"bound": 0.0}, "bound"),
])
def test_invalid_inputs_name_the_argument(kwargs, name):
    args = {"l2_sensitivity": 1.0, "rho": 0.5, "bound": 1.0, "delta": DELTA, **kwargs}
    with pytest.raises(ValueError, match=name):
        gaussian_mechanism(jax.random.key(0), jnp.zeros(3), args["l2_sensitivity"],
                           args["rho"], bound=args["bound"], delta=args["delta"])


@pytest.mark.slow
def test_jit_and_vmap_over_rho():
    rng = np.random.default_rng(11)
    value = jnp.asarray(rng.uniform(-1.0, 1.0, COORDINATES), jnp.float32)
    rhos = jnp.array([1e-9, 0.01, 0.5, 4.0], jnp.float32)
    key = jax.random.key(9)
    released, cost = jax.vmap(lambda r: _mechanism()(key, value, 2.0, r, 1.0))(rhos)
    chex.assert_shape(released, (4, COORDINATES))
    chex.assert_shape([cost.epsilon, cost.delta, cost.rho], (4,))
    assert math.isnan(float(cost.rho[0]))
    assert np.all(np.diff(np.asarray(cost.rho[1:])) > 0)
    assert np.all(np.asarray(cost.rho[1:]) <= np.asarray(rhos[1:]))
    for i in range(1, 4):
        one, one_cost = _mechanism()(key, value, 2.0, rhos[i], 1.0)
        chex.assert_trees_all_equal(released[i], one)
        chex.assert_trees_all_equal(cost.rho[i], one_cost.rho)
    # a static bound and rho (the eager path) agree with the traced ones
    eager, eager_cost = gaussian_mechanism(key, value, 2.0, 0.5, bound=1.0, delta=DELTA,
                                           label="1")
    chex.assert_trees_all_equal(eager, released[2])
    chex.assert_trees_all_close(eager_cost.rho, cost.rho[2])
    # more budget, less noise
    errors = np.abs(np.asarray(released[1:]) - np.asarray(value)).mean(1)
    assert errors[0] > errors[2]
