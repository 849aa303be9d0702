"""Shared constants and helpers of the RF-L / RF-E baseline tests (Nock & Henecka; spec
``boosted-dp-trees-malpha.md`` §6.5, §4.1)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from dpjax.ensembles.random_trees import leaf_epsilon
from dpjax.mechanisms.exact import laplace_fraction
from dpjax.privacy.rounding import round_up

T_DEFAULT, D_DEFAULT = 21, 4
N_LEAVES = T_DEFAULT * 2**D_DEFAULT  # 336 per-leaf releases under budget="paper"
EPS = 0.7
BOUNDS = (np.zeros(3), np.ones(3))
# every budget inside a fit is rounded down (float32): totals land in [eps (1 - SLACK), eps]
SLACK = 2e-3


def laplace_cost(epsilon: float, releases: int, sensitivity: float = 1.0) -> float:
    """The cost of one count-vector release at ``eps / releases``: the float32 share rounded
    down, then ``Delta s/t`` of the exact discrete-Laplace scale ``t/s >= Delta/share``
    (computed here eagerly; a jitted fit may round the share one float32 ulp differently, so
    compare with ``rel=1e-5``)."""
    share = leaf_epsilon(jnp.float32(epsilon), releases, 0, "parallel")
    t, s = laplace_fraction(round_up(jnp.float32(math.ceil(sensitivity)) / share))
    return float(np.float32(sensitivity * int(s) / int(t)))


def assert_within_budget(spent: float, epsilon: float) -> None:
    assert spent <= epsilon
    assert spent >= epsilon * (1 - SLACK)


def easy_data(seed: int, m: int, n_classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Three features in [0, 1]; the class is a function of feature 0 only (10 equal bins, so
    for two classes the label is ``code_0 > 4``)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (m, 3))
    y = np.minimum((X[:, 0] * n_classes).astype(np.int64), n_classes - 1)
    return X, y


def assert_one_hot(leaf: jax.Array) -> None:
    leaf = np.asarray(leaf)
    assert set(np.unique(leaf)) <= {0.0, 1.0}
    np.testing.assert_array_equal(leaf.sum(-1), 1.0)
