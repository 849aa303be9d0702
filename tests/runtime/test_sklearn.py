"""The scikit-learn estimator and the main job."""

import inspect

import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.data.splits import stratified_split

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import cross_val_score  # noqa: E402

from dpjax.sklearn import (  # noqa: E402
    DPBoostedTreesClassifier,
    DPMalphaBoostedClassifier,
    DPRandomForestExponentialClassifier,
    DPRandomForestLaplaceClassifier,
    DPRandomTreesClassifier,
)


@pytest.fixture(scope="module")
def banknote():
    X, y = dpjax.load_dataset("banknote")
    return X, y, dpjax.data.public_bounds("banknote")


def test_get_set_params_and_clone(banknote):
    _, _, bounds = banknote
    clf = DPRandomTreesClassifier(epsilon=0.5, n_trees=3, depth=4, bounds=bounds, random_state=1)
    params = clf.get_params()
    assert params["epsilon"] == 0.5 and params["n_trees"] == 3 and params["bounds"] is bounds
    clf.set_params(depth=6, voting="majority")
    assert clf.get_params()["depth"] == 6 and clf.voting == "majority"
    twin = clone(clf)
    assert twin.get_params() == clf.get_params()
    assert not hasattr(twin, "model_")


def test_fit_predict_matches_dpjax_fit(banknote):
    X, y, bounds = banknote
    train, test = stratified_split(y, 0.3, 0)
    clf = DPRandomTreesClassifier(epsilon=1.0, bounds=bounds, random_state=3)
    clf.fit(X.iloc[train], y[train])
    model = dpjax.fit(X.iloc[train], y[train], method="random_trees", epsilon=1.0, bounds=bounds,
                      key=3)
    np.testing.assert_array_equal(clf.predict(X.iloc[test]), model.predict(X.iloc[test]))
    np.testing.assert_allclose(clf.predict_proba(X.iloc[test]), model.predict_proba(X.iloc[test]))
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    assert clf.n_features_in_ == 4
    assert clf.privacy_.epsilon <= 1.0
    assert clf.score(X.iloc[test], y[test]) > 0.9


@pytest.mark.slow
def test_cross_val_score_runs(banknote):
    X, y, bounds = banknote
    clf = DPRandomTreesClassifier(epsilon=1.0, bounds=bounds, random_state=0)
    scores = cross_val_score(clf, X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.8)


def test_main_job_prints_table(capsys):
    from dpjax.__main__ import main

    main(["--seeds", "1", "--epsilons", "1,none"])
    out = capsys.readouterr().out
    assert "test accuracy" in out and "compile s" in out and "run s" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("1 ", "none"))]
    assert [r[0] for r in rows] == ["1", "none"]
    assert float(rows[0][1]) > 0.85
    # the spent epsilon: every budget is rounded down, so within [1 - 2e-3, 1]
    assert 1 - 2e-3 <= float(rows[0][4]) <= 1 and rows[1][4] == "inf"
    spent = float(out.split("spent: epsilon = ")[1].split(",")[0])
    assert 1 - 2e-3 <= spent <= 1
    assert "requested epsilon = 1)" in out
    # the ledger's columns line up: every row's "eps total" ends where the header's does
    # (the releases' rows: up to the plan and the totals below them)
    table = out[out.index("Privacy ledger"):].splitlines()[1:]
    ends = [k for k, line in enumerate(table) if line.strip().startswith(("plan:", "spent"))]
    rows = table[:ends[0]]
    assert rows and len({len(line) for line in rows}) == 1, rows


@pytest.mark.parametrize(("argv", "message"), [
    (["--epsilons", "abc"], "--epsilons takes numbers"),
    (["--epsilons", "0"], "--epsilons must be positive"),
    (["--seeds", "0"], "--seeds must be at least 1"),
    (["--dataset", "no_such"], "unknown dataset"),
])
def test_main_job_usage_errors_are_one_line(capsys, argv, message):
    from dpjax.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("dpjax: error: ") and message in err and "Traceback" not in err


# --------------------------------------------------------------------------------------------
# Mα-boost and the RF-L / RF-E baselines
# --------------------------------------------------------------------------------------------

# Settings under which each estimator learns the planted problem below (the boosted value-leaf
# default needs a far larger budget; the counts mechanism has the better signal-to-noise ratio).
NEW_ESTIMATORS = {
    DPBoostedTreesClassifier: dict(epsilon=1.0),
    DPMalphaBoostedClassifier: dict(epsilon=100.0, n_trees=3, depth=2, leaf_mechanism="counts",
                                   beta_mode="post"),
    DPRandomForestLaplaceClassifier: dict(epsilon=20.0),
    DPRandomForestExponentialClassifier: dict(epsilon=20.0),
}
NEW_IDS = [cls.__name__ for cls in NEW_ESTIMATORS]


@pytest.fixture(scope="module")
def planted():
    """600 rows, three features in [0, 1] with public bounds; y = 1 iff a >= 0.5. The first
    400 rows (the size of a 3-fold training set, so one compilation serves every fit) train,
    the last 200 test."""
    rng = np.random.default_rng(7)
    X = pd.DataFrame(rng.uniform(0.0, 1.0, (600, 3)), columns=["a", "b", "c"])
    y = (X["a"] >= 0.5).astype(np.int64).to_numpy()
    return X, y, {name: (0.0, 1.0) for name in X.columns}


def make_estimator(cls, bounds, **params):
    return cls(bounds=bounds, random_state=0, **{**NEW_ESTIMATORS[cls], **params})


@pytest.mark.parametrize("cls", list(NEW_ESTIMATORS), ids=NEW_IDS)
def test_new_estimators_params_and_clone(cls, planted):
    _, _, bounds = planted
    clf = make_estimator(cls, bounds)
    init_args = set(inspect.signature(cls.__init__).parameters) - {"self"}
    params = clf.get_params()
    assert set(params) == init_args
    assert params["random_state"] == 0 and params["bounds"] is bounds
    for name, value in NEW_ESTIMATORS[cls].items():
        assert params[name] == value
    twin = clone(clf)
    assert twin is not clf and type(twin) is cls
    assert twin.get_params() == params
    assert not hasattr(twin, "model_")
    clf.set_params(n_trees=3, depth=2)
    assert clf.get_params()["n_trees"] == 3 and clf.depth == 2
    assert clone(clf).get_params() == clf.get_params()


@pytest.mark.slow
@pytest.mark.parametrize("cls", list(NEW_ESTIMATORS), ids=NEW_IDS)
def test_new_estimators_fit_predict_shapes_and_privacy(cls, planted):
    X, y, bounds = planted
    epsilon = NEW_ESTIMATORS[cls]["epsilon"]
    clf = make_estimator(cls, bounds)
    assert clf.fit(X.iloc[:400], y[:400]) is clf
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    assert clf.n_features_in_ == 3
    pred = clf.predict(X.iloc[400:])
    proba = clf.predict_proba(X.iloc[400:])
    assert pred.shape == (200,) and proba.shape == (200, 2)
    assert set(np.unique(pred)) <= {0, 1}
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)
    assert np.all((proba >= 0) & (proba <= 1))
    assert clf.privacy_.private
    # every budget is rounded down: the ledger spends within [ε (1 − 2e-3), ε]
    assert epsilon * (1 - 2e-3) <= clf.privacy_.epsilon <= epsilon
    assert clf.model_.method == cls._CONFIG.name
    # fixed random_state: refitting gives the same model
    np.testing.assert_array_equal(clone(clf).fit(X.iloc[:400], y[:400]).predict(X.iloc[400:]),
                                  pred)
    if cls not in (DPBoostedTreesClassifier, DPMalphaBoostedClassifier):
        # majority vote of 21 trees: scores are vote fractions, never tied, argmax = predict
        np.testing.assert_allclose(proba * 21, np.round(proba * 21), atol=1e-4)
        np.testing.assert_array_equal(pred, clf.classes_[proba.argmax(-1)])
        assert clf.model_.hyperparams["n_trees"] == 21 and clf.model_.params.leaf.shape == (
            21, 16, 2)


@pytest.mark.slow
@pytest.mark.parametrize(("cls", "lowest"), [
    (DPBoostedTreesClassifier, 0.9),
    (DPMalphaBoostedClassifier, 0.9),
    (DPRandomForestLaplaceClassifier, 0.75),
    (DPRandomForestExponentialClassifier, 0.75),
], ids=NEW_IDS)
def test_new_estimators_cross_val_score(cls, lowest, planted):
    X, y, bounds = planted
    scores = cross_val_score(make_estimator(cls, bounds), X, y, cv=3)
    assert scores.shape == (3,)
    assert np.all(scores > lowest) and np.all(scores <= 1.0), scores


@pytest.mark.slow
def test_boosted_decision_function_and_alpha(planted):
    X, y, bounds = planted
    clf = make_estimator(DPMalphaBoostedClassifier, bounds)
    assert clf.get_params()["alpha"] == "oc"
    decisions = []
    for alpha in ("oc", 0.5):
        clf.set_params(alpha=alpha).fit(X.iloc[:400], y[:400])
        assert clf.get_params()["alpha"] == alpha and clf.model_.hyperparams["alpha"] == alpha
        decision = clf.decision_function(X.iloc[400:])
        assert decision.shape == (200,) and np.all(np.isfinite(decision))
        pred = clf.predict(X.iloc[400:])
        np.testing.assert_array_equal(decision >= 0, pred == clf.classes_[1])
        # P(classes_[1]) is increasing in the score and 1/2 at 0
        proba = clf.predict_proba(X.iloc[400:])[:, 1]
        np.testing.assert_array_equal(proba > 0.5, decision > 0)
        assert 100.0 * (1 - 2e-3) <= clf.privacy_.epsilon <= 100.0
        assert clf.score(X.iloc[400:], y[400:]) > 0.9
        decisions.append(decision)
    assert not np.allclose(decisions[0], decisions[1])  # alpha reaches the fit


@pytest.mark.slow
def test_newton_boosted_decision_function(planted):
    X, y, bounds = planted
    clf = make_estimator(DPBoostedTreesClassifier, bounds).fit(X.iloc[:400], y[:400])
    decision = clf.decision_function(X.iloc[400:])
    np.testing.assert_array_equal(decision > 0, clf.predict(X.iloc[400:]) == clf.classes_[1])
    np.testing.assert_allclose(clf.predict_proba(X.iloc[400:])[:, 1],
                               1 / (1 + np.exp(-decision)), rtol=1e-5)


def test_sparse_input_fits_as_its_dense_twin():
    """A scipy sparse matrix (a one-hot encoder's output) is read as its dense twin: the same
    model under the same key, in dpjax.fit, an estimator and a pipeline."""
    import scipy.sparse
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    dense = (rng.uniform(size=(300, 5)) > 0.5).astype(float)
    y = dense[:, 0].astype(int)
    sparse = scipy.sparse.csr_matrix(dense)
    a = dpjax.fit(sparse, y, method="boosted", epsilon=1.0, bounds=(0, 1), key=0)
    b = dpjax.fit(dense, y, method="boosted", epsilon=1.0, bounds=(0, 1), key=0)
    np.testing.assert_array_equal(a.predict_proba(sparse), b.predict_proba(dense))
    clf = DPRandomTreesClassifier(epsilon=1.0, bounds=(0, 1), random_state=0).fit(sparse, y)
    assert clf.score(sparse, y) == clf.score(dense, y)
    frame = pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], 300)})
    labels = (frame.colour == "red").astype(int)
    pipe = make_pipeline(OneHotEncoder(categories=[["red", "green", "blue"]]),
                         DPRandomTreesClassifier(epsilon=1.0, bounds=(0, 1), random_state=0))
    assert pipe.fit(frame, labels).score(frame, labels) > 0.9
