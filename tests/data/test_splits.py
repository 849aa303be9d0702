"""Data layer: stratified splits and folds."""

from __future__ import annotations

import numpy as np
import pytest

from dpjax.data.splits import stratified_folds, stratified_split

# --------------------------------------------------------------------------------------------
# Splits
# --------------------------------------------------------------------------------------------


def _labels():
    return np.repeat([0, 1, 2], [101, 57, 12])


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.5])
def test_stratified_split(fraction):
    y = _labels()
    train, test = stratified_split(y, fraction, seed=3)
    assert len(np.intersect1d(train, test)) == 0
    np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(len(y)))
    assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)
    for label, n_c in zip(*np.unique(y, return_counts=True), strict=True):
        assert int(np.sum(y[test] == label)) == int(round(fraction * n_c))
    again = stratified_split(y, fraction, seed=3)
    np.testing.assert_array_equal(again[1], test)
    other = stratified_split(y, fraction, seed=4)
    assert not np.array_equal(other[1], test)


def test_stratified_split_rejects_fraction():
    for bad in (0.0, 1.0, -0.2, 1.5):
        with pytest.raises(ValueError, match="test_fraction"):
            stratified_split(_labels(), bad, seed=0)


@pytest.mark.parametrize("n_folds", [2, 5, 10])
def test_stratified_folds(n_folds):
    y = _labels()
    folds = stratified_folds(y, n_folds, seed=1)
    assert len(folds) == n_folds
    joined = np.concatenate(folds)
    np.testing.assert_array_equal(np.sort(joined), np.arange(len(y)))  # disjoint and covering
    sizes = np.array([len(f) for f in folds])
    assert sizes.max() - sizes.min() <= 1
    for label in np.unique(y):
        per_fold = np.array([np.sum(y[f] == label) for f in folds])
        assert per_fold.max() - per_fold.min() <= 1
    again = stratified_folds(y, n_folds, seed=1)
    for a, b in zip(folds, again, strict=True):
        np.testing.assert_array_equal(a, b)
