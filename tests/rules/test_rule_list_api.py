"""Rule lists through the public API: sweeps, the scikit-learn estimator, summaries."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpjax

RNG = np.random.default_rng(11)
X = pd.DataFrame(RNG.integers(0, 2, size=(600, 4)).astype(float), columns=list("abcd"))
Y = ((X.a == 1) & (X.b == 0)).astype(int).to_numpy()
Y = np.where(RNG.uniform(size=600) < 0.05, 1 - Y, Y)
BOUNDS = {c: (0.0, 1.0) for c in X.columns}


@pytest.mark.slow
def test_sweep_over_epsilon_is_one_program_and_within_each_budget():
    sweep = dpjax.sweep(X, Y, method="rule_list", epsilon=[0.5, 2.0, 8.0], seeds=[0, 1],
                        bounds=BOUNDS, n_bins=2, max_rules=2)
    accuracy = sweep.score(X, Y)
    assert accuracy.shape == (3, 2)
    for ledger, point in zip(sweep.ledgers, sweep.grid, strict=True):
        assert ledger.epsilon <= point["epsilon"]
    single = dpjax.fit(X, Y, method="rule_list", epsilon=8.0, key=0, bounds=BOUNDS, n_bins=2,
                       max_rules=2)
    assert single.score(X, Y) >= 0.9          # the rule "a and not b" is found at ε = 8


@pytest.mark.slow
def test_sklearn_estimator_clones_fits_and_describes():
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score

    from dpjax.sklearn import DPRuleListClassifier

    clf = DPRuleListClassifier(epsilon=8.0, max_rules=2, bounds=BOUNDS, n_bins=2,
                               random_state=0)
    assert clone(clf).get_params() == clf.get_params()
    clf.fit(X, Y)
    assert clf.score(X, Y) >= 0.9
    assert clf.predict_proba(X).shape == (600, 2)
    text = clf.describe()
    assert text.splitlines()[1].startswith("if ") and "a" in text and "not b" in text
    assert clf.privacy_.epsilon <= 8.0
    scores = cross_val_score(clf, X, Y, cv=3)
    assert scores.shape == (3,)


@pytest.mark.slow
def test_summary_prints_the_list_and_the_ledger():
    model = dpjax.fit(X, Y, method="rule_list", epsilon=8.0, key=0, bounds=BOUNDS, n_bins=2)
    summary = model.summary()
    assert "rule list" in summary and "else" in summary and "Privacy ledger" in summary
    assert "permute-and-flip" in summary and "monotone" in summary


def test_numeric_and_categorical_literals_read_as_thresholds_and_categories():
    frame = pd.DataFrame({"age": RNG.uniform(18, 80, 400),
                          "colour": RNG.choice(["red", "green", "blue"], 400)})
    label = (frame.age > 50).astype(int).to_numpy()
    model = dpjax.fit(frame, label, method="rule_list", epsilon=None, n_bins=6,
                      bounds={"age": (18.0, 80.0), "colour": ["red", "green", "blue"]})
    text = model.summary()
    assert "age >= " in text or "age < " in text
    assert model.score(frame, label) >= 0.95


def test_multiclass_is_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="binary"):
        dpjax.fit(X, np.arange(600) % 3, method="rule_list", epsilon=1.0, bounds=BOUNDS,
                  n_bins=2, classes=[0, 1, 2])
