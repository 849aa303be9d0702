"""Sensitivity: smooth boosting's first releases, the row count and the majority fallback's
class counts, drawn together by one sampler (``smooth_boost.boosting.fit``).

The method (recorded mechanisms, exact integer statistics) is described in
``helpers_sensitivity``: the recorder stands in for ``plan_laplace`` and ``laplace_releases``,
so each release's pre-noise value and the sensitivity its noise is set for are seen as the fit
passes them.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from dpjax.ensembles import smooth_boost
from dpjax.learner import FitContext
from tests.helpers.sensitivity import ADD, REPLACE, Recorder, _assert_within

ROWS, N_CODES = 40, 4


class _Released(Exception):
    """Stops a fit right after its first releases."""


class _FirstReleases(Recorder):
    """A recorder that stops the fit once its first releases are recorded."""

    def releases(self, keys, plans):
        super().releases(keys, plans)
        raise _Released


def first_releases(codes, y, sensitivity: float, size=None) -> list[tuple[np.ndarray, float]]:
    """``(pre-noise value, sensitivity)`` of each release of smooth boosting's first draw."""
    recorder = _FirstReleases()
    context = FitContext(np.full(codes.shape[1], N_CODES), 2, sensitivity, size)
    with recorder.installed(), pytest.raises(_Released):
        smooth_boost.fit(smooth_boost.SmoothBoost(), jax.random.key(0), codes, y,
                         np.float32(1.0), context)
    return [(np.asarray(a["value"], np.int64), m["sensitivity"])
            for a, m in zip(recorder.arrays, recorder.meta, strict=True)]


def data(seed: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, N_CODES, (rows, 3)).astype(np.uint8),
            rng.integers(0, 2, rows).astype(np.int32))


@pytest.mark.parametrize("seed", range(4))
def test_size_and_fallback_counts_move_within_their_sensitivity(seed):
    """Add/remove: the row count (sensitivity 1) and the class counts (L1 sensitivity 1)
    move by at most their sensitivities, exactly (int32); replace-one, with the size public:
    no row count, and the class counts move by at most 2 in L1."""
    codes, y = data(seed, ROWS + 1)
    small, large = (first_releases(codes[:rows], y[:rows], 1.0) for rows in (ROWS, ROWS + 1))
    assert [s for _, s in small] == [1.0, 1.0]               # the row count, the class counts
    for (before, sensitivity), (after, _) in zip(small, large, strict=True):
        _assert_within(f"smooth boosting's first releases {ADD}",
                       float(np.abs(after - before).sum()), sensitivity, exact=True)
    np.testing.assert_array_equal(large[0][0], ROWS + 1)
    np.testing.assert_array_equal(large[1][0], np.bincount(y, minlength=2))
    replaced = y[:ROWS].copy()
    replaced[0] = 1 - replaced[0]
    pairs = [first_releases(codes[:ROWS], labels, 2.0, size=np.float32(ROWS))
             for labels in (y[:ROWS], replaced)]
    assert [[s for _, s in p] for p in pairs] == [[2.0], [2.0]]    # class counts only
    _assert_within(f"smooth boosting's class counts {REPLACE}",
                   float(np.abs(pairs[1][0][0] - pairs[0][0][0]).sum()), 2.0, exact=True)
