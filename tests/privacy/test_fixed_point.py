"""Fixed point past int32: wide sums (two int32 limbs) and their exact grid values, checked
against Python's unbounded integers."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.mechanisms import laplace_mechanism
from dpjax.mechanisms.laplace import integer_grid
from dpjax.privacy import fixed_point
from dpjax.privacy.fixed_point import (
    WideSum,
    exact_segment_sum,
    floored_gaps,
    shift_clip,
    wide_abs,
    wide_sum,
    wide_total,
)


def as_ints(wide: WideSum) -> list[int]:
    return [int(h) * 2**16 + int(lo) for h, lo in zip(np.asarray(wide.hi).ravel(),
                                                      np.asarray(wide.lo).ravel(), strict=True)]


def test_wide_total_is_the_exact_sum_in_canonical_limbs():
    rng = np.random.default_rng(0)
    for _ in range(20):
        parts = rng.integers(-2**30, 2**30, size=(int(rng.integers(1, 300)), 5)).astype(np.int32)
        wide = wide_total(jnp.asarray(parts))
        assert as_ints(wide) == list(parts.astype(object).sum(0))
        lo = np.asarray(wide.lo)
        assert lo.min() >= 0 and lo.max() < 2**16      # canonical: equal sums, equal pairs


def test_wide_abs_and_sum_are_the_exact_values_in_canonical_limbs():
    rng = np.random.default_rng(2)
    parts = rng.integers(-2**30, 2**30, size=(64, 40)).astype(np.int32)
    parts[:, :10] = rng.integers(-2**30, 0, size=(64, 10))     # sums far below int32
    values = parts.astype(object).sum(0)
    magnitude = wide_abs(wide_total(jnp.asarray(parts)))
    assert as_ints(magnitude) == [abs(v) for v in values]
    assert np.asarray(magnitude.lo).min() >= 0 and np.asarray(magnitude.lo).max() < 2**16
    total = wide_sum(magnitude, axis=0)
    assert as_ints(WideSum(total.hi[None], total.lo[None])) == [sum(abs(v) for v in values)]


def wide_values(seed: int, count: int) -> list[int]:
    """Integers of either sign past int32 (``|v| < 2**46``), with ties, zero and the limb
    boundaries."""
    rng = np.random.default_rng(seed)
    values = [int(v) for v in rng.integers(-2**46, 2**46, size=count)]
    values += [0, 1, -1, 2**16 - 1, 2**16, -2**16, -(2**16) - 1, 2**31, -2**31 - 1]
    return values + values[:5]                                       # ties


def as_wide(values: list[int]) -> WideSum:
    return WideSum(jnp.asarray([v >> 16 for v in values], jnp.int32),
                   jnp.asarray([v & 0xFFFF for v in values], jnp.int32))


def test_canonical_negate_and_add_are_exact_in_canonical_limbs():
    a, b = wide_values(7, 300), wide_values(8, 300)
    hi = jnp.asarray([v >> 16 for v in a], jnp.int32)
    loose = fixed_point.canonical(hi - 3, jnp.asarray([(v & 0xFFFF) + 3 * 2**16 for v in a],
                                                      jnp.int32))
    sums = [x + z for x, z in zip(a, b, strict=True)]
    for got, want in ((loose, a), (fixed_point.negate(as_wide(a)), [-v for v in a]),
                      (fixed_point.add(as_wide(a), as_wide(b)), sums)):
        assert as_ints(got) == want
        assert np.asarray(got.lo).min() >= 0 and np.asarray(got.lo).max() < 2**16
    narrow = jnp.asarray([5, -7, 2**30], jnp.int32)
    np.testing.assert_array_equal(fixed_point.negate(narrow), [-5, 7, -2**30])
    np.testing.assert_array_equal(fixed_point.add(narrow, narrow[::-1]), [2**30 + 5, -14,
                                                                           2**30 + 5])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_minimal_marks_every_minimum_over_where_in_either_form(seed):
    """Every entry of ``where`` holding the minimum is marked (ties too), found by the high
    limb and then the low one: values sharing the minimum's high limb, one low limb above it,
    the minimum twice, and smaller values outside ``where``."""
    rng = np.random.default_rng(seed)
    values = wide_values(seed, 60)
    where = rng.random(len(values)) < 0.5
    low = min(v for v, w in zip(values, where, strict=True) if w) - 5 * 2**16
    base = low - (low & 0xFFFF) + 7                      # a low limb of 7
    values += [base + 2, base, base + 1, base, base + 2**16, base - 1, base - 3]
    where = np.concatenate([where, [True] * 5 + [False] * 2])     # base − 1, − 3 are out
    smallest = min(v for v, w in zip(values, where, strict=True) if w)
    assert smallest == base and values.count(base) == 2
    want = [bool(w) and v == smallest for v, w in zip(values, where, strict=True)]
    assert sum(want) == 2
    assert np.asarray(fixed_point.minimal(as_wide(values), jnp.asarray(where))).tolist() == want
    small = [v % 1000 + 10 for v in values]             # the int32 form
    small[-7:] = [3, 1, 2, 1, 9, 0, -2]                  # ties at 1; 0 and −2 outside where
    want = [bool(w) and v == 1 for v, w in zip(small, where, strict=True)]
    assert sum(want) == 2
    assert np.asarray(fixed_point.minimal(jnp.asarray(small, jnp.int32), jnp.asarray(where))
                      ).tolist() == want


def test_as_float_rounds_once_like_the_int32_conversion():
    values = [v >> 6 for v in wide_values(9, 300)]        # |hi| < 2**24, as_float's range
    want = np.asarray([np.float32(float(v)) for v in values])     # one round to nearest
    np.testing.assert_array_equal(fixed_point.as_float(as_wide(values)), want)
    narrow = [v for v in values if -2**31 <= v < 2**31]
    np.testing.assert_array_equal(fixed_point.as_float(as_wide(narrow)),
                                  np.asarray(narrow, np.int32).astype(np.float32))


def test_wide_sum_adds_more_values_than_one_stage_holds():
    """``2**16 + 5`` values whose low limbs are all ``2**16 − 1`` (one stage of ``2**15`` would
    overflow int32), summed over a tuple of axes: the exact totals."""
    rng = np.random.default_rng(4)
    n = 2**16 + 5
    hi = rng.integers(-2**10, 2**10, size=(3, n)).astype(np.int32)
    values = WideSum(jnp.asarray(hi), jnp.full((3, n), 2**16 - 1, jnp.int32))
    exact = [sum(int(h) * 2**16 + 2**16 - 1 for h in row) for row in hi]
    total = wide_sum(values, axis=1)
    assert as_ints(total) == exact
    grid = hi[:, :5 * 13108].reshape(3, 5, 13108)          # 39,324 values per total
    both = wide_sum(WideSum(jnp.asarray(grid), jnp.full(grid.shape, 2**16 - 1, jnp.int32)),
                    axis=(0, 2))
    assert as_ints(both) == [sum(int(h) * 2**16 + 2**16 - 1 for h in grid[:, k].ravel())
                             for k in range(5)]


@pytest.mark.parametrize("floor", [-(2**24), -(2**30) + 2**16, -1])
def test_floored_gaps_of_wide_values_are_the_exact_floored_gaps(floor):
    """Values near ``2**36`` whose gaps to the best range from 0 through the floor to far
    beyond int32 (the saturated high limb): the floored gaps are Python's, valid entries
    only."""
    rng = np.random.default_rng(3)
    offsets = np.concatenate([rng.integers(-2**16, 1, 20), rng.integers(-2**26, 1, 20),
                              -rng.integers(2**30, 2**35, 20)])
    values = [2**36 + int(o) for o in offsets]
    wide = WideSum(jnp.asarray([v >> 16 for v in values], jnp.int32),
                   jnp.asarray([v & 0xFFFF for v in values], jnp.int32))
    valid = rng.uniform(size=len(values)) < 0.8
    valid[0] = True
    best = max(v for v, ok in zip(values, valid, strict=True) if ok)
    expected = [max(v - best, floor) if ok else -2**31
                for v, ok in zip(values, valid, strict=True)]
    assert list(np.asarray(floored_gaps(wide, jnp.asarray(valid), floor))) == expected
    narrow, valid = np.asarray(offsets[:40], np.int32), valid[:40]    # gaps within int32
    assert list(np.asarray(floored_gaps(jnp.asarray(narrow), jnp.asarray(valid), floor))) == [
        max(int(v) - int(narrow[valid].max()), floor) if ok else -2**31
        for v, ok in zip(narrow, valid, strict=True)]


@pytest.mark.parametrize("exponent", [0, 1, 7, 15, 16, 17, 30])
@pytest.mark.parametrize("limit", [2**24, 2**28])
def test_shift_clip_is_the_clipped_floor_of_wide_and_narrow_values(exponent, limit):
    rng = np.random.default_rng(exponent)
    parts = rng.integers(-2**30, 2**30, size=(64, 40)).astype(np.int32)
    values = parts.astype(object).sum(0)
    expected = [max(-limit, min(limit, v >> exponent)) for v in values]
    got = np.asarray(shift_clip(wide_total(jnp.asarray(parts)), exponent, limit))
    assert list(got) == expected
    narrow = parts[0]
    np.testing.assert_array_equal(
        np.asarray(shift_clip(jnp.asarray(narrow), exponent, limit)),
        np.clip(narrow.astype(np.int64) >> exponent, -limit, limit))


def test_exact_segment_sum_goes_wide_past_the_int32_rows(monkeypatch):
    """Past ``MAX_ROWS`` rows the sums come back wide (chunks of ``2**CHUNK_BITS`` rows), as the
    exact integers, including sums that int32 cannot hold."""
    rng = np.random.default_rng(1)
    m = 5_000
    values = jnp.asarray(rng.integers(-256, 257, size=(m, 2)), jnp.int32)
    values = values.at[:, 1].set(256)                      # a column of full-size records
    segments = jnp.asarray(rng.integers(0, 3, size=m), jnp.int32)
    narrow = np.asarray(exact_segment_sum(values, segments, 3))
    monkeypatch.setattr(fixed_point, "MAX_ROWS", 999)
    monkeypatch.setattr(fixed_point, "CHUNK_BITS", 9)
    wide = exact_segment_sum(values, segments, 3)
    assert isinstance(wide, WideSum) and wide.hi.shape == (3, 2)
    assert as_ints(wide) == list(narrow.ravel())
    # a sum beyond int32: 2**24 rows of 2**8 units each, in one segment
    many = 2**24
    ones = jnp.full((many, 1), 256, jnp.int32)
    monkeypatch.setattr(fixed_point, "MAX_ROWS", 2**23 - 1)
    monkeypatch.setattr(fixed_point, "CHUNK_BITS", 22)
    total = exact_segment_sum(ones, jnp.zeros(many, jnp.int32), 1)
    assert as_ints(total) == [2**32]


def test_a_wide_release_equals_the_narrow_release_of_the_same_integers():
    """The Laplace mechanism reads a :class:`WideSum` as the integers it holds: the same key,
    the same release and cost as their int32 form (on a grid of one unit, and on a coarser
    grid set by a bound)."""
    values = jnp.asarray([[12_345, -6_789], [2**27, -(2**27)]], jnp.int32)
    wide = wide_total(values[None])
    for bound in (None, 2.0**34):
        a, cost_a = laplace_mechanism(jax.random.key(0), values, 258.0, 0.5, integer=True,
                                      bound=bound, touched=2)
        b, cost_b = laplace_mechanism(jax.random.key(0), wide, 258.0, 0.5, integer=True,
                                      bound=bound, touched=2)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert float(cost_a.epsilon) == float(cost_b.epsilon) <= 0.5
    with pytest.raises(ValueError, match="integer=True"):
        laplace_mechanism(jax.random.key(0), wide, 1.0, 1.0, bound=1.0)


def test_a_coarse_grid_adds_one_unit_per_touched_coordinate():
    """On a grid of step ``s > 1`` the integer sensitivity is ``ceil(Δ/s)`` plus one per
    coordinate one record changes beyond the first: 2 for a boosting cell's ``(g, h)``, not
    the event's every coordinate. The noise drawn is at the scale the cost states:
    ``E|Z| ≈ Δ_int/ε_spent`` grid steps (25,600 draws: a standard error of 0.6%)."""
    exponent, step, sensitivity_int = integer_grid(258.0, 0.5, 2, 2.0**34)
    assert int(exponent) == 6 and float(step) == 64.0
    assert float(sensitivity_int) == np.ceil(258 / 64) + 1
    zeros = jnp.zeros((200, 64, 2), jnp.int32)
    scales = []
    for touched in (2, None):
        noisy, cost = laplace_mechanism(jax.random.key(0), zeros, 258.0, 0.5, integer=True,
                                        bound=2.0**34, event_ndim=2, touched=touched)
        spent = float(cost.epsilon[0])
        assert spent <= 0.5
        expected = float(integer_grid(258.0, 0.5, 2 if touched else 128, 2.0**34)[2]) / spent
        measured = float(jnp.mean(jnp.abs(noisy))) / float(step)
        assert measured == pytest.approx(expected, rel=0.1)
        scales.append(measured)
    assert scales[1] > 15 * scales[0]


def test_an_aligned_count_crosses_no_extra_boundary():
    """A regression prior's ``(count, sum)`` (units of ``2**−8``): the count moves by exactly
    256 units, so on a grid whose step divides 256 only the sum adds a unit; on a coarser grid
    both do. Checked against every grid move of a record added at many offsets."""
    for epsilon, step, expected in [(1.0, 256, 2), (2.0**-20, 512, 2)]:
        _, got_step, sensitivity_int = integer_grid(512.0, epsilon, 2, 2.0**36, aligned=256)
        assert float(got_step) == step and float(sensitivity_int) == expected
        rng = np.random.default_rng(step)
        worst = 0
        for _ in range(2_000):
            count, total = int(rng.integers(0, 2**30)) * 256, int(rng.integers(-2**30, 2**30))
            z = int(rng.integers(-256, 257))
            worst = max(worst, abs((count + 256) // step - count // step)
                        + abs((total + z) // step - total // step))
        assert worst <= expected
    # without alignment a step of 256 charges the sum's and the count's crossing
    assert float(integer_grid(512.0, 1.0, 2, 2.0**36)[2]) == 3
    with pytest.raises(ValueError, match="power of two"):    # 256 would not divide 384
        integer_grid(512.0, 1.0, 2, 2.0**36, aligned=384)


# --- segment sums under vmap (docs/design.md, "Models share reads") ------------------------

def _per_model(values, segments, n):
    return jnp.stack([jax.ops.segment_sum(v, s, n) for v, s in zip(values, segments,
                                                                    strict=True)])


@pytest.mark.parametrize("dtype", [jnp.int32, jnp.float32])
def test_a_vmapped_segment_sum_is_every_models_own_sum_bit_for_bit(dtype):
    """Batched ids (each model its own cells: one scatter, the ids offset), shared ids (the
    models on the last axis) and nested vmaps give each model's own segment sum: the same
    integers, and the same floats (each output sums the same rows in the same order)."""
    rng = np.random.default_rng(0)
    values = jnp.asarray(rng.normal(size=(3, 4, 500, 2)) * 100, dtype)
    segments = jnp.asarray(rng.integers(0, 9, (3, 4, 500)), jnp.int32)   # 8: out of range
    fn = lambda v, s: fixed_point.segment_sum(v, s, 8)                    # noqa: E731
    own = jnp.stack([_per_model(values[i], segments[i], 8) for i in range(3)])
    for batched in (jax.vmap(jax.vmap(fn)), jax.jit(jax.vmap(jax.vmap(fn)))):
        np.testing.assert_array_equal(np.asarray(batched(values, segments)), np.asarray(own))
    shared = jax.jit(jax.vmap(jax.vmap(fn, (0, None)), (0, None)))(values, segments[0, 0])
    np.testing.assert_array_equal(np.asarray(shared[1, 2]),
                                  np.asarray(jax.ops.segment_sum(values[1, 2], segments[0, 0],
                                                                 8)))
    broadcast = jax.vmap(fn, (None, 0))(values[0, 0], segments[0])
    np.testing.assert_array_equal(np.asarray(broadcast[3]),
                                  np.asarray(jax.ops.segment_sum(values[0, 0], segments[0, 3],
                                                                 8)))
