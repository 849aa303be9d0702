"""Mα-boost past 2**23 rows (issue 30, item 4): a private fit's class sums go wide (chunked
histograms added in two limbs, :func:`dpjax.trees.histogram.exact_node_histogram`) without
changing a single released value, and the public row limit says which configurations may."""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax import _preparation
from dpjax.ensembles.malpha import MalphaBoosted
from dpjax.ensembles.malpha.leaves import beta_rounding, leveraging_coefficient
from dpjax.ensembles.malpha.tree import weighted_error
from dpjax.privacy import fixed_point
from dpjax.trees.histogram import exact_node_histogram, node_histogram, split_stats

LOWERED_LIMIT, LOWERED_CHUNK_BITS = 300, 7
"""The int32 limit and chunk size the wide path is tested under: 1,000 rows in 8 chunks."""


def lower_the_int32_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fixed_point, "MAX_ROWS", LOWERED_LIMIT)
    monkeypatch.setattr(fixed_point, "CHUNK_BITS", LOWERED_CHUNK_BITS)
    monkeypatch.setattr(_preparation, "_COMPILED", collections.OrderedDict())


def toy(m: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.uniform(0.0, 1.0, size=(m, 4))
    y = (X[:, 0] + X[:, 1] + rng.normal(scale=0.3, size=m) > 1.0).astype(int)
    return X, y


def test_wide_histograms_hold_the_same_integers(monkeypatch):
    """Chunked histograms added in two limbs, their split sums and weighted errors equal the
    int32 ones (read back as ``hi·2**16 + lo`` in int64)."""
    rng = np.random.default_rng(0)
    m, n, n_codes, nodes = 1_000, 3, 7, 4
    codes = jnp.asarray(rng.integers(0, n_codes, (m, n)), jnp.uint8)
    node = jnp.asarray(rng.integers(0, nodes, m), jnp.int32)
    stats = jnp.asarray(rng.integers(0, 257, (m, 2)), jnp.int32)
    narrow = node_histogram(codes, node, stats, nodes, n_codes)
    narrow_splits = split_stats(narrow)
    lower_the_int32_limit(monkeypatch)
    wide = exact_node_histogram(codes, node, stats, nodes, n_codes)
    assert isinstance(wide, fixed_point.WideSum)

    def value(w: fixed_point.WideSum) -> np.ndarray:
        assert np.all((np.asarray(w.lo) >= 0) & (np.asarray(w.lo) < 2**16))     # canonical
        return np.asarray(w.hi, np.int64) * 2**16 + np.asarray(w.lo, np.int64)

    np.testing.assert_array_equal(value(wide), narrow)
    for a, b in zip(split_stats(wide), narrow_splits, strict=True):
        np.testing.assert_array_equal(value(a), b)
        np.testing.assert_array_equal(fixed_point.as_float(a), np.asarray(b, np.float32))
    totals = jax.tree.map(lambda s: s[:, 0, -1, :], split_stats(wide)[0])
    np.testing.assert_array_equal(value(weighted_error(totals)),
                                  weighted_error(narrow_splits[0][:, 0, -1, :]))


def test_as_float_rounds_like_an_int32_conversion():
    """``hi·2**16 + lo`` rounds once: the float32 of the same integer as int32 gives, ties
    (to even) and the largest values included."""
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.integers(-2**31, 2**31, 4_096), [2**24 + 1, 2**24 + 3,
                             -(2**24 + 1), 2**31 - 1, -2**31, 0, 2**25 + 2**1 + 1]])
    values = jnp.asarray(values.astype(np.int64).astype(np.int32))
    wide = fixed_point.canonical(jnp.right_shift(values, 16),
                                 jnp.bitwise_and(values, jnp.int32(0xFFFF)))
    np.testing.assert_array_equal(fixed_point.as_float(wide), values.astype(jnp.float32))


CONFIGS = [
    {},                                                        # the defaults: O.C, counts
    {"neighbouring": "replace_one"},
    {"alpha": 0.5, "depth": 3},
    {"depth": 1},
    {"prior_share": 0.0},                                      # a noisy row count first
    {"budget": "paper", "leaf_mechanism": "value"},            # folded values
    {"leaf_mechanism": "value", "beta_mode": "laplace"},
    {"beta_mode": "laplace"},                                  # counts, β released apart
]


@pytest.mark.slow
def test_wide_sums_release_the_same_models_bit_for_bit(monkeypatch):
    """With the int32 limit lowered to 300 rows (chunks of 128), a 1,000-row private fit sums
    wide and gives the same model and ledger, bit for bit, for the defaults, replace-one, a
    fixed α, one level, a released row count and every leaf mechanism: both paths hold the
    same exact integers and read them as the same floats."""
    X, y = toy(1_000)

    def fitted() -> list[list[np.ndarray]]:
        out = []
        for params in CONFIGS:
            model = dpjax.fit(X, y, method="malpha", epsilon=1.0, bounds=(0.0, 1.0), key=5,
                              classes=[0, 1], n_trees=3, **params)
            assert model.privacy.epsilon <= 1.0
            out.append([np.asarray(leaf) for leaf in jax.tree.leaves(model.params)]
                       + [np.float64(model.privacy.epsilon)])
        return out

    monkeypatch.setattr(_preparation, "_COMPILED", collections.OrderedDict())
    narrow = fitted()
    lower_the_int32_limit(monkeypatch)
    widened = []
    wide_total = fixed_point.wide_total
    monkeypatch.setattr(fixed_point, "wide_total",
                        lambda *a, **k: widened.append(1) or wide_total(*a, **k))
    wide = fitted()
    assert len(widened) >= 2 * len(CONFIGS)     # every fit's histograms and leaves went wide
    for a, b in zip(narrow, wide, strict=True):
        for u, v in zip(a, b, strict=True):
            np.testing.assert_array_equal(u, v)


def test_the_row_limit_is_wide_unless_exact_oc(monkeypatch):
    """Private fits take up to ``WIDE_MAX_ROWS`` rows; exact O.C sums its errors in int32 and
    keeps ``MAX_ROWS`` (a direct call past it is refused, not overflowed); no limit without
    DP."""
    assert MalphaBoosted().row_limit(True, 10) == fixed_point.WIDE_MAX_ROWS
    assert MalphaBoosted(alpha=0.3).row_limit(True, 10) == fixed_point.WIDE_MAX_ROWS
    assert MalphaBoosted(oc_alpha="exact").row_limit(True, 10) == fixed_point.MAX_ROWS
    assert MalphaBoosted().row_limit(False, 10) is None
    assert MalphaBoosted(depth=17).row_limit(True, 10) == fixed_point.WIDE_MAX_ROWS
    for depth in (18, 19, 20):     # the chunked level histogram's int32 segment index
        limit = MalphaBoosted(depth=depth).row_limit(True, 10)
        chunks = fixed_point.chunk_count(limit)
        assert limit < fixed_point.WIDE_MAX_ROWS and chunks * 2 ** (depth - 1) * 256 < 2**31
        assert (chunks + 1) * 2 ** (depth - 1) * 256 >= 2**31         # one more would not
    narrow = MalphaBoosted().footprint(fixed_point.MAX_ROWS, 10, 256, 2)
    wide = MalphaBoosted().footprint(2**26, 10, 256, 2)
    assert wide - 16.0 * 2**26 * 10 > narrow - 16.0 * fixed_point.MAX_ROWS * 10  # per chunk
    with pytest.raises(ValueError, match="malpha fits at most 268435455 rows"):
        _preparation.check_limits(MalphaBoosted(), (fixed_point.WIDE_MAX_ROWS + 1, 3), 10, 2,
                                  1, private=True)
    X, y = toy(400)
    lower_the_int32_limit(monkeypatch)
    with pytest.raises(ValueError, match="at most 300 rows"):
        dpjax.fit(X, y, method="malpha", epsilon=1.0, bounds=(0.0, 1.0), key=0,
                  classes=[0, 1], n_trees=2, oc_alpha="exact")


@pytest.mark.parametrize(("depth", "size", "log_records"), [(1, 2.0**20, 26), (1, 2.0**22, 27),
                                                            (4, 2.0**17, 27)])
def test_beta_of_wide_sums_moves_within_its_charged_sensitivity(depth, size, log_records):
    """``beta_mode="laplace"`` charges ``2aM/ñ`` plus twice :func:`beta_rounding`. Leaf sums
    of ``2**26`` records or more (a float32 ulp of 16 records or more) with a declared size
    far below them: adding one record (its weight 1) moves the released β's input by no more
    than that, because the class difference is taken exactly and rounded once (rounding each
    sum first moved it by up to twice the charge)."""
    leaves = 2**depth
    ulp = 2 ** (log_records + fixed_point.BITS - 23)           # units, at 2**log_records
    k = 2 ** (log_records + fixed_point.BITS) // ulp + 12345
    positive = k * ulp + ulp // 2 - 1                          # one more record rounds up

    def wide(first: list[int]) -> fixed_point.WideSum:
        v = np.array([first] + [[0, 0]] * (leaves - 1), np.int64)
        return fixed_point.WideSum(jnp.asarray(v >> 16, jnp.int32),
                                   jnp.asarray(v & 0xFFFF, jnp.int32))

    values = jnp.asarray([1.0] + [0.0] * (leaves - 1), jnp.float32)
    a, size = 1.0, jnp.float32(size)
    betas = [float(leveraging_coefficient(values, wide([k * ulp, p]), a, size, clip=size))
             for p in (positive, positive + fixed_point.UNIT)]
    charged = 2 * a / float(size) + 2 * float(beta_rounding(a, 1.0, leaves))
    assert abs(betas[1] - betas[0]) <= charged
