"""Sensitivity: the grid release of ``laplace_mechanism``.

The method (neighbours of one shape, recorded mechanisms, tolerances) is described in
``helpers_sensitivity``.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpjax.mechanisms.laplace import grid_step
from tests.helpers.sensitivity import _assert_within, _grid_ints

# ------------------------------------------------------------------------------------------
# 9. The grid release of laplace_mechanism
# ------------------------------------------------------------------------------------------

GRID_CASES, GRID_MAX_K = 20000, 8


def _grid_cases(seed: int, per_element: bool):
    """Random ``(v, v', Δ, ε, B, k)`` with ``||v − v'||_1 <= Δ`` (or ``|v_i − v'_i| <= Δ`` for
    every ``i`` with ``per_element``). Exact in float32, checked in float64. Half the cases sit
    ``v`` just below a grid point and move it up (the worst case for the floors). Some values
    lie beyond ``±B`` and are clipped."""
    rng = np.random.default_rng(seed)
    n = GRID_CASES
    delta = 2.0 ** rng.uniform(-12, 8, n)
    kind = rng.integers(0, 3, n)
    delta = np.where(kind == 1, 2.0 ** rng.integers(-12, 8, n), delta)            # powers of 2
    delta = np.where(kind == 2, rng.integers(1, 40, n), delta)                     # integers
    delta = delta.astype(np.float32)
    epsilon = (2.0 ** rng.uniform(-16, 6, n)).astype(np.float32)
    bound = (delta * 2.0 ** rng.uniform(-3, 34, n)).astype(np.float32)
    step = np.asarray(grid_step(delta, epsilon, bound), np.float64)
    k = rng.integers(1, GRID_MAX_K + 1, n)
    active = np.arange(GRID_MAX_K)[None, :] < k[:, None]
    d = delta[:, None].astype(np.float64)
    if per_element:
        move = d * rng.choice([1.0, -1.0], (n, GRID_MAX_K)) * np.where(
            rng.uniform(size=(n, GRID_MAX_K)) < 0.5, 1.0, rng.uniform(0, 1, (n, GRID_MAX_K)))
    else:
        share = rng.dirichlet(np.ones(GRID_MAX_K), n) * active
        share /= share.sum(1, keepdims=True)
        fill = np.where(rng.uniform(size=(n, 1)) < 0.5, 1.0, rng.uniform(0, 1, (n, 1)))
        move = d * fill * share * rng.choice([1.0, -1.0], (n, GRID_MAX_K))
    top = rng.uniform(size=n) < 0.5                     # just below a grid point, moving up
    cell = rng.integers(-50, 50, (n, GRID_MAX_K))
    v = np.where(top[:, None], step[:, None] * (cell + 1) - step[:, None] * 2.0**-12,
                 bound[:, None] * rng.uniform(-1.3, 1.3, (n, GRID_MAX_K)))
    move = np.where(top[:, None], np.abs(move), move)
    v = np.where(active, v, 0.0).astype(np.float32)
    v2 = (v.astype(np.float64) + np.where(active, move, 0.0)).astype(np.float32)
    diff = np.abs(v2.astype(np.float64) - v.astype(np.float64))
    ok = diff.max(1) <= delta if per_element else diff.sum(1) <= delta   # premise holds exactly
    return v[ok], v2[ok], delta[ok], epsilon[ok], bound[ok], step[ok], k[ok]


@pytest.mark.parametrize("per_element", [False, True], ids=["L1-block", "per-element"])
def test_laplace_grid_release_integer_sensitivity(per_element):
    """``laplace_mechanism`` on a grid (Canonne, Kamath & Steinke 2020 §5, module docstring):
    the release is ``floor(clip(v, ±B)/g)``, ``g = grid_step(Δ, ε, B)``. For
    ``||v − v'||_1 <= Δ`` over ``k`` coordinates, the grid values move by at most
    ``ceil(Δ/g) + (k − 1)`` in L1 (the integer sensitivity of the noise). Per element, with
    ``|v_i − v'_i| <= Δ``, each moves by at most ``ceil(Δ/g)``."""
    v, v2, delta, _, bound, step, k = _grid_cases(3 + per_element, per_element)
    assert len(v) > 0.5 * GRID_CASES
    clip = bound[:, None]
    ints = [_grid_ints(np.clip(x, -clip, clip), step[:, None]) for x in (v, v2)]
    base = np.ceil(np.float32(delta) / np.float32(step)).astype(np.float64)
    if per_element:
        change = np.abs(ints[1] - ints[0])
        name = "grid release, per element"
        _assert_within(name, change, base[:, None], exact=True)
    else:
        change = np.abs(ints[1] - ints[0]).sum(1)
        name = "grid release, L1 block"
        ratio = _assert_within(name, change, base + (k - 1), exact=True)
        assert ratio == 1.0       # the bound is attained
    assert np.any(step > delta) and np.any(step < delta / 500)   # coarse and fine grids
