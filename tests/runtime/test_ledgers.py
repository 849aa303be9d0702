"""The ledger is assembled from the costs the mechanisms report: for every learner and a grid of
configurations it never exceeds the request, wastes almost none of it, and the same key gives
the same model."""

from __future__ import annotations

import jax
import numpy as np
import pandas as pd
import pytest

import dpjax

pytestmark = pytest.mark.slow

BOUNDS = {"a": (0.0, 1.0), "b": (0.0, 1.0)}
CONFIGS = [
    ("boosted", dict()),
    ("boosted", dict(shape="random", n_trees=3, depth=2)),
    ("random_trees", dict(n_trees=3, depth=3)),
    ("random_trees", dict(n_trees=1, depth=1, budget="paper")),
    ("rf_laplace", dict(n_trees=3, depth=2)),
    ("rf_exponential", dict(n_trees=3, depth=2)),
    ("rf_exponential", dict(n_trees=3, depth=2, budget="paper")),
    ("malpha", dict(n_trees=3, depth=3)),
    ("malpha", dict(n_trees=2, depth=1, alpha=0.3)),
    ("malpha", dict(n_trees=2, depth=2, prior_share=0.0)),
    ("malpha", dict(n_trees=3, depth=2, leaf_mechanism="counts", beta_mode="post",
                     leaf_composition="parallel", beta_tree=0.9)),
    ("malpha", dict(n_trees=2, depth=3, leaf_mechanism="counts", beta_mode="laplace",
                     beta_tree=0.1)),
    ("malpha", dict(n_trees=2, depth=2, leaf_mechanism="value", beta_mode="laplace",
                     alpha=1.0, beta_share=0.5)),
]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.uniform(0, 1, 50), "b": rng.uniform(0, 1, 50)})
    return X, (X.a + X.b > 1).astype(int).to_numpy()


@pytest.mark.parametrize("config", range(len(CONFIGS)))
def test_ledger_total_is_within_the_request_for_every_learner(data, config):
    X, y = data
    method, params = CONFIGS[config]
    epsilons = [1e-3, 0.1, 1.0, 7.5, 100.0]
    cases = (("add_remove", None), ("add_remove", 50), ("replace_one", None))
    for neighbouring, public_size in cases:
        sweep = dpjax.sweep(X, y, method=method, epsilon=epsilons, seeds=1, bounds=BOUNDS,
                            neighbouring=neighbouring, public_size=public_size, **params)
        for eps, ledger in zip(epsilons, sweep.ledgers, strict=True):
            assert ledger.private and ledger.requested_epsilon == eps
            assert eps * (1 - 2e-3) <= ledger.epsilon <= eps, (neighbouring, ledger)
            assert ledger.delta == 0.0
            counts = {e.what: e.count for e in ledger.entries}
            # Mα-boost's class prior is its released size; without it a noisy row count
            released_size = neighbouring == "add_remove" and public_size is None
            assert ("row count" in counts) == (
                method == "malpha" and params.get("prior_share") == 0.0 and released_size)


@pytest.mark.parametrize("config", range(len(CONFIGS)))
def test_same_key_same_model(data, config):
    X, y = data
    method, params = CONFIGS[config]
    first, again, other = (dpjax.fit(X, y, method=method, epsilon=1.0, bounds=BOUNDS,
                                     key=key, **params) for key in (3, 3, 4))
    same = jax.tree.map(np.array_equal, first.params, again.params)
    assert all(jax.tree.leaves(same))
    assert not all(jax.tree.leaves(jax.tree.map(np.array_equal, first.params, other.params)))
    assert first.privacy == again.privacy
