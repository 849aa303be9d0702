"""Private feature ranges (``bounds="private"``): each numeric feature's low and high quantile
chosen by permute-and-flip over a public grid of candidate values, for users without public
bounds (as DP-EBM's private binning spends a share of ε on the bins).

The candidates are data-independent: ``0`` and ``±s·2**k`` for ``s ∈ {1, 1.25, 1.5, 1.75}``
and ``k ∈ [−16, 32]`` (:func:`candidate_grid`, 393 values from ``±1.5e−5`` to ``±7.5e9``), so a
released bound is one of them (no float side channel). For the ``q``-quantile (``q = 1/k``) the
utility of candidate ``c`` is ``−|(k − 1)·#{x < c} − #{x >= c}|`` (lower bound) or
``−|#{x <= c} − (k − 1)·#{x > c}|`` (upper bound), Smith's (2011) quantile utility scaled by
``k`` to integers: it needs no row count, a missing value counts on neither side, and adding or
removing a record moves it by at most ``k − 1`` (``k`` when a record is replaced, covered by
the replace-one multiplier 2). Utilities are clipped to ``2**23`` so that float32 holds them
exactly (clipping keeps the sensitivity). Each feature's two selections are sequential
releases on the same records, and so are the features': ``2·n`` selections at ``ε_b/(2n)``
each. The released range is widened to the next candidate where the two cross (post-
processing).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.mechanisms.exponential import permute_and_flip
from dpjax.privacy import Cost

QUANTILE = 0.05
"""The low and high quantiles released: the 5% and 95% points (``k = 20``; at the 1% points
the tails leave too small a margin: the candidates beyond the data all score within ``q·m`` of
the best, and at ε = 0.1 on 5,000 rows the released range was 10**5 times too wide)."""
UTILITY_CAP = 2**23


def candidate_grid() -> np.ndarray:
    """The public candidates (float64, sorted): 0 and ``±s·2**k``, ``s ∈ {1, 1.25, 1.5,
    1.75}``, ``k ∈ [−16, 32]``."""
    steps = np.array([1.0, 1.25, 1.5, 1.75])[None, :] * 2.0 ** np.arange(-16, 33)[:, None]
    positive = np.sort(steps.reshape(-1))
    return np.concatenate([-positive[::-1], [0.0], positive])


def quantile_utilities(values: np.ndarray, grid: np.ndarray, k: int) -> np.ndarray:
    """``[2, G]`` utilities of the low and high ``1/k`` quantiles over ``grid`` for one
    feature's ``values`` (NaN: missing, counted nowhere), exact integers clipped to
    ``UTILITY_CAP`` (module docstring)."""
    present = np.sort(values[~np.isnan(values)])
    m = present.shape[0]
    below = np.searchsorted(present, grid, side="left").astype(np.int64)      # #{x < c}
    at_most = np.searchsorted(present, grid, side="right").astype(np.int64)   # #{x <= c}
    low = np.abs((k - 1) * below - (m - below))
    high = np.abs(at_most - (k - 1) * (m - at_most))
    return -np.minimum(np.stack([low, high]), UTILITY_CAP).astype(np.float32)


def select_quantiles(key: jax.Array, utilities: jax.Array, epsilon: ArrayLike,
                     sensitivity: float, k: int) -> tuple[jax.Array, Cost]:
    """Permute-and-flip over each row of ``utilities [n, 2, G]`` (:func:`quantile_utilities`),
    ``epsilon`` in all (``2n`` selections, each ``epsilon/(2n)``; the utilities' sensitivity
    ``sensitivity·(k − 1)``): the chosen candidates' indices ``[n, 2]`` and the cost."""
    each = jnp.asarray(epsilon, jnp.float32) / (2 * utilities.shape[0])
    scale = sensitivity * (k - 1)
    return permute_and_flip(key, utilities, scale, each,
                            label=f"quantile rank, sens. {scale:g}")


def private_ranges(key: jax.Array, columns: np.ndarray, epsilon: ArrayLike,
                   sensitivity: float, quantile: float = QUANTILE
                   ) -> tuple[np.ndarray, np.ndarray, Cost]:
    """Release ``(lower [n], upper [n], cost)`` for the numeric ``columns [m, n]`` (float, NaN
    missing) at ``epsilon`` in all (:func:`select_quantiles`; ``sensitivity`` the neighbouring
    relation's multiplier, 1 or 2). ``cost.epsilon`` is ``[n, 2]``."""
    k = int(round(1.0 / quantile))
    if not 2 <= k <= 10_000:
        raise ValueError(f"quantile must be in [1e-4, 0.5]; got {quantile!r}")
    grid = candidate_grid()
    utilities = np.stack([quantile_utilities(columns[:, j].astype(np.float64), grid, k)
                          for j in range(columns.shape[1])])                    # [n, 2, G]
    index, cost = select_quantiles(key, jnp.asarray(utilities), epsilon, sensitivity, k)
    low, high = widened(np.asarray(index), grid.size)
    return grid[low], grid[high], cost


def widened(index: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The chosen ``[n, 2]`` candidate indices as a range of at least one grid step: where the
    high one is not above the low one, the next candidate above the low one (or, at the top of
    the grid, the one below it becomes the low end); post-processing."""
    low, high = index[:, 0], index[:, 1]
    high = np.maximum(high, np.minimum(low + 1, size - 1))
    low = np.where(low >= high, high - 1, low)
    return low, high


__all__ = ["QUANTILE", "candidate_grid", "private_ranges", "quantile_utilities",
           "select_quantiles", "widened"]
