"""The scikit-learn estimator and the main job."""

import numpy as np
import pytest

import dpjax
from dpjax.data.splits import stratified_split

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import cross_val_score  # noqa: E402

from dpjax.sklearn import DPRandomTreesClassifier  # noqa: E402


@pytest.fixture(scope="module")
def banknote():
    X, y = dpjax.load_dataset("banknote")
    return X, y, dpjax.data.public_bounds(X)


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
    model = dpjax.fit(X.iloc[train], y[train], epsilon=1.0, bounds=bounds, key=3)
    np.testing.assert_array_equal(clf.predict(X.iloc[test]), model.predict(X.iloc[test]))
    np.testing.assert_allclose(clf.predict_proba(X.iloc[test]), model.predict_proba(X.iloc[test]))
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    assert clf.n_features_in_ == 4
    assert clf.privacy_.epsilon <= 1.0
    assert clf.score(X.iloc[test], y[test]) > 0.9


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
    assert rows[0][4] == "1" and rows[1][4] == "inf"
    assert "spent: epsilon = 1" in out
