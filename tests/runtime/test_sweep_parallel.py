"""``dpjax.sweep(parallel=...)``: the models are the same bit for bit whether the grid points and
seeds run vectorised (an accelerator's plan), one after another, or by the CPU's plan."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import dpjax
from dpjax import _api
from dpjax.learners import get_learner


def data(rows: int = 300):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (rows, 3))
    return X, (X[:, 0] + 0.2 * rng.normal(size=rows) > 0.5).astype(int)


@pytest.mark.parametrize(("method", "params"), [
    ("boosted", dict()),                              # branches per point: mapped on CPU
    ("random_trees", dict(n_trees=3, depth=2)),
    ("rule_list", dict(max_rules=2)),                 # vectorised grid on CPU
])
def test_every_plan_gives_the_same_models(method, params):
    X, y = data()
    sweeps = {parallel: dpjax.sweep(X, y, method=method, epsilon=[0.3, 3.0], seeds=[1, 2],
                                    bounds=(0.0, 1.0), parallel=parallel, **params)
              for parallel in ("auto", "map", "vmap")}
    for other in ("map", "vmap"):
        same = jax.tree.map(lambda a, b: bool(np.array_equal(np.asarray(a), np.asarray(b))),
                            sweeps["auto"].params, sweeps[other].params)
        assert all(jax.tree.leaves(same)), other
        assert [ledger.epsilon for ledger in sweeps[other].ledgers] == [
            ledger.epsilon for ledger in sweeps["auto"].ledgers]


def test_the_plan_follows_the_backend(monkeypatch):
    boosted, rules = get_learner("boosted"), get_learner("rule_list")
    assert _api.sweep_plan("auto", boosted) == (True, True)          # this CPU
    assert _api.sweep_plan("auto", rules) == (True, False)
    assert _api.sweep_plan("map", rules) == (True, True)
    assert _api.sweep_plan("vmap", boosted) == (False, False)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert _api.sweep_plan("auto", boosted) == (False, False)
    with pytest.raises(ValueError, match="parallel must be one of"):
        _api.sweep_plan("threads", boosted)


def test_a_sweep_of_many_seeds_builds_its_keys_at_once():
    """The keys built at once on the host are :func:`as_key`'s, all 64 bits of each seed kept;
    ``None`` seeds draw fresh entropy each."""
    from dpjax._keys import as_key, seed_keys

    keys = seed_keys([0, 5, 2**40 + 3])
    for i, seed in enumerate([0, 5, 2**40 + 3]):
        np.testing.assert_array_equal(jax.random.key_data(keys[i]),
                                      jax.random.key_data(as_key(seed)))
    fresh = seed_keys([None, None])
    assert not np.array_equal(jax.random.key_data(fresh[0]), jax.random.key_data(fresh[1]))
