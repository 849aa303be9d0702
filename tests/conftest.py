"""Shared fixtures and helpers for the dpjax test suite.

Every random quantity is drawn from a fixed key or seed, and every statistical tolerance is
``Z`` standard errors (derived from the variance of the estimator), so the suite is
deterministic: it either always passes or always fails on a given platform.

Two tiers: a plain ``pytest`` run is the standard tier, the README's test command (minutes on
two cores; the behaviour fingerprints included); ``pytest --full`` (or ``DPJAX_FULL_TESTS=1``)
runs the tests marked ``slow`` too (audits, compile-heavy fits and sweeps, the exhaustive
bit-identity checks, the docs' own blocks): the full suite, which CI runs (``.ci/run``: the
standard tier, then ``--full -m slow``). A test named on the command line (``path::test``) runs
whatever its tier.
"""

from __future__ import annotations

import functools
import itertools
import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.data import encode_labels
from dpjax.learners import FitContext
from dpjax.mechanisms.exponential import GAMMA_CAP
from tests.helpers.fits import fit_random_trees
from tests.helpers.rf_baselines import easy_data

# Number of standard errors allowed by the statistical checks (two-sided p ~ 6e-7 per check).
Z = 5.0

# The project's shared datasets live beside the repository (CI checks out ../shared).
SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--full", action="store_true",
                     help="the full suite: the slow tests too (what CI runs)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: in the full suite only (pytest --full)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The fast tier leaves out the tests marked ``slow`` (unless named on the command line)."""
    full = config.getoption("--full") or os.environ.get("DPJAX_FULL_TESTS") == "1"
    if full or any("::" in str(arg) for arg in config.args):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop the compiled programs after each test module (:func:`dpjax.clear_caches`): the
    whole suite's XLA executables would exceed the kernel's memory-mapping limit
    (``vm.max_map_count``) and crash the compiler in a later module."""
    yield
    dpjax.clear_caches()


def small(method: str) -> dict[str, int]:
    """Small, fast sizes of ``method`` for the tests that run every learner: two trees of depth
    two, three rounds for the smooth booster (which has no trees), three rules for a rule
    list."""
    if method == "rule_list":
        return {"max_rules": 3}
    return {"n_rounds": 3} if method == "smooth_boost" else {"n_trees": 2, "depth": 2}


def binomial_tolerance(p: np.ndarray | float, n: int, z: float = Z) -> np.ndarray:
    """``z`` standard errors of a frequency with success probability ``p`` over ``n`` draws."""
    p = np.asarray(p, float)
    return z * np.sqrt(p * (1.0 - p) / n)


def pf_coins(utility: Any, sensitivity: float, epsilon: float) -> np.ndarray:
    """Each candidate's heads probability ``exp(-min(eps (u* - u_r) / (2 Delta), 16))`` (the
    implementation caps the exponent at ``GAMMA_CAP = 16``), 0 for ``-inf``."""
    u = np.asarray(utility, np.float64)
    finite = np.isfinite(u)
    best = u[finite].max()
    gamma = np.minimum(epsilon * (best - np.where(finite, u, best)) / (2.0 * sensitivity),
                       GAMMA_CAP)
    return np.where(finite, np.exp(-gamma), 0.0)


def pf_probabilities(utility: Any, sensitivity: float, epsilon: float) -> np.ndarray:
    """Exact permute-and-flip probabilities (McKenna & Sheldon 2020) by brute force over the
    ``2^n`` head sets: each candidate's coin is heads with probability
    ``exp(eps (u_r - u*) / (2 Delta))`` (0 for ``-inf``), a head set ``S`` has probability
    ``prod_S p_r prod_(not S) (1 - p_r)`` and the pick is uniform on ``S``."""
    p = pf_coins(utility, sensitivity, epsilon)
    probs = np.zeros(len(p))
    for heads in itertools.product([False, True], repeat=len(p)):
        heads = np.asarray(heads)
        if heads.any():
            probs[heads] += np.prod(np.where(heads, p, 1.0 - p)) / heads.sum()
    return probs


def pf_probabilities_by_count(utility: Any, sensitivity: float, epsilon: float) -> np.ndarray:
    """The same probabilities in ``O(n^2)`` for many candidates: ``P(r) = p_r E[1/(1 + K_r)]``
    with ``K_r`` the number of heads among the other coins (a Poisson-binomial count)."""
    p = pf_coins(utility, sensitivity, epsilon)
    probs = np.zeros(len(p))
    for r in np.flatnonzero(p > 0):
        count = np.array([1.0])
        for i in np.flatnonzero(p > 0):
            if i != r:
                count = np.convolve(count, [1.0 - p[i], p[i]])
        probs[r] = p[r] * np.sum(count / np.arange(1, len(count) + 1))
    return probs


def reference_leaf(feature: np.ndarray, threshold: np.ndarray, row: np.ndarray) -> int:
    """Pure-Python traversal of one heap-ordered dense tree: right iff code > threshold."""
    n_internal = len(feature)
    node = 0
    while node < n_internal:
        go_right = int(row[int(feature[node])]) > int(threshold[node])
        node = 2 * node + 1 + int(go_right)
    return node - n_internal


@pytest.fixture(scope="session")
def toy_xy() -> tuple[pd.DataFrame, np.ndarray, dict[str, tuple[float, float]]]:
    """A small learnable binary problem with public bounds: y = 1 iff a + b > 1 (plus 5% label
    noise), features in [0, 1]."""
    rng = np.random.default_rng(1234)
    m = 160
    a, b = rng.uniform(0, 1, m), rng.uniform(0, 1, m)
    y = ((a + b) > 1.0).astype(np.int64)
    flip = rng.uniform(size=m) < 0.05
    y = np.where(flip, 1 - y, y)
    X = pd.DataFrame({"a": a, "b": b})
    return X, y, {"a": (0.0, 1.0), "b": (0.0, 1.0)}


# Codes of the synthetic forests: three features with ten codes each.
FOREST_CODES = np.array([10, 10, 10], np.int32)


def make_data(seed: int, m: int, n_classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Codes in 0..9 for three features; the class is a function of feature 0 (learnable)."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 10, (m, 3)).astype(np.uint8)
    y = np.minimum(codes[:, 0].astype(np.int32) * n_classes // 10, n_classes - 1)
    return codes, y.astype(np.int32)


@functools.cache
def forest_fn(n_trees: int, depth: int, n_classes: int, private: bool, **kwargs):
    """``fit_random_trees`` jitted for one static configuration over ``FOREST_CODES``.

    Cached, so every test module that uses a configuration shares one compilation (the suite's
    run time is dominated by XLA compiles). Signature ``(key, codes, y[, epsilon]) -> (forest,
    costs)`` (``costs`` is empty without DP).
    """
    fit = functools.partial(fit_random_trees, n_trees=n_trees, depth=depth,
                            n_codes_per_feature=FOREST_CODES, n_classes=n_classes, **kwargs)
    if private:
        return jax.jit(fit)
    return jax.jit(lambda key, codes, y: fit(key, codes, y, None))


def learner_fit(model: dpjax.Model, X: Any, y: Any, key: Any, epsilon: float | None, *,
                sensitivity: float = 1.0, size: float | None = None,
                structure_key: jax.Array | None = None, **traced: Any) -> tuple[Any, Any]:
    """``model``'s learner's pure ``fit`` called directly (jitted) on ``model``'s encoding of
    ``(X, y)``, with ``model``'s static settings and its traced hyper-parameters overridden by
    ``traced``: ``(params, costs)``. The independent reference for what ``dpjax.fit`` and
    ``dpjax.sweep`` compute."""
    config = model.config.replace(**traced)
    values = {n: jnp.float32(config.encode_traced(n)) for n in config.traced_names()}
    context = FitContext(model.spec.n_codes, len(model.classes), sensitivity,
                         None if size is None else jnp.float32(size), structure_key,
                         n_ordered=model.spec.n_ordered)
    y_index = jnp.asarray(encode_labels(y, model.classes)[0])
    fit = jax.jit(functools.partial(config.fit, context=context))
    return fit(dpjax.as_key(key), model.encode(X), y_index,
               None if epsilon is None else jnp.float32(epsilon), **values)


@pytest.fixture(scope="module")
def easy():
    """Train (m = 400) and test (m = 600) sets of the planted binary problem; every
    ``dpjax.fit`` on the train set with one static configuration shares one compilation."""
    return easy_data(0, 400), easy_data(1, 600)
