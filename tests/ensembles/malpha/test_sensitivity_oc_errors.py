"""Sensitivity: the O.C level errors, direct, through a private Mα tree, and a float32
rounding regression.

The method (neighbours of one shape, recorded mechanisms, tolerances) is described in
``helpers_sensitivity``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.ensembles.malpha import WEIGHT_UNIT, class_stats, grow_malpha_tree
from dpjax.ensembles.malpha.tree import weighted_error
from dpjax.trees.histogram import node_histogram, split_stats
from tests.helpers.sensitivity import (
    ADD,
    REPLACE,
    _assert_within,
    _integer_grid_shift,
    _np_class_sums,
    _np_level_nodes,
    _recorded,
)
from tests.helpers.sensitivity_malpha import (
    NODES,
    TREE_DEPTH,
    WEIGHT_FLOOR,
    _check_laplace,
    _direct_run,
    _tree_run,
)

# ------------------------------------------------------------------------------------------
# 4. The O.C level errors: direct property test
# ------------------------------------------------------------------------------------------


def test_oc_level_weighted_errors():
    """O.C level errors (Mα spec §5.1, §5.3): ``E = Σ_nodes min(w−, w+)`` of a level's nodes.
    Under DP the node sums are int32 fixed-point sums (exactly the numpy int64 reference), and
    ``E`` is released with sensitivity ``WEIGHT_UNIT`` (add/remove) and ``2·WEIGHT_UNIT``
    (replace-one), one or two weights of at most 1. Compared exactly, and attained."""
    data, _, out, _ = _direct_run()
    for o, weights in zip(out, data["weights"], strict=True):
        assert o["fixed_sums"].dtype == np.int32 and o["error"].dtype == np.int32
        np.testing.assert_array_equal(o["fixed_sums"], _np_class_sums(
            weights, data["y"], data["group"], NODES))
    error = [o["error"].astype(np.int64) for o in out]
    for name, (a, b), s in ((ADD, (0, 1), WEIGHT_UNIT), (REPLACE, (1, 2), 2 * WEIGHT_UNIT)):
        ratio = _assert_within(f"O.C level error (fixed-point) {name}",
                               np.abs(error[b] - error[a]), s, exact=True)
        assert ratio == 1.0 or name == REPLACE


# ------------------------------------------------------------------------------------------
# End to end: the O.C level errors of a private Mα tree, mechanisms recorded
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_private_malpha_tree_oc_level_errors_end_to_end():
    """The O.C level errors of a private Mα tree (Mα spec §5.3), given the same earlier
    releases. Under DP ``E_k`` is an exact int32 sum of fixed-point weights (units of
    ``2**−WEIGHT_BITS``): it must equal the numpy int64 reference on the released structure, and
    it is released with ``integer=True``, sensitivity one weight, ``WEIGHT_UNIT`` (add/remove)
    or ``2·WEIGHT_UNIT`` (replace-one), bound ``ñ·WEIGHT_UNIT``. Its change and its grid
    values' change are compared exactly."""
    data, _, runs = _tree_run()
    for name, run in runs.items():
        errors = [i for i, m in enumerate(run["meta"])
                  if m["kind"] == "laplace" and m["tag"] == ""]
        assert len(errors) == TREE_DEPTH                 # E_0 .. E_{d−1}, one per level
        multiplier = 1.0 if name == ADD else 2.0
        variants = (0, 1) if name == ADD else (1, 2)
        for level, i in enumerate(errors):
            assert run["meta"][i]["integer"] and run["meta"][i]["event_ndim"] == 0
            assert run["meta"][i]["sensitivity"] == multiplier * WEIGHT_UNIT
            first, second = (r[i] for r in run["records"])
            np.testing.assert_array_equal(first["sensitivity"], multiplier * WEIGHT_UNIT)
            np.testing.assert_array_equal(first["bound"], data["size"] * WEIGHT_UNIT)
            np.testing.assert_array_equal(_integer_grid_shift(
                first["sensitivity"], first["epsilon"], first["bound"]), 0)       # g = 1
            for record, v, out in zip((first, second), variants, run["out"], strict=True):
                node = _np_level_nodes(out[0], out[1], data["codes"], level)
                sums = _np_class_sums(data["weights"][v], data["y"], node, 2**level)
                assert record["value"].dtype == np.int32
                np.testing.assert_array_equal(record["value"], sums.min(-1).sum(-1))
            _check_laplace(f"O.C level error (tree, fixed-point) {name}", run["meta"][i], first,
                           second)


# ------------------------------------------------------------------------------------------
# 10. A regression: float32 rounding vs the grid's integer sensitivity
# ------------------------------------------------------------------------------------------


ROUNDING_ROWS = 96


def _rounding_cases():
    """Two neighbouring pairs ``(D, D + one class-0 record)``, rows ``[2, ROUNDING_ROWS]``,
    whose float32 O.C root error moves by slightly more than 1.

    * unit weights: class 0 has 31 records of weight 1 and one of weight ``1 − 2**-19``, and
      class 1 has 40 records of weight 1. The added record has weight 1. In float32,
      ``E = 32 − 2**-19`` becomes ``fl(33 − 2**-19) = 33`` (a tie, rounded to even): a change
      of ``1 + 2**-19``.
    * boosting weights (seed 23865 of a search, about 1 pair in 25 000): weights in
      ``[0.5, 1 − 10**-6]``, most at the fit's cap ``1 − ζ'``, random codes. The added record
      has weight ``1 − ζ'``.
    """
    unit_w = np.zeros(ROUNDING_ROWS, np.float32)
    unit_w[:72] = 1.0
    unit_w[31] = 1 - 2.0**-19
    unit_w[-1] = 1.0
    unit_y = np.zeros(ROUNDING_ROWS, np.int32)
    unit_y[32:72] = 1
    unit_codes = np.zeros((ROUNDING_ROWS, 3), np.uint8)
    rng = np.random.default_rng([2024, 23865])
    codes = rng.integers(0, 6, (ROUNDING_ROWS, 3)).astype(np.uint8)
    n0 = rng.integers(33, 47)
    y = (np.arange(ROUNDING_ROWS) >= n0).astype(np.int32)
    y[-1] = 0
    cap = np.float32(1 - WEIGHT_FLOOR)
    w = np.where(rng.uniform(size=ROUNDING_ROWS) < 0.8, cap,
                 rng.uniform(0.5, 1, ROUNDING_ROWS)).astype(np.float32)
    w[-1] = cap
    return np.stack([unit_codes, codes]), np.stack([unit_w, w]), np.stack([unit_y, y])


def test_oc_error_exact_fixed_point_under_float32_rounding():
    """Regression for a finding of this file. The O.C level errors (sensitivity one weight) used
    to be float32 sums of the boosting weights. On the neighbours of :func:`_rounding_cases`
    float32 rounding moved them by ``1 + 2**-19``; their grid step ``g = 2**-10`` divided Δ = 1,
    so the grid values moved by ``1025 > ceil(Δ/g) = 1024`` steps and the release cost
    ``1025/1024·ε_oc``. Fixed at the root: under DP the weights are fixed-point integers
    ``floor(w·2**8)`` and every released sum is an exact int32 sum, with sensitivity
    ``WEIGHT_UNIT`` on the integer grid (``g = 1`` here, no rounding). Checked through
    ``grow_malpha_tree`` on both levels: the recorded ``E_k`` is int32, equal to the numpy int64
    reference, and moves by at most ``WEIGHT_UNIT``, exactly (the unit case attains it)."""
    codes, w, y = _rounding_cases()
    size, epsilon_oc = jnp.float32(100.0), jnp.float32(0.5)
    without = w.copy()
    without[:, -1] = 0.0                                  # D: the last record absent
    both = (np.concatenate([codes, codes]), np.concatenate([without, w]), np.concatenate([y, y]))

    def float_root_error(codes, weights, y):             # the statistic before the fix
        stats = class_stats(weights, y)
        left, _ = split_stats(node_histogram(codes, jnp.zeros(len(y), jnp.int32), stats, 1, 6))
        return weighted_error(left[:, 0, -1, :])

    old = np.asarray(jax.jit(jax.vmap(float_root_error))(*both), np.float64).reshape(2, -1)
    assert np.all(np.abs(old[1] - old[0]) > 1.0)       # the cases still hit the rounding

    def fit(codes, weights, y):
        grown, _ = grow_malpha_tree(jax.random.key(0), codes, weights, y, 2, np.full(3, 6),
                                    jnp.float32(1.0), jnp.float32(1.0), size=size,
                                    oc_alpha="private", epsilon_oc=epsilon_oc, budget="paper")
        return grown.feature, grown.threshold

    out, meta, arrays = _recorded(fit, *both)
    feature, threshold = (x.reshape(2, 2, -1) for x in out)
    errors = [i for i, m in enumerate(meta) if m["kind"] == "laplace"]
    assert len(errors) == 2                               # E_0 (root) and E_1
    for level, i in enumerate(errors):
        assert meta[i]["integer"] and meta[i]["sensitivity"] == WEIGHT_UNIT
        error = arrays[i]["value"].reshape(2, -1)
        assert error.dtype == np.int32
        np.testing.assert_array_equal(arrays[i]["bound"], size * WEIGHT_UNIT)
        np.testing.assert_array_equal(_integer_grid_shift(
            arrays[i]["sensitivity"], arrays[i]["epsilon"], arrays[i]["bound"]), 0)
        for v, weights in enumerate((without, w)):
            node = _np_level_nodes(feature[v], threshold[v], codes, level)
            expected = _np_class_sums(weights, y, node, 2**level).min(-1).sum(-1)
            np.testing.assert_array_equal(error[v], expected)
        first, second = ({k: x.reshape(2, -1)[v] for k, x in arrays[i].items()} for v in (0, 1))
        _check_laplace(f"O.C level error (rounding cases, level {level}) {ADD}", meta[i],
                       first, second)
        if level == 0:           # the unit case moves by exactly one weight: 256 units
            np.testing.assert_array_equal(np.abs(error[1] - error[0]), [256, 255])
