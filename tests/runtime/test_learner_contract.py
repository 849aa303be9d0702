"""The learner contract (``dpjax/learner.py``, ``docs/design.md`` "Learners"): configs
are validated, hashable compile-cache keys; every private learner and mode stays within its
budget and is a pure function of its key; a sweep compiles once per shape; and a new learner is
one config class, one fit function and one registration line (the toy learner below)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax.learner import positive_float, traced
from dpjax.learners import (
    LEARNERS,
    FitContext,
    Learner,
    MalphaBoosted,
    RandomTrees,
    RFLaplace,
    get_learner,
    register,
    unregister,
)
from dpjax.mechanisms import laplace_mechanism
from tests.conftest import small

pytestmark = pytest.mark.slow

RNG = np.random.default_rng(7)
X = RNG.normal(size=(120, 3))
Y = (X[:, 0] + 0.3 * RNG.normal(size=120) > 0).astype(int)
BOUNDS = ([-4.0] * 3, [4.0] * 3)

# --- a toy learner: the whole of what a new learner needs -------------------------------


@chex.assert_max_traces(n=2)
def _noisy_prior(key: jax.Array, y: jax.Array, epsilon: jax.Array | None,
                 context: FitContext, smoothing: jax.Array) -> tuple[jax.Array, dict]:
    """Class distribution from the (noisy) class counts, add-``smoothing`` estimate. Traced at
    most twice (one ``dpjax.fit`` program, one ``dpjax.sweep`` program): a sweep over
    ``epsilon`` and ``smoothing`` of the same shape must reuse its compiled program."""
    counts = jnp.zeros(context.n_classes, jnp.int32).at[y].add(1)
    costs = {}
    if epsilon is not None:
        counts, costs["class counts"] = laplace_mechanism(key, counts, context.sensitivity,
                                                          epsilon, integer=True)
    clamped = jnp.maximum(counts.astype(jnp.float32), 0.0) + smoothing
    return clamped / clamped.sum(), costs


@dataclasses.dataclass(frozen=True)
class NoisyPrior(Learner):
    """Predicts the noisy majority class for every row."""

    name: ClassVar[str] = "toy_noisy_prior"
    smoothing: float = traced(1.0, positive_float)

    def fit(self, key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array | None,
            context: FitContext, **traced: jax.Array) -> tuple[jax.Array, Any]:
        return _noisy_prior(key, y, epsilon, context, **traced)

    def proba(self, params: jax.Array, codes: jax.Array) -> jax.Array:
        return jnp.broadcast_to(params, (codes.shape[0], params.shape[0]))


@pytest.fixture
def toy_learner():
    register(params=(), estimator="DPNoisyPriorClassifier")(NoisyPrior)   # the registration
    yield NoisyPrior
    unregister(NoisyPrior.name)


def test_toy_learner_fits_sweeps_and_predicts_through_the_api(toy_learner):
    model = dpjax.fit(X, Y, method="toy_noisy_prior", epsilon=1.0, bounds=BOUNDS, key=0)
    assert model.privacy.private and model.privacy.epsilon <= 1.0
    assert model.predict_proba(X).shape == (120, 2)
    sweep = dpjax.sweep(X, Y, method="toy_noisy_prior", epsilon=[0.5, 1.0],
                        smoothing=[1.0, 2.0], seeds=2, bounds=BOUNDS)
    assert sweep.score(X, Y).shape == (4, 2)
    assert [ledger.epsilon <= g["epsilon"] for ledger, g in zip(sweep.ledgers, sweep.grid,
                                                                 strict=True)] == [True] * 4
    # same shapes, other traced values: the compiled program is reused (no second trace;
    # _noisy_prior would raise on one)
    again = dpjax.sweep(X, Y, method="toy_noisy_prior", epsilon=[2.0, 3.0],
                        smoothing=[0.5, 4.0], seeds=2, bounds=BOUNDS)
    assert again.timings.compile_s == 0.0
    with pytest.raises(ValueError, match="smoothing must be a positive finite number"):
        dpjax.fit(X, Y, method="toy_noisy_prior", epsilon=1.0, bounds=BOUNDS, smoothing=-1.0)


# --- configs -----------------------------------------------------------------------------


def test_configs_are_validated_once_and_hashable():
    config = MalphaBoosted(n_trees=3, alpha=0.5)
    assert get_learner("malpha", {"n_trees": 3, "alpha": 0.5}) == config
    assert hash(config) == hash(MalphaBoosted(n_trees=3, alpha="oc"))   # traced: same program
    assert config != MalphaBoosted(n_trees=4)                           # static: another program
    assert config.traced_names() == ("alpha", "beta_tree", "min_signal", "shrinkage")
    assert RandomTrees.traced_names() == ("min_signal", "shrinkage", "depth_signal")
    with pytest.raises(ValueError, match="n_trees must be an integer >= 1"):
        MalphaBoosted(n_trees=0)
    with pytest.raises(ValueError, match="does not go with"):
        MalphaBoosted(leaf_mechanism="counts", beta_mode="fold")
    with pytest.raises(ValueError, match="has no parameter"):
        get_learner("random_trees", {"alpha": 0.5})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.n_trees = 5  # type: ignore[misc]


def test_register_guards_the_cache_key_contract_and_names():
    with pytest.raises(ValueError, match="already registered"):
        register(params=(), estimator="DPImpostorClassifier")(dataclasses.make_dataclass(
            "Impostor", [], bases=(RandomTrees,), frozen=True,
            namespace={"name": "random_trees"}))
    leaky = dataclasses.make_dataclass(
        "Leaky", [("n", int, dataclasses.field(default=1, compare=False))], bases=(Learner,),
        frozen=True, namespace={"name": "toy_leaky"})
    with pytest.raises(TypeError, match="left out of =="):
        register(params=(), estimator="DPLeakyClassifier")(leaky)
    with pytest.raises(ValueError, match="not a registered learner"):
        dpjax.fit(X, Y, method=NoisyPrior(), epsilon=1.0, bounds=BOUNDS)


def test_a_config_is_accepted_as_the_method():
    config = RFLaplace(n_trees=3, depth=2)
    model = dpjax.fit(X, Y, method=config, epsilon=1.0, bounds=BOUNDS, key=0)
    assert model.config == config and model.method == "rf_laplace"
    same = dpjax.fit(X, Y, method="rf_laplace", epsilon=1.0, bounds=BOUNDS, key=0, n_trees=3,
                     depth=2)
    chex.assert_trees_all_equal(model.params, same.params)
    assert same.timings.compile_s == 0.0       # the config is the compile-cache key


# --- every private learner and mode: within budget, a pure function of its key -----------

MODES = [
    ("boosted", {}),
    ("boosted", {"shape": "random"}),
    ("boosted", {"prior_share": 0.5, "learning_rate": 0.3}),
    ("boosted", {"noise": "gaussian", "delta": 1e-6, "min_signal": 1.0}),
    ("random_trees", {}),
    ("random_trees", {"voting": "majority", "leaf_estimate": "paper"}),
    ("random_trees", {"threshold_range": "cell", "budget": "paper"}),
    ("rf_laplace", {}),
    ("rf_exponential", {}),
    ("malpha", {}),
    ("malpha", {"alpha": 1.0}),
    ("malpha", {"leaf_mechanism": "value", "beta_mode": "laplace", "alpha": 0.5}),
    ("malpha", {"leaf_mechanism": "counts", "beta_mode": "post"}),
    ("malpha", {"leaf_mechanism": "counts", "beta_mode": "laplace"}),
    ("malpha", {"leaf_mechanism": "counts", "beta_mode": "post",
                 "leaf_composition": "parallel"}),
    # three rounds on 120 rows (one by default; by default the majority fallback)
    ("smooth_boost", {"min_signal": 2.0, "fallback_signal": 0.0}),
    ("smooth_boost", {"kappa": 0.2, "learning_rate": 1.0, "size_share": 0.2,
                      "min_signal": 1.0, "fallback_signal": 0.0}),
    ("smooth_boost", {"weak_learner": "tree", "tree_splits": 2, "min_signal": 0.5}),
    ("smooth_boost", {"weak_learner": "halfspace", "delta": 1e-6, "min_signal": 1.0}),
    ("smooth_boost", {"accounting": "advanced", "delta": 1e-6, "min_signal": 1.0,
                      "fallback_signal": 0.0}),
    ("rule_list", {}),
    ("rule_list", {"selection": "smooth_laplace", "delta": 1e-6, "max_card": 1}),
    ("rule_list", {"selection": "smooth_cauchy", "delta": 1e-6, "confidence": 0.9999999}),
    ("rule_list", {"selection": "global_laplace"}),
    ("rule_list", {"selection": "global_gaussian", "delta": 1e-6}),
    ("rule_list", {"selection": "exponential", "max_card": 1}),
]


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
@pytest.mark.parametrize(("method", "params"), MODES,
                         ids=[f"{m}-{'-'.join(map(str, p.values())) or 'defaults'}"
                              for m, p in MODES])
def test_every_private_mode_stays_within_budget_and_is_keyed(method, params, neighbouring):
    assert {m for m, _ in MODES} == set(LEARNERS)
    fit = dict(method=method, epsilon=0.7, bounds=BOUNDS, neighbouring=neighbouring,
               **small(method), **params)
    first = dpjax.fit(X, Y, key=3, **fit)
    second = dpjax.fit(X, Y, key=3, **fit)
    other = dpjax.fit(X, Y, key=4, **fit)
    assert first.privacy.private
    assert 0.0 < first.privacy.epsilon <= 0.7
    chex.assert_trees_all_equal(first.params, second.params)
    assert any(not np.array_equal(a, b) for a, b in zip(
        jax.tree.leaves(first.params), jax.tree.leaves(other.params), strict=True))
