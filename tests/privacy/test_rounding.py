"""The conservative float32 rounding of mechanism parameters (:mod:`dpjax.privacy.rounding`)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from dpjax.privacy.rounding import ULPS, round_down, round_up

TINY = np.float32(2.0**-149)
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(np.float32).max,
                  -np.finfo(np.float32).max, np.finfo(np.float32).tiny,
                  -np.finfo(np.float32).tiny, 1.0, -1.0, 0.1, 3.0e-5, 7.5e4],
                 np.float32)


def floats() -> np.ndarray:
    """The edge values, every float within 12 ulps of 0 and of the smallest normal, and 2**16
    random bit patterns (normals, subnormals, infinities and NaNs of both signs)."""
    near = np.arange(-12, 13, dtype=np.int32)
    normal = np.finfo(np.float32).tiny.view(np.int32) + near
    bits = np.random.default_rng(0).integers(-(2**31), 2**31, 2**16, dtype=np.int64)
    return np.concatenate([EDGES, near.astype(np.float32) * TINY, normal.view(np.float32),
                           -normal.view(np.float32), bits.astype(np.int32).view(np.float32)])


def nextafter_steps(x: np.ndarray, target: float, ulps: int) -> np.ndarray:
    """``ulps`` IEEE ``nextafter`` steps (NumPy's, exact on subnormals too)."""
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(ulps):
            x = np.nextafter(x, np.float32(target))
    return x


@pytest.mark.parametrize("ulps", [ULPS, 1])
@pytest.mark.parametrize("rounding, target", [(round_up, np.inf), (round_down, 0.0)])
def test_rounding_is_ulps_ieee_nextafter_steps(rounding, target, ulps):
    """The integer ordinal steps give the value of ``ulps`` IEEE ``nextafter`` steps on every
    float: NaN stays NaN, +inf stays +inf going up, ±0 and the subnormals move by ulps (only
    the sign of a zero result may differ, and it equals +0)."""
    x = floats()
    got = np.asarray(jax.jit(rounding, static_argnums=1)(x, ulps))
    want = nextafter_steps(x, target, ulps)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    kept = ~np.isnan(want)
    np.testing.assert_array_equal(got[kept], want[kept])        # -0.0 == +0.0 here
    zero = kept & (got == 0)
    assert not np.signbit(got[zero]).any()                    # a zero result is +0


def test_rounding_moves_in_the_safe_direction():
    """A noise scale never goes down, a rate never up nor below 0 (non-negative rates)."""
    x = floats()
    x = x[np.isfinite(x)]
    up = np.asarray(jax.jit(round_up)(x))
    down = np.asarray(jax.jit(round_down)(np.abs(x)))
    assert np.all(up >= x)
    assert np.all((down <= np.abs(x)) & (down >= 0))
    below_max = x < np.finfo(np.float32).max
    assert np.all(up[below_max] > x[below_max])
