"""The user-facing API: ``dpjax.fit``, ``dpjax.sweep`` and ``Model``."""

from __future__ import annotations

import math
import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from conftest import learner_fit

import dpjax
from dpjax.api import grid_keys
from dpjax.data import DataDependentWarning, OutOfBoundsWarning
from dpjax.data.splits import stratified_split

SMALL = dict(n_trees=3, depth=3)
# every budget inside a fit is rounded down (float32) and each release reports the ε its exact
# noise buys: a ledger spends within [ε (1 − SLACK), ε]
SLACK = 2e-3


def assert_spent(spent: float, epsilon: float) -> None:
    assert spent <= epsilon
    assert spent >= epsilon * (1 - SLACK)


# --------------------------------------------------------------------------------------------
# Banknote, the paper's first dataset
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def banknote():
    X, y = dpjax.load_dataset("banknote")
    return X, y, dpjax.data.public_bounds("banknote")


@pytest.fixture(scope="module")
def banknote_models(banknote):
    """Default hyper-parameters, epsilon = 1, 70/30 stratified splits for seeds 0..4."""
    X, y, bounds = banknote
    models, accuracy = [], []
    for seed in range(5):
        train, test = stratified_split(y, 0.3, seed)
        model = dpjax.fit(X.iloc[train], y[train], epsilon=1.0, bounds=bounds, key=seed)
        models.append((model, train, test))
        accuracy.append(model.score(X.iloc[test], y[test]))
    return models, np.array(accuracy)


def test_banknote_accuracy_at_epsilon_one(banknote_models):
    models, accuracy = banknote_models
    assert accuracy.mean() >= 0.92, accuracy
    for model, _, _ in models:
        assert model.privacy.private
        assert model.privacy.epsilon <= 1.0
        assert model.privacy.requested_epsilon == 1.0


def test_same_key_same_params_different_key_different(banknote, banknote_models):
    X, y, bounds = banknote
    models, _ = banknote_models
    model, train, _ = models[0]
    again = dpjax.fit(X.iloc[train], y[train], epsilon=1.0, bounds=bounds, key=0)
    chex.assert_trees_all_equal(model.params, again.params)
    other = dpjax.fit(X.iloc[train], y[train], epsilon=1.0, bounds=bounds, key=1)
    assert not np.array_equal(other.params.feature, model.params.feature)
    assert not np.array_equal(other.params.leaf, model.params.leaf)
    # the fit was compiled once for these shapes and reused
    assert again.timings.compile_s == 0.0


def test_int_seed_and_typed_key_are_the_same(banknote, banknote_models):
    X, y, bounds = banknote
    models, _ = banknote_models
    model, train, _ = models[2]
    for key in (jax.random.key(2), np.int64(2), jax.random.PRNGKey(2)):
        same = dpjax.fit(X.iloc[train], y[train], epsilon=1.0, bounds=bounds, key=key)
        chex.assert_trees_all_equal(model.params, same.params)
    for bad in (1.5, True, "seed"):
        with pytest.raises((ValueError, TypeError)):
            dpjax.as_key(bad)


def test_as_key_keeps_all_64_bits():
    """An int seed is the whole 64-bit threefry key: small seeds are unchanged, seeds that
    differ only above bit 31 give different keys, and ints outside [0, 2**64) are refused."""
    data = jax.random.key_data
    np.testing.assert_array_equal(data(dpjax.as_key(5)), data(jax.random.key(5)))
    np.testing.assert_array_equal(data(dpjax.as_key(2**40 + 5)), [2**8, 5])
    np.testing.assert_array_equal(data(dpjax.as_key(2**64 - 1)), [2**32 - 1, 2**32 - 1])
    assert not np.array_equal(data(dpjax.as_key(2**32 + 5)), data(dpjax.as_key(5)))
    for bad in (-1, 2**64, -(2**70)):
        with pytest.raises(ValueError, match="2\\*\\*64"):
            dpjax.as_key(bad)
    # None draws fresh OS entropy every time
    assert not np.array_equal(data(dpjax.as_key(None)), data(dpjax.as_key(None)))


# --------------------------------------------------------------------------------------------
# The ledger never exceeds the budget
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
@pytest.mark.parametrize("n_trees", [1, 3, 21])
@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0, 10.0])
def test_ledger_within_budget(toy_xy, epsilon, n_trees, neighbouring):
    X, y, bounds = toy_xy
    model = dpjax.fit(X, y, epsilon=epsilon, bounds=bounds, key=0, n_trees=n_trees, depth=2,
                      neighbouring=neighbouring)
    ledger = model.privacy
    assert ledger.private
    assert ledger.requested_epsilon == epsilon
    assert ledger.neighbouring == neighbouring
    assert_spent(ledger.epsilon, epsilon)
    assert ledger.delta == 0.0
    (entry,) = ledger.entries
    # one equal share per tree, the whole budget split uniformly (spec §3.2), rounded down
    assert entry.what == "leaf class counts"
    assert entry.count == n_trees
    assert_spent(entry.epsilon, epsilon / n_trees)
    assert entry.epsilon * n_trees <= epsilon
    sensitivity = {"add_remove": 1, "replace_one": 2}[neighbouring]
    assert entry.mechanism == f"discrete Laplace (L1 sens. {sensitivity})"
    chex.assert_shape([model.params.feature, model.params.threshold], (n_trees, 3))
    chex.assert_shape(model.params.leaf, (n_trees, 4, 2))


def test_epsilon_none_is_non_private(toy_xy):
    X, y, bounds = toy_xy
    model = dpjax.fit(X, y, epsilon=None, bounds=bounds, key=0, **SMALL)
    assert model.privacy.epsilon == math.inf
    assert not model.privacy.private
    assert "NOT DIFFERENTIALLY PRIVATE" in str(model.privacy)
    assert "non-private" in repr(model)
    # a non-private fit may take its bounds from the data without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        model = dpjax.fit(X, y, epsilon=None, key=0, **SMALL)
    assert not model.privacy.private


def test_bounds_from_data_is_not_private(toy_xy):
    X, y, _ = toy_xy
    with pytest.warns(DataDependentWarning):
        model = dpjax.fit(X, y, epsilon=1.0, bounds="data", key=0, **SMALL)
    assert model.privacy.epsilon == math.inf
    assert not model.privacy.private
    assert any("from the data" in r for r in model.privacy.not_private_reasons)
    assert model.spec.from_data == ("a", "b")


def test_classes_read_off_labels_are_not_private(toy_xy):
    X, y, bounds = toy_xy
    labels = np.where(y == 1, "yes", "no")
    with pytest.warns(DataDependentWarning, match="classes"):
        model = dpjax.fit(X, labels, epsilon=1.0, bounds=bounds, key=0, **SMALL)
    assert not model.privacy.private
    assert model.privacy.epsilon == math.inf
    declared = dpjax.fit(X, labels, epsilon=1.0, bounds=bounds, key=0, classes=["no", "yes"],
                         **SMALL)
    assert declared.privacy.private
    assert declared.privacy.epsilon <= 1.0
    # numeric labels outside the default classes (0, 1) must be declared under DP
    signs = np.where(y == 1, 1, -1)
    with pytest.raises(ValueError, match="outside the default classes"):
        dpjax.fit(X, signs, epsilon=1.0, bounds=bounds, key=0, **SMALL)
    signed = dpjax.fit(X, signs, epsilon=1.0, bounds=bounds, key=0, classes=[-1, 1], **SMALL)
    assert signed.privacy.private and signed.classes == (-1, 1)
    # without DP they are inferred as before
    assert dpjax.fit(X, signs, epsilon=None, bounds=bounds, key=0, **SMALL).classes == (-1, 1)


def test_single_class_training_set_is_fine(toy_xy):
    """A training set in which a declared (or default) class never occurs is no error (whether
    it is would depend on one record): the class keeps its place, with a zero noisy count."""
    X, y, bounds = toy_xy
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        model = dpjax.fit(X, np.ones_like(y), epsilon=1.0, bounds=bounds, key=0, **SMALL)
    assert model.classes == (0, 1)
    assert model.privacy.private
    assert model.predict_proba(X).shape == (len(y), 2)


# --------------------------------------------------------------------------------------------
# Bad inputs
# --------------------------------------------------------------------------------------------


def _bad_inputs(X, y, bounds):
    X_nan = X.copy()
    X_nan.loc[3, "a"] = np.nan
    X_inf = X.copy()
    X_inf.loc[3, "b"] = np.inf
    return [
        ("nan", dict(X=X_nan), r"'a'.*missing \(NaN\)"),
        ("inf", dict(X=X_inf), r"'b'.*infinite"),
        ("1-D X", dict(X=X["a"].to_numpy()), "2-D"),
        ("lengths", dict(y=y[:-1]), "rows but y has"),
        ("labels outside the default", dict(y=np.where(y == 1, 1, -1)),
         "outside the default classes"),
        ("epsilon 0", dict(epsilon=0.0), "epsilon"),
        ("epsilon < 0", dict(epsilon=-1.0), "epsilon"),
        ("epsilon nan", dict(epsilon=float("nan")), "epsilon"),
        ("unknown label", dict(y=np.where(y == 1, "b", "c"), classes=["a", "b"]),
         r"outside the declared classes"),
        ("method", dict(method="gradient_boosting"), "unknown method"),
        ("hyper-parameter", dict(n_tree=3), r"no parameter.*n_tree"),
        ("depth 0", dict(depth=0), "depth"),
        ("n_trees 0", dict(n_trees=0), "n_trees"),
        ("voting", dict(voting="plurality"), "voting"),
        ("noise", dict(noise="gaussian"), "noise"),
        ("neighbouring", dict(neighbouring="swap"), "neighbouring"),
        ("no bounds", dict(bounds=None), "no public bounds"),
        ("out of bounds", dict(bounds={"a": (0.0, 0.5), "b": (0.0, 1.0)},
                               on_out_of_bounds="error"), "outside its declared bounds"),
    ]


@pytest.mark.parametrize("case", range(18))
def test_bad_inputs_raise_value_error(toy_xy, case):
    X, y, bounds = toy_xy
    cases = _bad_inputs(X, y, bounds)
    assert len(cases) == 18
    name, change, message = cases[case]
    kwargs = dict(X=X, y=y, epsilon=1.0, bounds=bounds, key=0, **SMALL) | change
    with pytest.raises(ValueError, match=message):
        dpjax.fit(kwargs.pop("X"), kwargs.pop("y"), **kwargs)


def test_out_of_bounds_values_are_clipped_by_default(toy_xy):
    """Values outside the declared bounds are clipped (with a warning that prints no value)
    by default, at fit and at predict time; ``on_out_of_bounds="error"`` is the opt-in."""
    X, y, _ = toy_xy
    narrow = {"a": (0.0, 0.5), "b": (0.0, 1.0)}
    with pytest.warns(OutOfBoundsWarning, match="'a'") as warned:
        model = dpjax.fit(X, y, epsilon=1.0, bounds=narrow, key=0, **SMALL)
    assert model.privacy.private  # clipping is data-independent post-processing
    message = str(warned[0].message)
    assert "[0, 0.5]" in message
    assert not any(f"{v:.3}" in message for v in X["a"][X["a"] > 0.5])
    clipped = X.assign(a=X["a"].clip(upper=0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfBoundsWarning)  # values inside: no warning
        codes = model.encode(clipped)
    with pytest.warns(OutOfBoundsWarning):
        np.testing.assert_array_equal(model.encode(X), codes)
    strict = dpjax.fit(X.assign(a=X["a"] / 2), y, epsilon=1.0, bounds=narrow, key=0,
                       on_out_of_bounds="error", **SMALL)
    with pytest.raises(ValueError, match="outside its declared bounds"):
        strict.predict(X)


# --------------------------------------------------------------------------------------------
# Prediction
# --------------------------------------------------------------------------------------------


def test_predict_returns_original_labels(toy_xy):
    X, y, bounds = toy_xy
    labels = np.where(y == 1, "b", "a")
    model = dpjax.fit(X, labels, epsilon=None, bounds=bounds, key=0, classes=["a", "b"],
                      **SMALL)
    pred = model.predict(X)
    assert pred.shape == (len(y),)
    assert pred.dtype.kind == "U"
    assert set(np.unique(pred)) <= {"a", "b"}
    # the labels are not swapped: a non-private forest fits this easy problem well
    assert np.mean(pred == labels) > 0.8
    assert model.score(X, labels) == pytest.approx(np.mean(pred == labels))
    assert model.classes == ("a", "b")
    # reversing the declared classes reverses the columns of predict_proba, not the labels
    flipped = dpjax.fit(X, labels, epsilon=None, bounds=bounds, key=0, classes=["b", "a"],
                        **SMALL)
    proba = model.predict_proba(X)
    np.testing.assert_allclose(flipped.predict_proba(X), proba[:, ::-1], rtol=1e-6)
    untied = np.abs(proba[:, 0] - 0.5) > 1e-6  # a tie goes to the first declared class
    assert untied.mean() > 0.5
    np.testing.assert_array_equal(flipped.predict(X)[untied], pred[untied])


def test_predict_proba_rows_sum_to_one(toy_xy):
    X, y, bounds = toy_xy
    for voting in ("majority", "threshold", "probabilistic"):
        model = dpjax.fit(X, y, epsilon=1.0, bounds=bounds, key=0, voting=voting, **SMALL)
        proba = model.predict_proba(X)
        assert proba.shape == (len(y), 2)
        np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
        assert np.all(proba >= 0)
    with pytest.raises(ValueError, match="key"):
        model.predict(X)
    pred = model.predict(X, key=3)
    np.testing.assert_array_equal(pred, model.predict(X, key=3))
    assert set(np.unique(pred)) <= {0, 1}


def test_proba_function_under_jit_and_vmap(toy_xy):
    X, y, bounds = toy_xy
    models = [dpjax.fit(X, y, epsilon=1.0, bounds=bounds, key=k, **SMALL) for k in range(3)]
    stacked = jax.tree.map(lambda *a: jnp.stack(a), *(m.params for m in models))
    chex.assert_shape(stacked.leaf, (3, 3, 8, 2))
    proba = models[0].proba_function()
    codes = models[0].encode(X)
    assert codes.dtype == jnp.uint8
    batched = jax.jit(jax.vmap(proba, in_axes=(0, None)))(stacked, codes)
    chex.assert_shape(batched, (3, len(y), 2))
    for i, model in enumerate(models):
        np.testing.assert_allclose(batched[i], model.predict_proba(X), rtol=1e-6, atol=1e-7)
    single = jax.jit(proba)(models[1].params, codes)
    np.testing.assert_allclose(single, models[1].predict_proba(X), rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------------------------
# Sweeps
# --------------------------------------------------------------------------------------------

SWEEP_EPS = (0.5, 2.0)


@pytest.fixture(scope="module")
def toy_sweep(toy_xy):
    X, y, bounds = toy_xy
    return dpjax.sweep(X, y, epsilon=SWEEP_EPS, seeds=3, bounds=bounds, **SMALL)


def test_sweep_shapes_and_ledgers(toy_xy, toy_sweep):
    X, y, _ = toy_xy
    sweep = toy_sweep
    chex.assert_shape([sweep.params.feature, sweep.params.threshold], (2, 3, 3, 7))
    chex.assert_shape(sweep.params.leaf, (2, 3, 3, 8, 2))
    assert sweep.seeds == (0, 1, 2)
    assert [g["epsilon"] for g in sweep.grid] == list(SWEEP_EPS)
    assert len(sweep.ledgers) == 2
    for ledger, eps in zip(sweep.ledgers, SWEEP_EPS, strict=True):
        assert ledger.private
        assert ledger.requested_epsilon == eps
        assert_spent(ledger.epsilon, eps)
        assert ledger.entries[-1].count == 3
        assert_spent(ledger.entries[-1].epsilon, eps / 3)
    proba = sweep.predict_proba(X)
    assert proba.shape == (2, 3, len(y), 2)
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-5)
    assert sweep.score(X, y).shape == (2, 3)
    assert sweep.model(1, 2).privacy is sweep.ledgers[1]


def test_sweep_model_is_the_learner_fit_with_its_own_key(toy_xy, toy_sweep):
    """sweep.model(i, j) is the learner's fit with point ``i``'s own key and the seed's
    structure key (``dpjax.api.grid_keys``: data-independent splits, shared along the grid):
    equal to float32 rounding, and its ledger is that fit's costs."""
    X, y, _ = toy_xy
    for i, eps in enumerate(SWEEP_EPS):
        for j, seed in enumerate(toy_sweep.seeds):
            swept = toy_sweep.model(i, j)
            structure, points = grid_keys(dpjax.as_key(seed), len(SWEEP_EPS))
            params, costs = learner_fit(swept, X, y, points[i], eps, structure_key=structure)
            np.testing.assert_array_equal(swept.params.feature, params.feature)
            np.testing.assert_array_equal(swept.params.threshold, params.threshold)
            np.testing.assert_allclose(swept.params.leaf, params.leaf, rtol=1e-5, atol=1e-6)
            ledger = dpjax.PrivacyLedger(requested_epsilon=eps).with_costs(costs)
            assert ledger.entries == swept.privacy.entries
    # the structure is shared along the grid, the noise is not
    np.testing.assert_array_equal(toy_sweep.params.feature[0], toy_sweep.params.feature[1])
    assert not np.allclose(toy_sweep.params.leaf[0], toy_sweep.params.leaf[1])


def test_sweep_with_explicit_seed_list(toy_xy, toy_sweep):
    X, y, bounds = toy_xy
    # same grid shape as toy_sweep, so the compiled sweep is reused
    sweep = dpjax.sweep(X, y, epsilon=SWEEP_EPS, seeds=[5, 9, 0], bounds=bounds, **SMALL)
    assert sweep.seeds == (5, 9, 0)
    assert sweep.timings.compile_s == 0.0
    chex.assert_shape(sweep.params.feature, (2, 3, 3, 7))
    structure, points = grid_keys(dpjax.as_key(9), len(SWEEP_EPS))
    params, _ = learner_fit(sweep.model(0, 1), X, y, points[0], SWEEP_EPS[0],
                            structure_key=structure)
    np.testing.assert_array_equal(sweep.model(0, 1).params.feature, params.feature)
    # seed 0 at index 2 is toy_sweep's seed 0 at index 0: the very same models
    chex.assert_trees_all_equal(sweep.model(1, 2).params, toy_sweep.model(1, 0).params)
    with pytest.raises(ValueError, match="epsilon"):
        dpjax.sweep(X, y, epsilon=[1.0, 0.0], seeds=2, bounds=bounds, **SMALL)
    for bad in (0, [], [1.5], True, "1"):
        with pytest.raises(ValueError, match="seeds"):
            dpjax.sweep(X, y, epsilon=SWEEP_EPS, seeds=bad, bounds=bounds, **SMALL)


def test_sweep_default_seed_is_fresh_entropy(toy_xy):
    """``seeds=None`` (the default) fits one seed drawn from OS entropy: two sweeps differ."""
    X, y, bounds = toy_xy
    kwargs = dict(method="rf_laplace", epsilon=[1.0, 10.0], bounds=bounds, n_trees=3, depth=2)
    first, second = dpjax.sweep(X, y, **kwargs), dpjax.sweep(X, y, **kwargs)
    assert first.seeds == second.seeds == (None,)
    chex.assert_shape(first.params.feature, (2, 1, 3, 3))
    assert not np.array_equal(first.params.feature, second.params.feature)


# --------------------------------------------------------------------------------------------
# Mixed column types end to end
# --------------------------------------------------------------------------------------------


def test_mixed_columns_with_missing_values():
    rng = np.random.default_rng(5)
    m = 160
    colour = rng.choice(["red", "green", "blue"], m)
    size = rng.uniform(0, 10, m)
    size[rng.uniform(size=m) < 0.1] = np.nan
    X = pd.DataFrame({"colour": pd.Categorical(colour, categories=["red", "green", "blue"]),
                      "size": size, "flag": rng.uniform(size=m) < 0.5})
    y = (colour == "red").astype(int)
    bounds = {"size": (0, 10), "colour": ["red", "green", "blue"]}
    model = dpjax.fit(X, y, epsilon=2.0, bounds=bounds, missing=["size"], key=1, **SMALL)
    assert model.privacy.private
    # categories + "other"; 10 bins + missing; bool + "other"
    np.testing.assert_array_equal(model.spec.n_codes, [4, 11, 3])
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
    # under DP a category dtype is no declaration: undeclared, its categories are read off the
    # data (warned, not private)
    with pytest.warns(DataDependentWarning, match="colour"):
        undeclared = dpjax.fit(X, y, epsilon=2.0, bounds={"size": (0, 10)}, missing=["size"],
                               key=1, **SMALL)
    assert not undeclared.privacy.private
    np.testing.assert_array_equal(undeclared.spec.n_codes, [4, 11, 3])
    # an unseen category gets the "other" code at predict time
    unseen = X.assign(colour=pd.Categorical(["purple"] * m))
    with pytest.warns(OutOfBoundsWarning, match="colour"):
        np.testing.assert_array_equal(model.encode(unseen)[:, 0], 3)


@pytest.mark.parametrize(("given", "canonical"), [("substitute", "replace_one"),
                                                  ("replace_one", "replace_one"),
                                                  ("add_remove", "add_remove")])
def test_neighbouring_aliases(toy_xy, given, canonical):
    """The Mα spec's name for replace-one ("substitute", §4.1) selects the doubled
    sensitivities; unknown relations are refused."""
    X, y, bounds = toy_xy
    model = dpjax.fit(X, y, method="rf_laplace", epsilon=1.0, key=0, bounds=bounds,
                      neighbouring=given, n_trees=3, depth=2)
    assert model.privacy.neighbouring == canonical
    assert model.privacy.entries[0].mechanism == (
        f"discrete Laplace (L1 sens. {2 if canonical == 'replace_one' else 1})")
    with pytest.raises(ValueError, match="neighbouring"):
        dpjax.fit(X, y, method="rf_laplace", epsilon=1.0, key=0, bounds=bounds,
                  neighbouring="swap")


def test_sweep_reuses_compiled_program_with_new_data(toy_xy):
    """Two sweeps with the same shapes and settings share one compiled program, but each must
    fit its own data (the data are arguments of the cached program, not constants)."""
    X, y, bounds = toy_xy
    kwargs = dict(method="rf_laplace", epsilon=[1.0, 10.0], seeds=2, bounds=bounds,
                  n_trees=3, depth=2)
    first = dpjax.sweep(X, y, **kwargs)
    flipped = dpjax.sweep(X, 1 - y, **kwargs)
    assert flipped.timings.compile_s == 0.0  # the cached program was reused
    structure, points = grid_keys(dpjax.as_key(1), 2)
    fresh, _ = learner_fit(flipped.model(1, 1), X, 1 - y, points[1], 10.0,
                           structure_key=structure)
    chex.assert_trees_all_close(flipped.model(1, 1).params, fresh, atol=1e-5)
    assert not np.allclose(first.params.leaf, flipped.params.leaf)
