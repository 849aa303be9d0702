"""Sensitivity: the neighbouring relations, the absent-record representation and the
fixed-point class sums.

The method (neighbours of one shape, recorded mechanisms, tolerances) is described in
``helpers_sensitivity``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax import privacy
from dpjax.ensembles.malpha import WEIGHT_UNIT, class_stats
from dpjax.privacy.fixed_point import BITS as WEIGHT_BITS
from dpjax.privacy.fixed_point import MAX_ROWS as MAX_FIXED_POINT_ROWS
from dpjax.trees.histogram import leaf_stats, node_histogram
from tests.helpers.sensitivity import ADD, _assert_within, _np_class_sums, _np_fixed_point
from tests.helpers.sensitivity_malpha import WEIGHT_FLOOR

# ------------------------------------------------------------------------------------------
# 0. The neighbouring relations and the absent-record representation
# ------------------------------------------------------------------------------------------


def test_replace_one_doubles_the_count_sensitivities():
    """The api's neighbouring relations: count sensitivity 1 under add/remove-one and 2 under
    replace-one (random-trees spec A2, Mα spec §4.1); every fit gets it as ``sensitivity``."""
    assert privacy.SENSITIVITY == {"add_remove": 1.0, "replace_one": 2.0}


@pytest.mark.parametrize("fixed_point", [False, True], ids=["float", "fixed-point"])
def test_absent_rows_are_removed_rows(fixed_point):
    """A zero-weight row gives exactly the histograms and leaf sums of the dataset without it
    (the representation of "D" used by the weighted-sum tests below), for the float class
    statistics and for the int32 fixed-point ones of a private tree."""
    rng = np.random.default_rng(0)
    m = 23
    codes = rng.integers(0, 5, (m + 1, 3)).astype(np.uint8)
    node = rng.integers(0, 4, m + 1).astype(np.int32)
    weights = rng.uniform(0, 1, m + 1).astype(np.float32)
    y = rng.integers(0, 2, m + 1)
    weights[-1] = 0.0

    def sums(codes, node, weights, y):
        stats = class_stats(weights, y, exact=fixed_point)
        assert stats.dtype == (jnp.int32 if fixed_point else jnp.float32)
        return node_histogram(codes, node, stats, 4, 5), leaf_stats(node, stats, 4)

    with_row = sums(codes, node, weights, y)
    without_row = sums(codes[:-1], node[:-1], weights[:-1], y[:-1])
    for a, b in zip(with_row, without_row, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# ------------------------------------------------------------------------------------------
# 10. The fixed-point weights
# ------------------------------------------------------------------------------------------


QUANT_CASES, QUANT_ROWS, QUANT_GROUPS = 4000, 40, 4


def test_fixed_point_weights_have_sensitivity_one_weight_unit():
    """The fixed-point quantisation of the boosting weights (Mα spec §1.7: weights in [0, 1]).
    ``class_stats(w, y, exact=True)`` is int32 ``floor(clip(w, 0, 1)·2**WEIGHT_BITS)``,
    one-hot by class. A neighbour's extra record of any weight in [0, 1] changes any fixed-point
    class sum (over any set of records) by at most ``WEIGHT_UNIT``, and all of them together by
    at most ``WEIGHT_UNIT`` in L1, exactly: the sensitivity the O.C and counts-leaf releases
    are calibrated to. The sums are exact: equal to numpy int64 sums of ``floor(w·256)``, and
    int32 cannot overflow below ``MAX_FIXED_POINT_ROWS`` rows."""
    assert WEIGHT_UNIT == 2.0**WEIGHT_BITS == 256.0
    assert MAX_FIXED_POINT_ROWS * WEIGHT_UNIT <= 2**31 - 1
    rng = np.random.default_rng(41)
    n, rows = QUANT_CASES, QUANT_ROWS + 1            # the last row: the added record
    regime = rng.integers(0, 5, (n, 1))
    weights = rng.uniform(0, 1, (n, rows))
    on_grid = rng.integers(0, 257, (n, rows)) / WEIGHT_UNIT
    weights = np.where(regime == 1, on_grid, weights)                         # k/256 exactly
    weights = np.where(regime == 2, np.nextafter(on_grid.astype(np.float32), np.float32(-1)),
                       weights)                                               # just below
    weights = np.where(regime == 3, rng.uniform(-0.5, 1.5, (n, rows)), weights)   # clipped
    weights = np.where(regime == 4, np.float32(1 - WEIGHT_FLOOR), weights)    # boosting's cap
    extra = rng.choice([0.0, 1.0, np.nextafter(np.float32(1), np.float32(0)), -1.0, -2.0], n)
    extra = np.where(extra == -1.0, rng.uniform(0, 1, n), extra)
    extra = np.where(extra == -2.0, on_grid[:, 0], extra)
    weights[:, -1] = extra
    weights = weights.astype(np.float32)
    without = weights.copy()
    without[:, -1] = 0.0
    y = rng.integers(0, 2, (n, rows)).astype(np.int32)
    group = rng.integers(0, QUANT_GROUPS, (n, rows)).astype(np.int32)

    def sums(weights, y, group):
        stats = class_stats(weights, y, exact=True)
        return stats, stats.sum(0), leaf_stats(group, stats, QUANT_GROUPS)

    stats, total, by_group = jax.tree.map(np.asarray, jax.jit(jax.vmap(sums))(
        np.concatenate([without, weights]), np.concatenate([y, y]),
        np.concatenate([group, group])))
    for x in (stats, total, by_group):
        assert x.dtype == np.int32
    fixed = _np_fixed_point(np.concatenate([without, weights]))
    y2, group2 = np.concatenate([y, y]), np.concatenate([group, group])
    np.testing.assert_array_equal(stats, np.stack([fixed * (1 - y2), fixed * y2], -1))
    np.testing.assert_array_equal(total, np.stack(
        [(fixed * (1 - y2)).sum(1), (fixed * y2).sum(1)], -1))
    np.testing.assert_array_equal(by_group, _np_class_sums(
        np.concatenate([without, weights]), y2, group2, QUANT_GROUPS))
    for name, x in (("total", total), ("by group", by_group)):
        before, after = np.split(x.astype(np.int64), 2)
        change = np.abs(after - before)
        _assert_within(f"fixed-point class sum ({name}) {ADD}", change, WEIGHT_UNIT, exact=True)
        ratio = _assert_within(f"fixed-point class sums, L1 ({name}) {ADD}",
                               change.reshape(n, -1).sum(1), WEIGHT_UNIT, exact=True)
        assert ratio == 1.0                                  # attained by a weight-1 record
    assert np.any(extra == 1.0) and np.any((extra > 0) & (extra < 1))
