"""Shared data helpers of the tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpjax.data import encode, make_feature_spec


def spec_and_codes(X, bounds=None, **kwargs):
    spec = make_feature_spec(X, bounds, **{k: v for k, v in kwargs.items()
                                           if k in ("n_bins", "missing", "private")})
    codes = encode(spec, X, **{k: v for k, v in kwargs.items() if k == "on_out_of_bounds"})
    return spec, codes


def one_bin_rule(m: int = 600, seed: int = 7) -> tuple[pd.DataFrame, np.ndarray, dict]:
    """Three features in [0, 1] (public bounds, 10 bins); y = 1 iff a is in the first bin,
    with 5% label noise: a one-bin rule (a one-hot stump, a one-literal rule) is the Bayes
    classifier (accuracy 0.95)."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(0.0, 1.0, (m, 3)), columns=["a", "b", "c"])
    X.loc[: m // 2, "a"] *= 0.1            # half the rows in a's first bin
    y = ((X["a"] < 0.1) ^ (rng.uniform(size=m) < 0.05)).astype(np.int64).to_numpy()
    return X, y, {name: (0.0, 1.0) for name in X.columns}


def imbalanced_threshold(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` rows of 3 features in ``[0, 1]``, 80% of class 0: class 1 iff ``x0 > 0.8``
    (learnable; a fixed seed). The majority-fallback tests' data."""
    rng = np.random.default_rng(5)
    X = rng.uniform(0.0, 1.0, (rows, 3))
    return X, (X[:, 0] > 0.8).astype(int)
