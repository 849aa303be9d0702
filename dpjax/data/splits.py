"""Train/test splits and stratified folds, by seed (used by the main job and the experiments)."""

from __future__ import annotations

import numpy as np


def stratified_split(
    y: np.ndarray, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(train, test)``: each class is shuffled and ``round(test_fraction * n_c)`` of
    its ``n_c`` rows go to the test side."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    y = np.asarray(y)
    train, test = [], []
    for label in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == label))
        n_test = int(round(test_fraction * len(rows)))
        test.append(rows[:n_test])
        train.append(rows[n_test:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def stratified_folds(y: np.ndarray, n_folds: int, seed: int) -> list[np.ndarray]:
    """``n_folds`` disjoint index arrays covering ``y``, each class dealt round-robin after a
    shuffle, so class proportions agree across folds to within one row."""
    rng = np.random.default_rng(seed)
    y = np.asarray(y)
    folds: list[list[np.ndarray]] = [[] for _ in range(n_folds)]
    offset = 0
    for label in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == label))
        for i in range(n_folds):
            folds[i].append(rows[(i - offset) % n_folds::n_folds])
        offset += len(rows)
    return [np.sort(np.concatenate(f)) for f in folds]
