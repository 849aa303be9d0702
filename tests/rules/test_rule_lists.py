"""DP greedy rule lists (``dpjax.rules``; Ly, Ferry, Huguet, Gambs & Aïvodji 2024, spec
``docs/specs/dp-rule-lists-smooth-sensitivity.md`` §1.5, §2, §3, §7): the smooth sensitivity of
the Gini impurity against a brute-force float64 oracle and its properties, the add/remove local
sensitivity of the weighted Gini on every small 4-cell configuration, the exact fixed-point
Gini-weighted counts, a non-private fit against a naive GreedyRL, the budgets and ledgers of
every selection, a permute-and-flip frequency check and the errors.

Compiled programs dominate the run time (a few seconds each), so the private fits share one
data shape (``N_ROWS x N_FEATURES`` binary columns) and one ``delta``: ``dpjax.fit`` reuses a
program across data of the same shape and across ``epsilon`` and keys.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from fractions import Fraction

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.data import DataDependentWarning
from dpjax.mechanisms.exponential import GAMMA_SLACK
from dpjax.mechanisms.smooth_sensitivity import (
    confidence_threshold,
    gini_local_sensitivity,
    smooth_sensitivity_gini,
)
from dpjax.rules import SELECTIONS, UnprovenClaimWarning, gini_count, literal_table, node_stats
from dpjax.rules.candidates import (
    MAX_ROWS,
    literal_values,
    normalised_gini,
    pair_counts,
    row_block,
)
from dpjax.rules.greedy import COUNT_SENSITIVITY, delta_shares, node_epsilon
from tests.conftest import Z, binomial_tolerance, pf_probabilities
from tests.helpers.fits import fit_rule_list

BETA_1 = 3.0 - 2.0 * math.sqrt(2.0)
BETA_2 = 3.0 + 2.0 * math.sqrt(2.0)
DELTA = 1e-6
N_ROWS, N_FEATURES = 2000, 4
COLUMNS = [f"x{j}" for j in range(N_FEATURES)]
BOUNDS = {c: (0.0, 1.0) for c in COLUMNS}


def g64(x):
    """``g(x) = 2x/(x + 1)²`` in float64 (spec §2.2)."""
    x = np.asarray(x, np.float64)
    return 2.0 * x / (x + 1.0) ** 2


# --------------------------------------------------------------------------------------------
# Shared data and fits
# --------------------------------------------------------------------------------------------

def binary_frame(seed: int, rows: int = N_ROWS, features: int = N_FEATURES) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 2, size=(rows, features)).astype(float)
    return pd.DataFrame(data, columns=[f"x{j}" for j in range(features)])


def and_data() -> tuple[pd.DataFrame, np.ndarray]:
    """``y = x0 AND x1`` with 3% of the labels flipped."""
    X = binary_frame(7)
    y = ((X.x0 == 1) & (X.x1 == 1)).astype(int).to_numpy()
    flip = np.random.default_rng(8).uniform(size=N_ROWS) < 0.03
    return X, np.where(flip, 1 - y, y)


def threshold_data() -> tuple[pd.DataFrame, np.ndarray]:
    """A weighted threshold of the four features (needs many rules), 5% label noise."""
    X = binary_frame(21)
    score = X.to_numpy() @ np.array([3.0, 2.0, 1.5, 1.0])
    y = (score >= 3.0).astype(int)
    flip = np.random.default_rng(22).uniform(size=N_ROWS) < 0.05
    return X, np.where(flip, 1 - y, y)


AND_X, AND_Y = and_data()
THR_X, THR_Y = threshold_data()


def fit(X, y, epsilon, *, selection="count_gini", max_rules=3, key=0, **kw) -> dpjax.Model:
    """A rule list on 0/1 columns; smooth selections' ``UnprovenClaimWarning`` is silenced here
    (it has its own test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnprovenClaimWarning)
        return dpjax.fit(X, y, method="rule_list", epsilon=epsilon, key=key, bounds=BOUNDS,
                         n_bins=2, selection=selection, max_rules=max_rules,
                         delta=kw.pop("delta", DELTA), **kw)


# --------------------------------------------------------------------------------------------
# 1. g, the paper's local sensitivity
# --------------------------------------------------------------------------------------------

def test_gini_local_sensitivity_closed_form_maximum_and_decrease():
    x = np.concatenate([np.linspace(0.0, 5.0, 501), np.arange(1.0, 5001.0)])
    paper_form = 1.0 - (x / (x + 1.0)) ** 2 - (1.0 / (x + 1.0)) ** 2
    np.testing.assert_allclose(gini_local_sensitivity(x, xp=np), 2 * x / (x + 1) ** 2,
                               rtol=1e-15)
    np.testing.assert_allclose(gini_local_sensitivity(x, xp=np), paper_form, rtol=1e-9,
                               atol=1e-15)
    np.testing.assert_allclose(np.asarray(gini_local_sensitivity(jnp.asarray(x, jnp.float32))),
                               2 * x / (x + 1) ** 2, rtol=1e-6)
    assert gini_local_sensitivity(1.0, xp=np) == 0.5
    assert float(gini_local_sensitivity(1.0)) == 0.5
    # spec §2.2 values
    np.testing.assert_allclose(gini_local_sensitivity(np.array([2.0, 10.0, 100.0, 1000.0]),
                                                      xp=np),
                               [4 / 9, 20 / 121, 200 / 10201, 2000 / 1002001], rtol=1e-14)
    # maximum at 1, rising before, strictly decreasing for x >= 1
    assert np.all(gini_local_sensitivity(x, xp=np) <= 0.5)
    above = np.unique(x[x >= 1.0])
    assert np.all(np.diff(gini_local_sensitivity(above, xp=np)) < 0)
    below = np.unique(x[x <= 1.0])
    assert np.all(np.diff(gini_local_sensitivity(below, xp=np)) > 0)


# --------------------------------------------------------------------------------------------
# 2. Smooth sensitivity: closed form against a brute force
# --------------------------------------------------------------------------------------------

def brute_smooth(n, lam, beta) -> np.ndarray:
    """``max_{k = 0..n − Λ} e^{−βk} g(max(Λ, n − k))`` with ``n`` first raised to ``Λ``
    (spec §2.4's O(n) oracle), float64, vectorised over the cases."""
    n, lam, beta = (np.asarray(a, np.float64).reshape(-1) for a in (n, lam, beta))
    n = np.maximum(n, lam)
    last = n - lam
    k = np.arange(int(last.max()) + 1, dtype=np.float64)[None, :]
    xi = np.exp(-beta[:, None] * k) * g64(np.maximum(lam[:, None], n[:, None] - k))
    return np.where(k <= last[:, None], xi, -np.inf).max(axis=1)


def random_cases(seed: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(n, Λ, β)``: ``n`` up to 600 (some below ``Λ``), ``Λ`` in {1, 2} or up to 80, ``β``
    log-uniform over [1e-5, 20] plus cases in ``(β_1, β_2)``, above ``β_2``, near ``β_1``,
    exactly 1e-5, and ``Λ = 1``, small ``n``, ``β`` in (0.12, β_1), where the interior point
    ``⌊t_2⌋`` is the strict maximiser."""
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 601, count).astype(float)
    n[: count // 10] = rng.integers(1, 12, count // 10)            # tiny n
    lam = np.where(rng.uniform(size=count) < 0.5, rng.integers(1, 3, count),
                   rng.integers(1, 81, count)).astype(float)
    beta = np.exp(rng.uniform(np.log(1e-5), np.log(20.0), count))
    kind = rng.integers(0, 6, count)
    beta = np.where(kind == 1, rng.uniform(BETA_1 * 1.0001, BETA_2 * 0.9999, count), beta)
    beta = np.where(kind == 2, rng.uniform(BETA_2 * 1.0001, 50.0, count), beta)
    beta = np.where(kind == 3, 1e-5, beta)
    beta = np.where(kind == 4, rng.uniform(BETA_1 * 0.9, BETA_1 * 0.9999, count), beta)
    interior = kind == 5
    beta = np.where(interior, rng.uniform(0.12, BETA_1 * 0.9999, count), beta)
    lam = np.where(interior, 1.0, lam)
    n = np.where(interior, rng.integers(2, 16, count), n).astype(float)
    return n, lam, beta


CASES = random_cases(0, 6000)


def test_random_cases_cover_the_regimes():
    n, lam, beta = CASES
    assert np.sum((beta > BETA_1) & (beta < BETA_2)) > 500
    assert np.sum(beta > BETA_2) > 500
    assert np.sum(beta == 1e-5) > 500
    assert np.sum(lam == 1) > 500 and np.sum(lam == 2) > 500 and np.sum(lam > 10) > 500
    assert np.sum(n < lam) > 100
    # the interior critical point t_2 = n − y_2 is the strict maximiser in many cases
    disc = (1 - beta) ** 2 - 4 * beta
    real = disc >= 0
    y2 = np.where(real, 2.0 / (1.0 - beta + np.sqrt(np.where(real, disc, 0.0))), np.nan)
    nn = np.maximum(n, lam)
    ends = np.maximum(g64(nn), np.exp(-beta * (nn - lam)) * g64(lam))
    interior = brute_smooth(n, lam, beta) > ends * (1 + 1e-9)
    assert interior.sum() > 50
    assert np.all(real[interior])
    assert np.sum(real & (nn - y2 < 0)) > 0                                # t_2 < 0 occurs


@pytest.mark.parametrize("convention", ["paper", "add_remove"])
def test_closed_form_matches_brute_force_float64(convention):
    n, lam, beta = CASES
    got = smooth_sensitivity_gini(n, lam, beta, convention=convention, xp=np)
    assert got.dtype == np.float64 and got.shape == n.shape
    if convention == "paper":
        want = brute_smooth(n, lam, beta)
    else:
        nn = np.maximum(n, lam)
        want = brute_smooth(nn - 1, np.maximum(lam - 1, 1), beta)
        # ... which is the paper's closed form at (n − 1, max(Λ − 1, 1))
        np.testing.assert_allclose(
            got, smooth_sensitivity_gini(nn - 1, np.maximum(lam - 1, 1), beta,
                                         convention="paper", xp=np), rtol=1e-15)
        np.testing.assert_allclose(
            got, smooth_sensitivity_gini(n - 1, np.maximum(lam - 1, 1), beta,
                                         convention="paper", xp=np), rtol=1e-15)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("convention", ["paper", "add_remove"])
def test_jax_float32_agrees_with_numpy_float64(convention):
    n, lam, beta = (a[:3000] for a in CASES)
    want = smooth_sensitivity_gini(n, lam, beta, convention=convention, xp=np)
    got = smooth_sensitivity_gini(jnp.asarray(n, jnp.float32), jnp.asarray(lam, jnp.float32),
                                  jnp.asarray(beta, jnp.float32), convention=convention)
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-5)


def test_spec_test_vectors():
    """Spec §2.5 (paper convention)."""
    table = np.array([
        (10, 1, 0.01, 0.4569655926),
        (10, 1, 0.1, 0.2032848299),
        (5, 1, 0.1, 0.3351600230),
        (100, 1, 0.001, 0.4528713540),
        (100, 5, 0.001, 0.2526035929),
        (100, 5, 0.05, 0.01960592099),
        (1000, 50, 0.001, 0.01486893593),
        (1000, 50, 0.01, 0.001996005992),
        (50, 3, 0.2, 0.03844675125),
        (4305, 215, 0.0019, 0.0004643603186),
    ])
    n, lam, beta, want = table.T
    got = smooth_sensitivity_gini(n, lam, beta, convention="paper", xp=np)
    np.testing.assert_allclose(got, want, rtol=1e-9)
    np.testing.assert_allclose(got, brute_smooth(n, lam, beta), rtol=1e-12)
    for row in (5, 7, 8):                                        # the rows equal to g(n)
        np.testing.assert_allclose(got[row], g64(n[row]), rtol=1e-12)
    # scalar calls agree with the vectorised ones
    for i in range(len(table)):
        assert float(smooth_sensitivity_gini(int(n[i]), int(lam[i]), beta[i],
                                             convention="paper", xp=np)) == pytest.approx(
            want[i], rel=1e-9)


def test_unknown_convention_is_refused():
    with pytest.raises(ValueError, match="convention"):
        smooth_sensitivity_gini(10, 1, 0.1, convention="replace", xp=np)


# --------------------------------------------------------------------------------------------
# 3. Properties of S*
# --------------------------------------------------------------------------------------------

PROPERTY_BETAS = np.concatenate([np.geomspace(1e-5, 30.0, 60), [BETA_1 * 0.999, 0.5, 6.0]])
PROPERTY_LAMBDAS = np.array([1, 2, 3, 5, 17, 60], np.float64)


@pytest.mark.parametrize("convention", ["paper", "add_remove"])
def test_smooth_sensitivity_properties(convention):
    def s(n, lam, beta):
        return smooth_sensitivity_gini(n, lam, beta, convention=convention, xp=np)

    lam, beta, off = np.meshgrid(PROPERTY_LAMBDAS, PROPERTY_BETAS, np.arange(0, 400),
                                 indexing="ij")
    n = lam + off
    here, above = s(n, lam, beta), s(n + 1, lam, beta)
    slack = 1e-12
    # an upper bound of the local sensitivity: g(n) (paper), g(n − 1) (add/remove)
    floor = g64(n) if convention == "paper" else g64(n - 1)
    assert np.all(here >= floor * (1 - slack))
    # β-smooth between n and n + 1, for n >= Λ
    assert np.all(above <= np.exp(beta) * here * (1 + slack))
    assert np.all(here <= np.exp(beta) * above * (1 + slack))
    # non-increasing in β (beta grid sorted along axis 1 for the geomspace part)
    sorted_beta = np.sort(PROPERTY_BETAS)
    lam2, beta2, off2 = np.meshgrid(PROPERTY_LAMBDAS, sorted_beta, np.arange(0, 400),
                                    indexing="ij")
    values = s(lam2 + off2, lam2, beta2)
    assert np.all(np.diff(values, axis=1) <= slack * values[:, :-1])
    # non-increasing in Λ for fixed n >= Λ
    nn = np.arange(1, 160, dtype=np.float64)
    lam3, n3, beta3 = np.meshgrid(nn, nn, sorted_beta[::2], indexing="ij")
    values = np.where(lam3 <= n3, s(n3, lam3, beta3), np.nan)
    step = np.diff(values, axis=0)
    valid = np.isfinite(values[1:])
    assert valid.sum() > 100_000
    assert np.all(step[valid] <= slack * values[:-1][valid])
    # below the support n is raised to Λ
    np.testing.assert_array_equal(s(np.array([1.0, 3.0, 7.0]), 7.0, 0.01),
                                  np.full(3, s(7.0, 7.0, 0.01)))


# --------------------------------------------------------------------------------------------
# 4. Local sensitivity of the weighted Gini on all 4-cell configurations with n <= 30
# --------------------------------------------------------------------------------------------

MAX_N = 30


def weighted_gini(cells: np.ndarray) -> np.ndarray:
    """Spec §1.5 from counts ``(n_c0, n_c1, n_l0, n_l1)``: ``Σ_parts n_part/n · 2p(1 − p)``,
    a part with no records contributing 0 (and 0 for the empty set), float64."""
    cells = np.asarray(cells, np.float64)
    n = cells.sum(axis=-1)

    def part(neg, pos):
        size = neg + pos
        p = pos / np.maximum(size, 1.0)
        return np.where(size > 0, size / np.maximum(n, 1.0) * (1 - p ** 2 - (1 - p) ** 2), 0.0)

    return part(cells[..., 0], cells[..., 1]) + part(cells[..., 2], cells[..., 3])


@functools.cache
def local_sensitivities() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every configuration with ``n <= MAX_N``: its size, and its brute-force local
    sensitivity over add-only, remove-only and add/remove neighbours."""
    cells = np.array([c for c in itertools.product(range(MAX_N + 1), repeat=4)
                      if sum(c) <= MAX_N], np.int64)
    base = weighted_gini(cells)
    add = np.zeros(len(cells))
    remove = np.zeros(len(cells))
    for i in range(4):
        step = np.zeros(4, np.int64)
        step[i] = 1
        add = np.maximum(add, np.abs(weighted_gini(cells + step) - base))
        exists = cells[:, i] > 0
        remove = np.maximum(remove, np.where(
            exists, np.abs(weighted_gini(np.maximum(cells - step, 0)) - base), 0.0))
    return cells.sum(axis=1), add, remove, np.maximum(add, remove)


def test_weighted_gini_worked_example():
    """Spec §1.5: caught (1, 1, 0), rest (0, 0, 0, 1, 0)."""
    assert weighted_gini([1, 2, 4, 1]) == pytest.approx(0.3666666666666667, rel=1e-14)
    assert weighted_gini([0, 0, 5, 3]) == pytest.approx(0.46875, rel=1e-14)


def test_add_remove_local_sensitivity_is_g_of_n_minus_one():
    size, add, remove, both = local_sensitivities()
    assert len(size) > 40_000
    for n in range(1, MAX_N + 1):
        at = size == n
        # adding reaches exactly g(n), removing exactly g(n − 1) (spec §2.6)
        assert add[at].max() == pytest.approx(g64(n), rel=1e-12)
        assert remove[at].max() == pytest.approx(g64(n - 1), rel=1e-12, abs=1e-15)
        if n >= 2:
            assert np.all(both[at] <= g64(n - 1) * (1 + 1e-12))
            assert both[at].max() == pytest.approx(g64(n - 1), rel=1e-12)
        else:
            assert both[at].max() == pytest.approx(0.5, rel=1e-12)
    # spec's example: n = 10 gives 0.165289 (add) and 0.18 (both)
    assert add[size == 10].max() == pytest.approx(0.165289256, rel=1e-8)
    assert both[size == 10].max() == pytest.approx(0.18, rel=1e-12)


def test_add_remove_smooth_sensitivity_bounds_the_local_sensitivity():
    size, _, _, both = local_sensitivities()
    ls = np.array([both[size == n].max() for n in range(1, MAX_N + 1)])   # per size n
    n, lam, beta = np.meshgrid(np.arange(1, MAX_N + 1, dtype=np.float64),
                               np.arange(1, MAX_N + 1, dtype=np.float64),
                               np.concatenate([np.geomspace(1e-5, 30.0, 40),
                                               [BETA_1, 1.0, BETA_2]]), indexing="ij")
    inside = lam <= n
    with np.errstate(divide="ignore"):    # β = 1 divides by 0 in a branch masked out (numpy)
        fixed = smooth_sensitivity_gini(n, lam, beta, convention="add_remove", xp=np)
    assert np.all(np.isfinite(fixed))
    at_one = (beta == 1.0) & inside       # β in (β_1, β_2): S_fixed = g(max(n − 1, 1))
    np.testing.assert_allclose(fixed[at_one], g64(np.maximum(n[at_one] - 1, 1)), rtol=1e-15)
    ls_at = ls[n.astype(int) - 1]
    assert np.all(fixed[inside] >= ls_at[inside] * (1 - 1e-12))


def test_paper_sensitivity_is_exceeded_by_a_removal_neighbour():
    """Documented behaviour (spec §2.6): the paper's ``g(n)`` is not an upper bound of the
    add/remove local sensitivity, and neither is its ``S*`` once ``ξ(0)`` is the maximiser."""
    size, add, remove, _ = local_sensitivities()
    for n in range(2, MAX_N + 1):
        at = size == n
        assert add[at].max() <= g64(n) * (1 + 1e-12)          # adding respects g(n) ...
        assert remove[at].max() > g64(n) * (1 + 1e-6)          # ... removing does not
    # e.g. 9 records of one label and 1 of the other, all in one part: removing the lone one
    assert weighted_gini([9, 1, 0, 0]) - weighted_gini([9, 0, 0, 0]) == pytest.approx(0.18)
    # S_paper(n) = g(n) < LS(n) = g(n − 1) for β in (β_1, β_2) and for large β·n
    n = np.arange(2, MAX_N + 1, dtype=np.float64)
    for beta in (1.5, 0.2, 50.0):
        paper = smooth_sensitivity_gini(n, 1.0, beta, convention="paper", xp=np)
        ls = np.array([remove[size == k].max() for k in n.astype(int)])
        assert np.all(paper < ls)


# --------------------------------------------------------------------------------------------
# 5. Fixed-point Gini-weighted counts
# --------------------------------------------------------------------------------------------

def exact_gini_count(a: int, b: int) -> int:
    return 0 if a + b == 0 else (a * b * 256) // (a + b)


def count_pairs(seed: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(a, b)`` with ``a + b <= MAX_ROWS``: log-uniform totals (large ones included),
    random splits, and the extremes."""
    rng = np.random.default_rng(seed)
    total = np.exp(rng.uniform(0.0, np.log(MAX_ROWS), count)).astype(np.int64)
    total[: count // 4] = rng.integers(MAX_ROWS - 10_000, MAX_ROWS + 1, count // 4)
    a = (rng.uniform(size=count) * (total + 1)).astype(np.int64).clip(0, total)
    b = total - a
    extremes = [(0, 0), (0, 1), (1, 0), (1, 1), (MAX_ROWS, 0), (0, MAX_ROWS),
                (MAX_ROWS // 2, MAX_ROWS - MAX_ROWS // 2), (MAX_ROWS - 1, 1),
                (2**23 - 1, 2**23), (4095, 4097), (2**12, 2**12), (2**16 + 3, 2**20 - 7)]
    a = np.concatenate([a, [e[0] for e in extremes]])
    b = np.concatenate([b, [e[1] for e in extremes]])
    assert np.all(a + b <= MAX_ROWS) and np.all(a >= 0) and np.all(b >= 0)
    return a, b


def test_gini_count_is_the_exact_floor():
    a, b = count_pairs(1, 20_000)
    got = np.asarray(jax.jit(gini_count)(jnp.asarray(a, jnp.int32), jnp.asarray(b, jnp.int32)))
    want = np.array([exact_gini_count(int(x), int(z)) for x, z in zip(a, b, strict=True)])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.astype(np.int64), want)
    assert want.max() >= 2**30 - 2**8                           # large values exercised


def test_gini_count_is_monotone_with_increments_below_one_count():
    a, b = count_pairs(2, 20_000)
    keep = a + b + 1 <= MAX_ROWS
    a, b = jnp.asarray(a[keep], jnp.int32), jnp.asarray(b[keep], jnp.int32)
    fn = jax.jit(gini_count)
    base = np.asarray(fn(a, b)).astype(np.int64)
    for more in (fn(a + 1, b), fn(a, b + 1)):
        step = np.asarray(more).astype(np.int64) - base
        assert np.all(step >= 0)
        assert np.all(step <= 256)               # a true increment b²/(s(s + 1)) < 1 count
    # the exact increments (Python rationals) on a sample: in [0, 1)
    for x, z in zip(np.asarray(a)[:2000].tolist(), np.asarray(b)[:2000].tolist(),
                    strict=True):
        s = x + z
        inc = Fraction((x + 1) * z, s + 1) - (Fraction(x * z, s) if s else 0)
        assert 0 <= inc < 1


# --------------------------------------------------------------------------------------------
# 6. Node statistics and the non-private learner against naive references
# --------------------------------------------------------------------------------------------

def literal_matrix(X: np.ndarray) -> np.ndarray:
    """Bool ``[m, 2·features]``: literal ``2f`` is ``x_f = 1``, ``2f + 1`` is ``x_f = 0``."""
    X = np.asarray(X)
    out = np.empty((X.shape[0], 2 * X.shape[1]), bool)
    out[:, 0::2] = X == 1
    out[:, 1::2] = X == 0
    return out


def test_literal_table_of_binary_features():
    table = literal_table(np.array([2, 2, 2]))
    np.testing.assert_array_equal(table.feature, [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(table.lo, [1] * 6)
    np.testing.assert_array_equal(table.hi, [1] * 6)
    np.testing.assert_array_equal(table.inside, [True, False] * 3)
    codes = np.random.default_rng(3).integers(0, 2, (50, 3)).astype(np.uint8)
    values = literal_values(jnp.asarray(codes), *(jnp.asarray(a) for a in table))
    np.testing.assert_array_equal(np.asarray(values), literal_matrix(codes))


def all_pairs(values: jax.Array) -> np.ndarray:
    """Every literal pair ``(i, j)`` in row-major order: index ``1 + i·L + j`` of the scores."""
    n_lit = values.shape[1]
    return np.argwhere(np.ones((n_lit, n_lit), bool)).astype(np.int32)


def test_node_stats_match_a_naive_count_over_all_pairs():
    rng = np.random.default_rng(5)
    m, features = 37, 3
    codes = rng.integers(0, 2, (m, features)).astype(np.uint8)
    y = rng.integers(0, 2, m)
    remaining = rng.uniform(size=m) < 0.8
    table = literal_table(np.full(features, 2))
    values = literal_values(jnp.asarray(codes), *(jnp.asarray(a) for a in table))
    stats = node_stats(values, jnp.asarray(remaining), jnp.asarray(y), all_pairs(values))
    lit = literal_matrix(codes)
    n_lit = lit.shape[1]
    pos = int((remaining & (y == 1)).sum())
    neg = int(remaining.sum()) - pos
    want = [exact_gini_count(pos, neg)]
    exact = [Fraction(2 * pos * neg, max(pos + neg, 1) ** 2)]
    for i in range(n_lit):
        for j in range(n_lit):
            caught = remaining & lit[:, i] & lit[:, j]
            cp, cn = int((caught & (y == 1)).sum()), int((caught & (y == 0)).sum())
            want.append(exact_gini_count(cp, cn) + exact_gini_count(pos - cp, neg - cn))
            total = pos + neg
            exact.append(2 * ((Fraction(cp * cn, cp + cn) if cp + cn else 0)
                              + (Fraction((pos - cp) * (neg - cn), total - cp - cn)
                                 if total - cp - cn else 0)) / total)
    np.testing.assert_array_equal(np.asarray(stats.score), want)
    assert int(stats.size) == remaining.sum()
    # the normalised Gini is the weighted Gini of spec §1.5 up to the floors (< 2 units)
    gini = np.asarray(normalised_gini(stats.score, stats.size), np.float64)
    np.testing.assert_allclose(gini, np.array(exact, float),
                               atol=2 * 2 * 2.0**-8 / remaining.sum() + 1e-6)


def test_node_stats_of_the_spec_worked_example():
    """Spec §1.5: 8 records, the rule catches (1, 1, 0), the rest is (0, 0, 0, 1, 0)."""
    x = np.array([1, 1, 1, 0, 0, 0, 0, 0], np.uint8)[:, None]
    y = np.array([1, 1, 0, 0, 0, 0, 1, 0])
    values = literal_values(jnp.asarray(x), *(jnp.asarray(a) for a in literal_table([2])))
    stats = node_stats(values, jnp.ones(8, bool), jnp.asarray(y), all_pairs(values))
    # [∅, x=1 ∧ x=1, x=1 ∧ x=0, x=0 ∧ x=1, x=0 ∧ x=0]
    assert int(stats.score[0]) == 3 * 5 * 256 // 8 == 480             # 30/64 · n/2
    assert int(stats.score[1]) == 2 * 256 // 3 + 4 * 256 // 5 == 374   # ⌊170.7⌋ + ⌊204.8⌋
    assert int(stats.score[4]) == 374                                   # the negation: same
    gini = np.asarray(normalised_gini(stats.score, stats.size))
    assert gini[0] == pytest.approx(0.46875, abs=1e-7)
    assert abs(gini[1] - 11 / 30) <= 2 * 2 * 2.0**-8 / 8


def naive_greedy(X: np.ndarray, y: np.ndarray, max_rules: int, max_card: int
                 ) -> tuple[list[tuple[int, int, int]], int]:
    """GreedyRL (spec §1.6, ``λ_rule = 0``) over single literals and, with ``max_card = 2``,
    pairs of literals of different features, in the code's order (``∅``, then the candidate
    pairs row-major): at each node the candidate with the smallest exact weighted Gini
    (rationals; on a tie the smaller caught part's, then the first in that order; ``∅`` wins
    ties), stopping when none is strictly below the no-split value; labels by majority, ties
    to 1. Returns the rules ``(i, j, label)`` and the default label.

    The library scores in fixed point (``⌊·⌋`` of ``2**8`` units per part): the data must keep
    the chosen candidate at least 2 units clear of every other value, and exact ties must
    quantise equally, which is asserted here (a precondition on the data, not on the code)."""
    lit = literal_matrix(X)
    n_lit = lit.shape[1]
    feature = np.arange(n_lit) // 2
    order = [(i, j) for i in range(n_lit) for j in range(n_lit)
             if i == j or (max_card == 2 and i < j and feature[i] != feature[j])]
    remaining = np.ones(len(y), bool)
    rules: list[tuple[int, int, int]] = []
    selected: set[tuple[int, int]] = set()

    def parts(cp, cn, rp, rn):
        exact = sum((Fraction(p * q, p + q) for p, q in ((cp, cn), (rp, rn)) if p + q),
                    Fraction(0))
        caught = Fraction(cp * cn, cp + cn) if cp + cn else Fraction(0)
        return exact, exact_gini_count(cp, cn) + exact_gini_count(rp, rn), caught

    for _ in range(max_rules):
        pos = int((remaining & (y == 1)).sum())
        neg = int(remaining.sum()) - pos
        scored = [((None, None), *parts(0, 0, pos, neg)[:2], Fraction(-1))]
        for i, j in order:
            if (i, j) in selected:
                continue
            caught = remaining & lit[:, i] & lit[:, j]
            cp, cn = int((caught & (y == 1)).sum()), int((caught & (y == 0)).sum())
            scored.append(((i, j), *parts(cp, cn, pos - cp, neg - cn)))
        best = min(range(len(scored)), key=lambda r: (scored[r][1], scored[r][3], r))
        best_exact, best_fixed = scored[best][1], scored[best][2]
        for _, exact, fixed, _ in scored:
            if exact == best_exact:
                assert fixed == best_fixed, "precondition: an exact tie quantises unequally"
            else:
                assert exact - best_exact >= Fraction(2, 256), "precondition: a near tie"
        if best == 0:
            break
        i, j = scored[best][0]
        caught = remaining & lit[:, i] & lit[:, j]
        cp, cn = int((caught & (y == 1)).sum()), int((caught & (y == 0)).sum())
        rules.append((i, j, int(cp >= cn)))
        selected.add((i, j))
        remaining &= ~caught
    pos = int((remaining & (y == 1)).sum())
    return rules, int(pos >= int(remaining.sum()) - pos)


def naive_predict(X: np.ndarray, rules, default: int) -> np.ndarray:
    lit = literal_matrix(X)
    out = np.full(len(X), -1)
    for i, j, label in rules:
        fires = (out < 0) & lit[:, i] & lit[:, j]
        out[fires] = label
    return np.where(out < 0, default, out)


def greedy_data() -> tuple[pd.DataFrame, np.ndarray]:
    """Five binary features, a noisy label depending on four of them: lists of several rules."""
    X = binary_frame(35, rows=700, features=5)
    rng = np.random.default_rng(36)
    p = 0.1 + 0.5 * X.x0 * X.x1 + 0.3 * (1 - X.x2) * X.x3 + 0.15 * X.x4 * (1 - X.x0)
    return X, (rng.uniform(size=len(X)) < p).astype(int).to_numpy()


@pytest.mark.parametrize("max_card", [1, 2])
def test_non_private_fit_is_greedy_rl(max_card):
    X, y = greedy_data()
    max_rules = 5
    rules, default = naive_greedy(X.to_numpy(), y, max_rules, max_card)
    assert len(rules) >= 3                                   # a list of several rules
    model = dpjax.fit(X, y, method="rule_list", epsilon=None, key=0, n_bins=2, max_card=max_card,
                      max_rules=max_rules, bounds={c: (0.0, 1.0) for c in X.columns})
    np.testing.assert_array_equal(np.asarray(model.encode(X)), X.to_numpy().astype(np.uint8))
    np.testing.assert_array_equal(np.asarray(model.predict(X)), naive_predict(X, rules, default))
    # the same rules, in order, with the same labels
    params = model.params
    active = np.asarray(params.active)
    assert active.sum() == len(rules) and np.all(active[: len(rules)])
    literal = 2 * np.asarray(params.feature) + (~np.asarray(params.inside)).astype(int)
    for r, (i, j, label) in enumerate(rules):
        assert tuple(literal[r]) == (i, j)
        assert int(params.label[r]) == label
    assert int(params.label[-1]) == default
    assert not model.privacy.private


# --------------------------------------------------------------------------------------------
# 7. Budgets and ledgers
# --------------------------------------------------------------------------------------------

EPSILONS = (0.05, 0.5, 2.0, 20.0, 1e3)
PURE = ("count_gini", "global_laplace", "exponential")


def check_ledger(model: dpjax.Model, epsilon: float, selection: str) -> None:
    ledger = model.privacy
    assert ledger.private
    assert ledger.epsilon <= epsilon
    assert ledger.delta <= DELTA
    if selection in PURE:
        assert ledger.delta == 0.0
    whats = [e.what for e in ledger.entries]
    assert "rule label counts (disjoint cells)" in whats
    assert sum(e.count for e in ledger.entries
               if e.what == f"rule selection ({selection})") <= model.config.max_rules
    if selection in ("smooth_laplace", "smooth_cauchy"):
        assert "support checks (noisy |X_rem|)" in whats
    if selection == "count_gini":
        entry = next(e for e in ledger.entries if e.what == "rule selection (count_gini)")
        assert "permute-and-flip" in entry.mechanism and "monotone" in entry.mechanism


# Every selection at max_rules = 3 under add/remove (these programs serve the other tests too),
# plus max_rules = 8 and 1 under replace-one for the three accounting paths (monotone
# permute-and-flip, smooth with support checks and δ, zCDP Gaussian). Each configuration is a
# compiled program of ~5 s, so the full 6 x 3 x 2 product (~3 min) is left out;
# test_budget_shares_sum_within_the_budget covers every selection and max_rules without
# compiling.
BUDGET_CONFIGS = [(s, 3, "add_remove") for s in SELECTIONS] + [
    ("count_gini", 8, "replace_one"),
    ("smooth_laplace", 8, "replace_one"),
    ("global_gaussian", 1, "replace_one"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("selection", "max_rules", "neighbouring"), BUDGET_CONFIGS)
def test_budget_is_never_exceeded(selection, max_rules, neighbouring):
    """Within the budget, and the mechanism's cost whatever the list's length: every node is
    charged, also those after the list stopped (the ledger depends on no output). All but two
    of these configurations stop early on at least one of the budgets. The fixed split
    (``prior_share=0``); the public rule schedule's ledger is tested in
    ``test_rule_list_scale.py``."""
    ledgers = set()
    for i, epsilon in enumerate(EPSILONS):
        model = fit(THR_X, THR_Y, epsilon, selection=selection, max_rules=max_rules,
                    neighbouring=neighbouring, key=i, prior_share=0.0)
        check_ledger(model, epsilon, selection)
        assert model.privacy.neighbouring == neighbouring
        counts = [e.count for e in model.privacy.entries
                  if e.what == f"rule selection ({selection})"]
        assert sum(counts) == max_rules
        ledgers.add((epsilon, model.privacy.epsilon, model.privacy.delta))
    assert len(ledgers) == len(EPSILONS)     # one ledger per budget, not per outcome


@pytest.mark.parametrize("selection", SELECTIONS)
@pytest.mark.parametrize("max_rules", [1, 3, 8])
def test_budget_shares_sum_within_the_budget(selection, max_rules):
    """The per-release shares behind every configuration (no compilation): ``ε_node`` times the
    number of releases (selections, support checks, the count histogram) and the ``δ`` shares
    of the nodes stay within ``(ε, δ)``."""
    smooth = selection in ("smooth_laplace", "smooth_cauchy")
    releases = max_rules * (2 if smooth else 1) + 1
    for epsilon in (1e-3, 0.05, 0.7, 1.0, 3.3, 1e4):
        share = float(node_epsilon(epsilon, selection, "provable", max_rules))
        assert share * releases <= epsilon
        assert share >= epsilon / releases * (1 - 1e-6)
    if selection in ("smooth_laplace", "smooth_cauchy", "global_gaussian"):
        for confidence in ("auto", 1 - DELTA / max_rules / 3):
            d_smooth, d_check = delta_shares(DELTA, selection, "provable", max_rules,
                                             confidence)
            assert d_smooth >= 0 and d_check >= 0
            assert max_rules * (d_smooth + d_check) <= DELTA
            if confidence == "auto" or selection == "smooth_laplace":     # all of δ used
                assert d_smooth + d_check >= DELTA / max_rules * (1 - 1e-6)
            if selection == "smooth_laplace":
                assert d_smooth > 0
    else:
        assert delta_shares(DELTA, selection, "provable", max_rules, "auto") == (0.0, 0.0)


def float32_round_down(x: float, ulps: int = 4) -> float:
    value = np.float32(x)
    for _ in range(ulps):
        value = np.nextafter(value, np.float32(0.0))
    return float(value)


@pytest.mark.parametrize(("selection", "shares"), [
    ("smooth_laplace", 14), ("smooth_cauchy", 14), ("global_laplace", 9),
    ("global_gaussian", 9), ("exponential", 10)])
def test_paper_calibration_node_shares(selection, shares):
    """``K = max_rules + 1 = 5``: ``ε/(3K − 1)``, ``ε/(2K − 1)``, ``ε/(2K)`` (spec §3.5)."""
    for epsilon in (0.1, 1.0, 10.0, 7.3):
        got = float(node_epsilon(epsilon, selection, "paper", 4))
        assert got == float32_round_down(float(np.float32(epsilon) / np.float32(shares)))
        assert got <= epsilon / shares
        assert got == pytest.approx(epsilon / shares, rel=1e-6)
    if selection == "smooth_laplace":
        d_smooth, d_check = delta_shares(DELTA, selection, "paper", 4, "auto")
        assert d_smooth <= DELTA / 4 and d_smooth == pytest.approx(DELTA / 4, rel=1e-6)
        assert d_check == pytest.approx(0.01)          # 1 − 𝒞 outside δ: the paper's accounting


@pytest.mark.slow
def test_paper_calibration_is_flagged_not_private():
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        model = fit(THR_X, THR_Y, 1.0, selection="smooth_laplace", calibration="paper",
                    max_rules=4)
    ledger = model.privacy
    assert not ledger.private
    assert ledger.epsilon == math.inf
    assert any(not e.private and "paper" in e.what for e in ledger.entries)
    selection = next(e for e in ledger.entries if e.what == "rule selection (smooth_laplace)")
    assert selection.epsilon == pytest.approx(float(node_epsilon(1.0, "smooth_laplace",
                                                                 "paper", 4)), rel=1e-7)
    assert selection.epsilon <= 1.0 / 14


@pytest.mark.slow
@pytest.mark.parametrize("selection", ["smooth_laplace", "smooth_cauchy"])
def test_smooth_selections_warn_that_their_claim_is_unproven(selection):
    with pytest.warns(UnprovenClaimWarning, match="no published proof"):
        model = dpjax.fit(THR_X, THR_Y, method="rule_list", epsilon=1.0, key=0, bounds=BOUNDS,
                          n_bins=2, selection=selection, max_rules=3, delta=DELTA)
    assert model.privacy.private                       # the claim is kept in the ledger ...
    entry = next(e for e in model.privacy.entries
                 if e.what == f"rule selection ({selection})")
    assert "no published proof" in entry.mechanism     # ... and labelled as such


# --------------------------------------------------------------------------------------------
# 8. Confidence threshold
# --------------------------------------------------------------------------------------------

def test_confidence_threshold_worked_values():
    """Spec §3.4 / A7 (not the paper's printed 7)."""
    assert confidence_threshold(1 / 14, 0.99) == 55
    assert confidence_threshold(0.1, 0.98) == 33
    assert confidence_threshold(1.0, 0.5) == 1                   # t = 0: ⌊0⌋ + 1


# --------------------------------------------------------------------------------------------
# 9. Determinism
# --------------------------------------------------------------------------------------------

def test_same_key_same_list_different_key_different_noise():
    first = fit(AND_X, AND_Y, 1.0, key=3)
    again = fit(AND_X, AND_Y, 1.0, key=3)
    chex.assert_trees_all_equal(first.params, again.params)
    other = fit(AND_X, AND_Y, 1.0, key=4)
    assert not np.array_equal(np.asarray(first.params.counts), np.asarray(other.params.counts))


# --------------------------------------------------------------------------------------------
# 10. Statistics: permute-and-flip frequencies; huge budgets reproduce GreedyRL
# --------------------------------------------------------------------------------------------

PF_DRAWS = 16_000


@pytest.mark.slow
def test_count_gini_first_rule_frequencies():
    """One node (``max_rules = 1``, single literals of two features): the chosen candidate's
    frequency over ``PF_DRAWS`` fits against the exact permute-and-flip probabilities of the
    utilities ``−score`` (units ``2**−8``), sensitivity ``COUNT_SENSITIVITY``, monotone rate
    ``ε_node/Δ`` (``ε_node = ε/2``)."""
    codes = np.array([[1, 1], [1, 1], [1, 0], [1, 0], [1, 1], [0, 1], [0, 1], [0, 0], [0, 0],
                      [0, 0], [1, 0], [0, 1]], np.uint8)
    y = np.array([1, 1, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0])
    epsilon = 1.2
    fit_one = functools.partial(fit_rule_list, n_codes_per_feature=np.array([2, 2]),
                                max_rules=1, max_card=1, selection="count_gini",
                                prior_share=0.0)        # the fixed split: ε/2 a node
    many = jax.jit(lambda keys, codes, y, eps: jax.lax.map(
        lambda key: fit_one(key, codes, y, eps), keys))        # compiles as fast as one fit
    keys = jax.random.split(jax.random.key(2024), PF_DRAWS)
    rules, costs = many(keys, jnp.asarray(codes), jnp.asarray(y), jnp.float32(epsilon))
    # the candidate index: 0 (no rule) or literal i = 2f + (1 if negated) (single literals)
    literal = 2 * np.asarray(rules.feature[:, 0, 0]) + (~np.asarray(rules.inside[:, 0, 0]))
    outcome = np.where(np.asarray(rules.active[:, 0]), 1 + literal, 0)
    # the exact probabilities
    table = literal_table(np.array([2, 2]))
    values = literal_values(jnp.asarray(codes), *(jnp.asarray(a) for a in table))
    score = np.asarray(node_stats(values, jnp.ones(len(y), bool), jnp.asarray(y),
                                   all_pairs(values)).score)
    n_lit = table.size
    utility = -score[[0] + [1 + i * n_lit + i for i in range(n_lit)]].astype(np.float64)
    eps_node = float(node_epsilon(epsilon, "count_gini", "provable", 1)) - GAMMA_SLACK
    probs = pf_probabilities(utility, COUNT_SENSITIVITY / 2, eps_node)   # rate ε/Δ (monotone)
    assert np.all(probs > 0.05) and np.all(probs < 0.6)                 # an informative case
    freq = np.bincount(outcome, minlength=len(probs)) / PF_DRAWS
    np.testing.assert_array_less(np.abs(freq - probs),
                                 binomial_tolerance(probs, PF_DRAWS, Z))
    # the check has the power to tell the monotone rate ε/Δ from the general ε/(2Δ)
    general = pf_probabilities(utility, COUNT_SENSITIVITY, eps_node)
    assert np.any(np.abs(freq - general) > binomial_tolerance(general, PF_DRAWS, Z))
    # every fit charged one selection of ε_node and one count release
    sel = np.asarray(costs["rule selection (count_gini)"].epsilon)
    assert sel.shape == (PF_DRAWS, 1) and np.all(sel <= epsilon / 2)


@pytest.mark.parametrize("selection", [s for s in SELECTIONS if s != "global_gaussian"])
def test_huge_budget_reproduces_the_non_private_list(selection):
    reference = fit(AND_X, AND_Y, None, max_rules=3)
    truth = ((AND_X.x0 == 1) & (AND_X.x1 == 1)).to_numpy().astype(int)
    np.testing.assert_array_equal(np.asarray(reference.predict(AND_X)), truth)
    model = fit(AND_X, AND_Y, 1e4, selection=selection, key=5)
    np.testing.assert_array_equal(np.asarray(model.predict(AND_X)),
                                  np.asarray(reference.predict(AND_X)))
    # the first rule is the non-private one: x0 ∧ x1 → 1
    assert bool(model.params.active[0])
    assert sorted(np.asarray(model.params.feature[0]).tolist()) == [0, 1]
    assert np.all(np.asarray(model.params.inside[0])) and int(model.params.label[0]) == 1
    check_ledger(model, 1e4, selection)


# --------------------------------------------------------------------------------------------
# 11. Errors
# --------------------------------------------------------------------------------------------

def test_errors():
    X, y = AND_X.iloc[:60], AND_Y[:60]
    kw = {"method": "rule_list", "bounds": BOUNDS, "n_bins": 2, "key": 0}
    with pytest.raises(ValueError, match="binary"):
        dpjax.fit(X, np.arange(60) % 3, epsilon=1.0, classes=[0, 1, 2], **kw)
    for selection in ("smooth_laplace", "smooth_cauchy", "global_gaussian"):
        with pytest.raises(ValueError, match="delta"):
            dpjax.fit(X, y, epsilon=1.0, selection=selection, delta=0.0, **kw)
    with pytest.raises(ValueError, match="count_gini"):
        dpjax.fit(X, y, epsilon=1.0, selection="count_gini", calibration="paper", **kw)
    with pytest.raises(ValueError):
        dpjax.fit(X, y, epsilon=1.0, max_card=3, **kw)
    with pytest.raises(ValueError):
        dpjax.fit(X, y, epsilon=1.0, selection="smooth_gaussian", delta=DELTA, **kw)
    with pytest.raises(ValueError, match="confidence"):
        dpjax.fit(X, y, epsilon=1.0, selection="smooth_laplace", delta=DELTA, confidence=0.99,
                  **kw)


# --------------------------------------------------------------------------------------------
# 12. Summaries and degenerate data
# --------------------------------------------------------------------------------------------

def test_summary_reads_the_rules():
    model = fit(AND_X, AND_Y, 1e4)
    text = model.summary()
    lines = text.splitlines()
    rules = [line.strip() for line in lines if line.strip().startswith(("if ", "else"))]
    assert rules[0].startswith("if x0 and x1 then 1")
    assert any(line.startswith("else ") for line in rules)
    assert "Privacy ledger" in text
    described = model.config.describe(model.params, model.spec, model.classes)
    caught = ((AND_X.x0 == 1) & (AND_X.x1 == 1)).to_numpy()
    ones = int(AND_Y[caught].sum())        # at ε = 1e4 the released counts are the true ones
    assert described.splitlines()[1] == (f"if x0 and x1 then 1   [counts {caught.sum() - ones}"
                                         f" / {ones}]")
    assert all(line.strip() in text for line in described.splitlines())
    greedy = fit(*greedy_data(), None, max_rules=5)
    assert "not x" in greedy.summary()                  # negated 0/1 columns read "not x…"


def test_single_class_training_set_fits():
    zeros = np.zeros(N_ROWS, int)
    model = fit(AND_X, zeros, 1.0, classes=[0, 1], key=9)
    assert model.classes == (0, 1)
    assert model.privacy.private and model.privacy.epsilon <= 1.0
    assert np.mean(np.asarray(model.predict(AND_X)) == 0) >= 0.95


@pytest.mark.parametrize("block", [1, 7, 64, 1000])
def test_pair_counts_in_row_blocks_are_exact(block):
    """The Gram matrices read the literal matrix in row blocks (the last one padded with
    zero-weight rows): the same exact integers as one product over all rows."""
    rng = np.random.default_rng(4)
    values = rng.random((1000, 12)) < 0.4
    weight = rng.integers(0, 2, 1000).astype(np.int32)
    want = (values * weight[:, None]).astype(np.int64).T @ values.astype(np.int64)
    got = np.asarray(jax.jit(pair_counts, static_argnums=2)(values, weight, block))
    np.testing.assert_array_equal(got, want)


def test_row_blocks_bound_the_float_operands():
    assert row_block(1000, 400) == 1000                     # one block when the rows fit
    assert row_block(10**7, 400) == 2**24 // 400            # else about 2**24 entries each
    assert row_block(10**7, 10**6) == 1024                  # and at least 1024 rows
