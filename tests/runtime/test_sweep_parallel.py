"""``dpjax.sweep``: models grouped by plan (:mod:`dpjax._planning`), and the same bit for bit
whether a plan's models run vectorised (``parallel="vmap"``, ``"auto"``) or one after another
(``"map"``)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax import _api, _planning, _preparation


def data(rows: int = 300):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (rows, 3))
    return X, (X[:, 0] + 0.2 * rng.normal(size=rows) > 0.5).astype(int)


@pytest.mark.parametrize(("method", "params"), [
    ("boosted", dict()),                  # plans settled per model (random or cyclic rounds)
    ("boosted", dict(shape="oblivious", oblivious_trees=2, depth=3)),   # windowed levels
    ("random_trees", dict(n_trees=3, depth=2)),
    ("rule_list", dict(max_rules=2)),
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


def test_auto_vectorises_a_plans_models():
    assert _api.sweep_layout("auto") == _api.sweep_layout("vmap") == (False, False)
    assert _api.sweep_layout("map") == (True, True)
    with pytest.raises(ValueError, match="parallel must be one of"):
        _api.sweep_layout("threads")


def test_a_group_is_fitted_in_parts_of_as_many_seeds_as_the_memory_holds():
    group = _planning.groups([["a"] * 3 for _ in range(10)])[0]
    parts = _planning.seed_chunks(group, 9)             # 3 seeds of 3 points at once
    assert [p.seeds for p in parts] == [(0, 1, 2), (3, 4, 5), (6, 7, 8), (9, 9, 9)]
    assert [sum(map(sum, p.valid)) for p in parts] == [9, 9, 9, 3]   # padding is invalid
    assert [p.seeds for p in _planning.seed_chunks(group, 2)] == [(s,) for s in range(10)]
    assert len(_planning.seed_chunks(group, 10**6)) == 1


def test_a_sweep_larger_than_the_memory_limit_runs_in_parts(monkeypatch):
    """The models of a sweep that would not fit in memory at once run in parts (one compiled
    program each), with the same models as at once."""
    X, y = data()
    kw = dict(method="random_trees", epsilon=[0.3, 3.0], seeds=[1, 2, 3], bounds=(0.0, 1.0),
              n_trees=3, depth=2)
    whole = dpjax.sweep(X, y, **kw)
    monkeypatch.setattr(_planning, "affordable_models", lambda prepared: 2)
    parts = dpjax.sweep(X, y, **kw)
    chex.assert_trees_all_equal(whole.params, parts.params)
    assert whole.ledgers == parts.ledgers


def test_models_are_grouped_by_plan_seeds_outside_and_rows_padded_by_their_first_model():
    plans = [["a", "b", "a"],         # seed 0
             ["b", "b", "b"],         # seed 1
             ["a", "a", "a"]]         # seed 2
    a, b = _planning.groups(plans)
    assert (a.plan, a.seeds, a.points) == ("a", (0, 2), ((0, 2, 0), (0, 1, 2)))
    assert a.valid == ((True, True, False), (True, True, True))
    assert (b.plan, b.seeds, b.points) == ("b", (0, 1), ((1, 1, 1), (0, 1, 2)))
    assert b.valid == ((True, False, False), (True, True, True))


def test_a_settled_plan_compiles_its_own_shape_alone():
    """The rounds of a settled plan hold one shape's work and one ``lax.cond`` (a round past
    the schedule is skipped); the pure fit's dynamic plan holds two ``lax.cond`` over the
    shapes besides (oblivious or not, then random or cyclic; ``docs/design.md``, "Plan, then
    step")."""
    X, y = data()
    prepared = _preparation.prepare(
        X, y, method="boosted", epsilon=1.0, bounds=(0.0, 1.0), classes=None, n_bins=None,
        missing="error", on_out_of_bounds="clip", neighbouring="add_remove", params={},
        pad=True)
    schedule_fn, _ = prepared.schedule_fn(True)
    args = (jax.random.key(0), prepared.y, jnp.float32(1.0), prepared.traced_values(),
            prepared.size_value())
    released, _ = jax.jit(schedule_fn)(*args)
    plan = prepared.config.plan(jax.device_get(released), prepared.planning_context(True),
                                True)
    assert plan.shape in ("cyclic", "random") and plan.noise == "laplace"

    def conds(fn, *fn_args):
        return str(jax.make_jaxpr(fn)(*fn_args)).count(" cond[")

    grow_fn, _ = prepared.grow_fn(True, plan)
    fit_fn, _ = prepared.fit_fn(True)
    key, y_codes, epsilon, traced, size = args
    settled = conds(grow_fn, key, prepared.codes, y_codes, epsilon, traced, size, None,
                    released)
    dynamic = conds(fit_fn, key, prepared.codes, y_codes, epsilon, traced, size, None)
    assert settled == 1 and dynamic == 3


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
