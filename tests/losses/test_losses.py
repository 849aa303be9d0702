"""The Mα proper-loss family (``shared/specs/boosted-dp-trees-malpha.md`` §1, §2.2, §9)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.losses import (
    bayes_risk,
    canonical_link,
    clamped_split_risk,
    criterion_sensitivity,
    gini_risk,
    inverse_link,
    log_risk,
    matsushita_risk,
    node_risk,
    split_risk,
    split_sensitivity,
    surrogate_loss,
    zero_one_risk,
)
from dpjax.trees.histogram import split_stats

ALPHAS = np.array([0.0, 0.1, 0.5, 1.0])
GRID = np.linspace(0.0, 1.0, 201)  # p grid, endpoints and 1/2 included
Z_GRID = np.linspace(-8.0, 8.0, 321)  # margin grid, flat-zone boundaries of ALPHAS included
REFERENCE_RISKS = {"matsushita": matsushita_risk, "zero_one": zero_one_risk, "gini": gini_risk,
                   "log": log_risk, "m_alpha_0.3": lambda p: bayes_risk(p, 0.3)}
ALPHA_FUNCTIONS = {"bayes_risk": (bayes_risk, GRID), "canonical_link": (canonical_link, GRID),
                   "inverse_link": (inverse_link, Z_GRID),
                   "surrogate_loss": (surrogate_loss, Z_GRID),
                   "split_sensitivity": (split_sensitivity, np.arange(1.0, 1001.0, 37.0))}

# ---- §9 reference values (rows: ALPHAS), in the dtype that reaches 1e-6 --------------------------
# The tables are rounded to 6 decimals (<= 5e-7). float32 adds <= 1e-7 on L, ψ^{-1} and F, but
# up to 6.4e-7 on ψ (2.666667) and 1.1e-6 on Δ (values up to 201): those two run in float64.
REFERENCE_TABLES = {
    "bayes_risk": (bayes_risk, [0.1, 0.25, 0.5], jnp.float32,
                   [[0.2, 0.5, 1], [0.24, 0.536603, 1], [0.4, 0.683013, 1],
                    [0.6, 0.866025, 1]]),
    "canonical_link": (canonical_link, [0.25, 0.9], jnp.float64,
                       [[-2, 2], [-1.915470, 2.066667], [-1.577350, 2.333333],
                        [-1.154701, 2.666667]]),
    "inverse_link": (inverse_link, [-3, 0.5, 1.9, 4], jnp.float32,
                     [[0, 0.5, 0.5, 1], [0.006803, 0.5, 0.723607, 0.997947],
                      [0.052786, 0.5, 0.834482, 0.974342],
                      [0.083975, 0.621268, 0.844375, 0.947214]]),
    "surrogate_loss": (surrogate_loss, [-3, 0, 1, 4], jnp.float32,
                       [[3, 1, 0.5, 0], [3.008276, 1, 0.5, 0.004536],
                        [3.118034, 1, 0.5, 0.081139], [3.302776, 1, 0.618034, 0.236068]]),
    "split_sensitivity": (split_sensitivity, [100, 1000, 10000], jnp.float64,
                          [[3, 3, 3], [4.8, 9.124555, 22.8], [12, 33.622777, 102],
                           [21, 64.245553, 201]]),
}


def pointwise_grad(fn, x, alpha, argnums=0):
    """Derivative of ``fn(x, alpha)`` at every point of ``x`` (``alpha`` broadcast), jitted."""
    x, alpha = jnp.broadcast_arrays(jnp.asarray(x), jnp.asarray(alpha, jnp.result_type(x)))
    return jax.jit(jax.vmap(jax.grad(fn, argnums)))(x, alpha)


@pytest.mark.parametrize("name", sorted(REFERENCE_TABLES))
def test_reference_values(name):
    fn, args, dtype, table = REFERENCE_TABLES[name]
    with jax.enable_x64(dtype == jnp.float64):
        got = fn(jnp.asarray(args, dtype), jnp.asarray(ALPHAS, dtype)[:, None])
        assert got.dtype == dtype
        np.testing.assert_allclose(np.asarray(got), table, rtol=0, atol=1e-6)


def test_reference_value_m_alpha_0_3():
    np.testing.assert_allclose(bayes_risk(0.2, 0.3), 0.52, rtol=0, atol=1e-6)


def test_split_sensitivity_equals_perspective_bound():
    """§1.7 / Cor. 7: ``Δ^(α)(m) = max{3, 1 + (m+1)·L^(α)(1/(m+1))} = α(1+2√m) + 3(1−α)``."""
    m = np.array([1.0, 2, 7, 100, 1000, 12345])[:, None]
    with jax.enable_x64(True):
        delta = split_sensitivity(m, ALPHAS)
        perspective = np.maximum(3, 1 + (m + 1) * bayes_risk(1 / (m + 1), ALPHAS))
        np.testing.assert_allclose(delta, perspective, rtol=1e-12)
        np.testing.assert_allclose(delta, ALPHAS * (1 + 2 * np.sqrt(m)) + 3 * (1 - ALPHAS),
                                   rtol=1e-12)


# ---- Bayes risks (§1.1, §1.2) -----------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(REFERENCE_RISKS))
def test_bayes_risks_are_normalised_symmetric_concave(name):
    risk = REFERENCE_RISKS[name]
    values = np.asarray(risk(GRID))
    np.testing.assert_allclose(values, values[::-1], atol=1e-6)  # L(p) = L(1 - p)
    np.testing.assert_array_equal(values[[0, -1]], [0.0, 0.0])
    np.testing.assert_allclose(values[100], 1.0, atol=1e-6)  # max 1 at 1/2
    assert values.max() <= 1.0 + 1e-6
    assert np.all(np.diff(values, 2) <= 1e-6)  # concave


def test_gini_risk_is_normalised_gini_impurity():
    """``L^sq(p) = 2·(1 − p² − (1 − p)²)``: twice the Gini impurity of ``(1 − p, p)``."""
    p = np.asarray(GRID, np.float64)
    np.testing.assert_allclose(gini_risk(GRID), 2 * (1 - p**2 - (1 - p) ** 2), atol=1e-6)


def test_log_risk_matches_entropy_in_bits():
    p = GRID[1:-1]
    np.testing.assert_allclose(log_risk(p), -(p * np.log2(p) + (1 - p) * np.log2(1 - p)),
                               atol=1e-6)


# ---- §1.6 special cases: alpha = 1 (Matsushita) and alpha = 0 (0/1) ---------------------------
def test_alpha_one_is_matsushita():
    p, z, m = GRID[1:-1], Z_GRID, np.array([1.0, 100, 1000])
    np.testing.assert_allclose(bayes_risk(GRID, 1.0), matsushita_risk(GRID), atol=1e-6)
    np.testing.assert_allclose(canonical_link(p, 1.0), (2 * p - 1) / np.sqrt(p * (1 - p)),
                               rtol=1e-5)
    np.testing.assert_allclose(inverse_link(z, 1.0), 0.5 * (1 + z / np.sqrt(4 + z**2)), atol=1e-6)
    np.testing.assert_allclose(surrogate_loss(z, 1.0), np.sqrt(1 + z**2 / 4) - z / 2, atol=1e-5)
    np.testing.assert_allclose(split_sensitivity(m, 1.0), 1 + 2 * np.sqrt(m), rtol=1e-6)


def test_alpha_zero_is_zero_one():
    z = Z_GRID
    np.testing.assert_allclose(bayes_risk(GRID, 0.0), zero_one_risk(GRID), atol=1e-6)
    np.testing.assert_array_equal(canonical_link(GRID, 0.0), 2 * np.sign(2 * GRID - 1))
    np.testing.assert_array_equal(inverse_link(z, 0.0), np.select([z < -2, z > 2], [0, 1], 0.5))
    np.testing.assert_allclose(surrogate_loss(z, 0.0),
                               np.select([z < -2, z > 2], [-z, 0], 1 - z / 2), atol=1e-6)
    np.testing.assert_array_equal(split_sensitivity(np.array([1.0, 100, 1e4]), 0.0), 3.0)


# ---- canonical link and inverse link (§1.3, §1.4) ---------------------------------------------
@pytest.mark.parametrize("alpha", ALPHAS)
def test_canonical_link_is_minus_risk_derivative(alpha):
    """``ψ = −L'`` on the interior (``ψ(1/2) := 0`` where the 0/1 kink sits), odd about 1/2."""
    p = GRID[1:-1]
    slope = pointwise_grad(bayes_risk, p, alpha)
    np.testing.assert_allclose(canonical_link(p, alpha), -slope, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(canonical_link(p, alpha), -canonical_link(1 - p, alpha),
                               rtol=1e-5, atol=1e-5)
    assert canonical_link(0.5, alpha) == 0.0


def test_canonical_link_endpoints():
    """``ψ(0), ψ(1)`` are ``∓inf`` when ``α > 0`` and ``∓2`` when ``α = 0`` (§1.6), never NaN."""
    got = canonical_link(jnp.array([0.0, 1.0]), jnp.asarray(ALPHAS)[:, None])
    np.testing.assert_array_equal(got, [[-2, 2], [-np.inf, np.inf], [-np.inf, np.inf],
                                        [-np.inf, np.inf]])


@pytest.mark.slow
@pytest.mark.parametrize("alpha", ALPHAS[1:])
def test_inverse_link_inverts_canonical_link(alpha):
    """``ψ^{-1}(ψ(u)) = u`` for ``u != 1/2``, ``α > 0``; ``ψ(ψ^{-1}(z)) = z`` off the flat zone."""
    u = np.linspace(0.01, 0.99, 99)
    u = u[np.abs(u - 0.5) > 1e-9]
    np.testing.assert_allclose(inverse_link(canonical_link(u, alpha), alpha), u, atol=1e-6)
    z = Z_GRID[np.abs(Z_GRID) > 2 * (1 - alpha) + 1e-3]
    np.testing.assert_allclose(canonical_link(inverse_link(z, alpha), alpha), z, rtol=1e-4)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_inverse_link_shape(alpha):
    """Non-decreasing into ``[0, 1]``, ``1/2`` exactly on the flat zone ``|z| <= 2(1−α)``."""
    w = np.asarray(inverse_link(Z_GRID, alpha))
    assert np.all((w >= 0) & (w <= 1)) and np.all(np.diff(w) >= 0)
    np.testing.assert_array_equal(w[np.abs(Z_GRID) <= 2 * (1 - alpha)], 0.5)
    np.testing.assert_allclose(w + w[::-1], 1.0, atol=1e-6)  # ψ^{-1}(−z) = 1 − ψ^{-1}(z)


# ---- convex surrogate (§1.5) ------------------------------------------------------------------
@pytest.mark.parametrize("alpha", ALPHAS)
def test_surrogate_is_convex_decreasing_and_one_at_zero(alpha):
    f = np.asarray(surrogate_loss(Z_GRID, alpha))
    assert np.all(np.diff(f, 2) >= -1e-6)  # convex
    assert np.all(np.diff(f) <= 1e-6) and np.all(f >= 0)
    assert surrogate_loss(0.0, alpha) == 1.0


@pytest.mark.parametrize("alpha", ALPHAS)
def test_surrogate_derivative_is_minus_inverse_link(alpha):
    """``F^(α)'(z) = −ψ^(α)^{-1}(−z)`` (§1.5): the boosting weight is ``−F'(y·H)``."""
    z = Z_GRID[np.abs(np.abs(Z_GRID) - 2 * (1 - alpha)) > 1e-9]  # F' jumps there when α = 0
    slope = pointwise_grad(surrogate_loss, z, alpha)
    np.testing.assert_allclose(slope, -inverse_link(-z, alpha), atol=1e-6)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_surrogate_is_conjugate_of_bayes_risk(alpha):
    """§9: ``F^(α)(z) = sup_u {−z·u + L^(α)(u)}`` (numerical conjugate, to 1e-6)."""
    z = np.array([-5.0, -3, -1, 0, 0.5, 1, 1.9, 4, 7])
    with jax.enable_x64(True):
        u = jnp.linspace(0.0, 1.0, 200_001)
        conjugate = jnp.max(-z[:, None] * u + bayes_risk(u, alpha), axis=1)
        np.testing.assert_allclose(surrogate_loss(z, alpha), conjugate, atol=1e-6)


@pytest.mark.parametrize("alpha", ALPHAS[1:])
def test_surrogate_curvature(alpha):
    """``F'' = 2α²/(4α² + (|z| − 2(1−α))²)^{3/2}`` off the flat zone, 0 on it, so
    ``sup F'' = 1/(4α)``, the reciprocal of the curvature ``−L''(1/2) = 4α`` (conjugate
    duality). The spec's (151) / §9 print ``4α²`` and ``1/(2α)``, a factor 2 too large."""
    with jax.enable_x64(True):
        z = jnp.asarray(Z_GRID[np.abs(np.abs(Z_GRID) - 2 * (1 - alpha)) > 1e-9])
        curvature = pointwise_grad(jax.grad(surrogate_loss), z, alpha)
        excess = jnp.maximum(jnp.abs(z) - 2 * (1 - alpha), 0)
        expected = jnp.where(excess > 0, 2 * alpha**2 / (4 * alpha**2 + excess**2) ** 1.5, 0)
        if alpha == 1:  # no flat zone: the formula holds at z = 0 too
            expected = 2 * alpha**2 / (4 * alpha**2 + z**2) ** 1.5
        np.testing.assert_allclose(curvature, expected, atol=1e-12)
        edge = 2 * (1 - alpha) + jnp.array([1e-9, 1e-6])
        peak = pointwise_grad(jax.grad(surrogate_loss), edge, alpha)
        np.testing.assert_allclose(peak, 1 / (4 * alpha), rtol=1e-5)


# ---- JAX behaviour: vmap / jit over a traced alpha, gradients ---------------------------------
@pytest.mark.parametrize("name", sorted(ALPHA_FUNCTIONS))
def test_vmap_and_jit_over_alpha_equal_a_loop(name):
    fn, x = ALPHA_FUNCTIONS[name]
    alphas = jnp.linspace(0.0, 1.0, 11)
    looped = np.stack([np.asarray(fn(x, float(a))) for a in alphas])
    np.testing.assert_allclose(jax.vmap(fn, (None, 0))(x, alphas), looped, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(jax.jit(fn)(x, alphas[:, None]), looped, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(ALPHA_FUNCTIONS))
def test_gradients_finite_everywhere(name):
    """Gradients in both arguments are finite on the whole grid, endpoints ``p in {0, 1}``,
    ``α in {0, 1}``, kinks and flat-zone boundaries included (except ``∇ψ`` where ``ψ = ±inf``)."""
    fn, x = ALPHA_FUNCTIONS[name]
    xs, alphas = (jnp.asarray(a).ravel() for a in jnp.meshgrid(x, jnp.linspace(0.0, 1.0, 11)))
    grads = pointwise_grad(fn, xs, alphas, argnums=(0, 1))
    finite = jnp.isfinite(fn(xs, alphas))
    for g in grads:
        assert bool(jnp.all(jnp.isfinite(g) | ~finite))


def test_risk_gradient_at_endpoints_is_exact_at_alpha_zero():
    """At ``α = 0`` the slope of ``L`` at 0 and 1 is ``±2`` (the 0/1 loss), not NaN."""
    slope = pointwise_grad(bayes_risk, jnp.array([0.0, 1.0]), 0.0)
    np.testing.assert_array_equal(slope, [2.0, -2.0])


def test_bayes_risk_alpha_gradient():
    """``∂L^(α)/∂α = L^Mat − L^{0/1}`` everywhere, ``α in {0, 1}`` included."""
    for alpha in ALPHAS:
        got = pointwise_grad(bayes_risk, GRID, alpha, argnums=1)
        np.testing.assert_allclose(got, matsushita_risk(GRID) - zero_one_risk(GRID), atol=1e-6)


# ---- split criterion (§2.2) and its sensitivity (§1.7) ----------------------------------------
def test_split_risk_of_histogram_splits():
    """On ``split_stats`` output: the per-child sum of ``w·L(q)``, 0 for empty children, and
    never above the parent's risk (concavity, gain >= 0)."""
    rng = np.random.default_rng(0)
    hist = rng.uniform(0, 3, (2, 3, 5, 2)) * (rng.uniform(size=(2, 3, 5, 1)) < 0.7)
    left, right = split_stats(jnp.asarray(hist, jnp.float32))
    alpha = jnp.linspace(0.0, 1.0, 5)[:, None, None, None]
    crit = split_risk(left, right, alpha)
    assert crit.shape == (5, 2, 3, 5)
    np.testing.assert_allclose(jax.vmap(split_risk, (None, None, 0))(left, right, alpha[:, 0, 0]),
                               crit, rtol=1e-6)

    def brute(stats, a):
        w = stats.sum(-1)
        q = np.divide(stats[..., 1], w, out=np.zeros_like(w), where=w > 0)
        return w * (a * 2 * np.sqrt(q * (1 - q)) + (1 - a) * 2 * np.minimum(q, 1 - q))

    a = np.asarray(alpha)
    np.testing.assert_allclose(crit, brute(np.asarray(left), a) + brute(np.asarray(right), a),
                               rtol=1e-5, atol=1e-5)
    parent = node_risk(left[:, :, -1], alpha[..., 0])[..., None]
    assert bool(jnp.all(crit <= parent + 1e-4))
    assert float(node_risk(jnp.zeros(2), 0.5)) == 0.0


def test_split_risk_gradients_finite_with_empty_and_pure_children():
    stats = jnp.array([[0.0, 0.0], [0.0, 2.0], [1.5, 0.0], [1.0, 3.0]])
    for alpha in ALPHAS:
        grads = jax.grad(lambda s, a: split_risk(s, s[::-1], a).sum(), argnums=(0, 1))(
            stats, alpha)
        assert all(bool(jnp.all(jnp.isfinite(g))) for g in grads)


def test_split_risk_rejects_multiclass_statistics():
    with pytest.raises(ValueError, match="last axis of 2"):
        split_risk(jnp.ones((4, 3)), jnp.ones((4, 3)), 0.5)


def _random_node(rng: np.random.Generator, m: int, unit_weights: bool) -> np.ndarray:
    """Children statistics ``[2 children, 2 classes]`` of a node on a random sample of ``m``
    examples with weights in ``(0, 1]`` (the node sees a random subset; classes often skewed)."""
    weights = np.ones(m) if unit_weights else 1.0 - rng.uniform(size=m)
    label = (rng.uniform(size=m) < rng.beta(0.2, 0.2)).astype(int)
    where = rng.choice(3, size=m, p=rng.dirichlet(np.full(3, 0.3)))  # 2 = not in the node
    stats = np.zeros((3, 2))
    np.add.at(stats, (where, label), weights)
    return stats[:2]


def test_split_risk_sensitivity_bound_on_random_neighbours():
    """``|crit(S') − crit(S)| <= Δ^(α)(m)`` for add/remove-one neighbours (§1.7, §4.1):
    ``S' = S`` plus one example of weight in ``(0, 1]``, put in each child with each label, and
    ``m = |S|``, the smaller sample. 4000 random samples, nodes and alphas (fixed seed)."""
    rng = np.random.default_rng(2024)
    n = 4000
    ms = rng.integers(1, 300, n)
    unit = np.arange(n) % 4 == 0
    stats = np.stack([_random_node(rng, m, u) for m, u in zip(ms, unit, strict=True)])
    alphas = np.where(rng.uniform(size=n) < 0.2, rng.integers(0, 2, n), rng.uniform(size=n))
    weight = np.where(unit, 1.0, 1.0 - rng.uniform(size=n))
    neighbours = stats[:, None] + weight[:, None, None, None] * np.eye(4).reshape(4, 2, 2)
    with jax.enable_x64(True):
        crit = split_risk(stats[:, 0], stats[:, 1], alphas)
        crit_neighbours = split_risk(neighbours[:, :, 0], neighbours[:, :, 1], alphas[:, None])
        change = np.abs(crit_neighbours - crit[:, None]).max(1)
        assert np.all(change <= split_sensitivity(ms, alphas))


def test_clamped_split_risk_sensitivity_holds_for_any_sample_size():
    """Under DP the row count is private, so the criterion clamps the children's class sums to
    a public size ``ñ``: ``|crit_ñ(S') − crit_ñ(S)| <= Δ^(α)(ñ)`` for add/remove-one neighbours
    whatever ``m`` (here up to 30 times ``ñ``); with ``ñ >= m`` nothing is clamped and it is
    ``split_risk``."""
    rng = np.random.default_rng(2025)
    n = 4000
    ms = rng.integers(1, 900, n)
    unit = np.arange(n) % 4 == 0
    stats = np.stack([_random_node(rng, m, u) for m, u in zip(ms, unit, strict=True)])
    alphas = np.where(rng.uniform(size=n) < 0.2, rng.integers(0, 2, n), rng.uniform(size=n))
    sizes = rng.integers(1, 300, n).astype(float)
    weight = np.where(unit, 1.0, 1.0 - rng.uniform(size=n))
    neighbours = stats[:, None] + weight[:, None, None, None] * np.eye(4).reshape(4, 2, 2)
    with jax.enable_x64(True):
        crit = clamped_split_risk(stats[:, 0], stats[:, 1], alphas, sizes[:, None])
        crit_neighbours = clamped_split_risk(neighbours[:, :, 0], neighbours[:, :, 1],
                                             alphas[:, None], sizes[:, None, None])
        change = np.abs(crit_neighbours - crit[:, None]).max(1)
        assert np.all(change <= split_sensitivity(sizes, alphas))
        assert (ms > 2 * sizes).mean() > 0.5  # most samples are far larger than the size
        big = np.full(n, 1e6)
        np.testing.assert_array_equal(
            clamped_split_risk(stats[:, 0], stats[:, 1], alphas, big[:, None]),
            split_risk(stats[:, 0], stats[:, 1], alphas))
        np.testing.assert_allclose(
            clamped_split_risk(stats[:, 0], stats[:, 1], alphas, sizes[:, None]),
            split_risk(np.minimum(stats[:, 0], sizes[:, None]),
                       np.minimum(stats[:, 1], sizes[:, None]), alphas), rtol=1e-12)


def test_split_sensitivity_is_nearly_attained():
    """Thm 3: the bound is tight to 1. A pure node of ``m`` unit-weight examples that receives
    one of the other class changes by ``(m+1)·L(1/(m+1)) = Δ^(α)(m) − 1``."""
    m = np.array([1.0, 10, 100, 1000])[:, None]
    pure = np.concatenate([m, np.zeros_like(m)], -1)[:, None]  # [m, 1, class]
    with jax.enable_x64(True):
        change = node_risk(pure + [0.0, 1.0], ALPHAS) - node_risk(pure, ALPHAS)
        np.testing.assert_allclose(change, split_sensitivity(m, ALPHAS) - 1, rtol=1e-12)


def test_float32_criterion_change_stays_within_the_rounding_margin():
    """Near-pure children at a large public size: computed as ``w·L(q)`` the float32 criterion
    moved by up to 1.095·Δ^(α)(ñ) between neighbours (found by the independent review); the
    perspective form ``2α·sqrt(w⁻w⁺) + 2(1 − α)·min`` plus the margin ``2**−18·ñ`` of
    :func:`criterion_sensitivity` holds, here against float64 and on the review's worst case."""
    size = np.float32(2.0**23)
    rng = np.random.default_rng(7)
    n = 200_000
    alpha = rng.uniform(0, 1, n).astype(np.float32)
    big = rng.uniform(0.85, 1.0, n) * size * 256          # one class's fixed-point sum
    small = rng.integers(0, 512, n)                        # the other, near zero
    weight = rng.integers(0, 257, n)                       # the added record's fixed-point weight
    cases = [(np.append(small, 0), np.append(big, 1717982709), np.append(weight, 255),
              np.append(alpha, np.float32(0.853)))]
    for x, y, w, a in cases:
        def crit(x, y, a=a):
            left = jnp.stack([jnp.asarray(x, jnp.int32), jnp.asarray(y, jnp.int32)], -1) / 256.0
            return clamped_split_risk(left, jnp.zeros_like(left), a, size)

        change = np.abs(np.asarray(crit(x + w, y)) - np.asarray(crit(x, y)))
        bound = np.asarray(criterion_sensitivity(size, a))
        assert (change <= bound).all(), (change / bound).max()
        exact = 2 * a.astype(np.float64) * np.sqrt(np.minimum(y / 256, size)) * (
            np.sqrt(np.minimum((x + w) / 256, size)) - np.sqrt(np.minimum(x / 256, size)))
        exact += 2 * (1 - a.astype(np.float64)) * (np.minimum(np.minimum((x + w) / 256, size),
                                                              np.minimum(y / 256, size))
                                                   - np.minimum(np.minimum(x / 256, size),
                                                                np.minimum(y / 256, size)))
        assert (np.abs(change - np.abs(exact)) <= 2.0**-18 * size).all()
