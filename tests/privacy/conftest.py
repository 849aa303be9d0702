"""The accountant tests' small dataset."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def data():
    """300 rows of 3 features in [0, 1], the label a noisy threshold on the first."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (300, 3))
    y = (X[:, 0] + 0.2 * rng.normal(size=300) > 0.5).astype(int)
    return X, y
