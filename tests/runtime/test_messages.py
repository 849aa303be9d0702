"""What dpjax says to its user (issue 51): messages that print nothing about the records (the
same text for one bad record as for two), warnings that point at the user's line, weak or
reproducible settings said at once, and inputs that predict interchangeably."""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.sklearn import DPBoostedTreesClassifier

RNG = np.random.default_rng(0)
X = RNG.uniform(0, 1, (60, 3))
Y = (X[:, 0] > 0.5).astype(int)
SMALL = {"method": "boosted", "n_trees": 2, "depth": 2, "bounds": (0, 1), "key": 0}


def said(call) -> tuple[str, list[str]]:
    """The error (type and text) and the warnings' texts of ``call()``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
            error = "no error"
        except Exception as raised:  # noqa: BLE001 - the message is the subject
            error = f"{type(raised).__name__}: {raised}"
    return error, sorted({str(w.message) for w in caught})


def labels_outside(k):
    y = Y.copy()
    y[:k] = 7
    return lambda: dpjax.fit(X, y, classes=(0, 1), **SMALL)


def labels_outside_estimator(k):
    y = Y.copy()
    y[:k] = 7
    return lambda: DPBoostedTreesClassifier(n_trees=2, depth=2, bounds=(0, 1), classes=(0, 1),
                                            random_state=0).fit(X, y)


def missing_targets(k):
    y = X[:, 1].copy()
    y[:k] = np.nan
    return lambda: dpjax.fit(X, y, task="regression", y_bounds=(0, 1), **SMALL)


def nan_features(k):
    Z = X.copy()
    Z[:k, 1] = np.nan
    return lambda: dpjax.fit(Z, Y, **SMALL)


def nan_features_on_device(k):
    Z = X.copy()
    Z[:k, 1] = np.nan
    return lambda: dpjax.fit(jnp.asarray(Z), jnp.asarray(Y), **SMALL)


def infinite_features(k):
    Z = pd.DataFrame(X, columns=["a", "b", "c"])
    Z.iloc[:k, 2] = np.inf
    return lambda: dpjax.fit(Z, Y, **SMALL)


def out_of_bounds(k):
    Z = X.copy()
    Z[:k, 0] = 5.0
    return lambda: dpjax.fit(Z, Y, **SMALL)


@pytest.mark.parametrize("case", [labels_outside, labels_outside_estimator, missing_targets,
                                  nan_features, nan_features_on_device, infinite_features,
                                  out_of_bounds], ids=lambda case: case.__name__)
def test_one_bad_record_or_two_say_the_same(case):
    """Labels outside the classes, missing targets, NaN or infinite features, values out of
    bounds: the error and the warnings are the same text for one bad record and for two, and
    print no count."""
    one, two = said(case(1)), said(case(2))
    assert one == two
    assert one != ("no error", [])
    text = " ".join([one[0], *one[1]])
    assert " 1 " not in text and " 2 " not in text and "60" not in text


def test_warnings_point_at_the_callers_line():
    """A fit's and a prediction's warnings name this file (the user's line), not dpjax's."""
    Z = X.copy()
    Z[0, 0] = 5.0
    with pytest.warns(dpjax.data.OutOfBoundsWarning) as fitted:
        model = dpjax.fit(Z, Y, **SMALL)
    with pytest.warns(dpjax.data.OutOfBoundsWarning) as predicted:
        model.predict(Z)
    assert {w.filename for w in [*fitted, *predicted]} == {__file__}


def test_weak_budgets_and_fixed_keys_are_said():
    with pytest.warns(dpjax.WeakGuaranteeWarning, match="epsilon = 1e\\+12"):
        dpjax.fit(X, Y, epsilon=1e12, **SMALL)
    with pytest.warns(dpjax.WeakGuaranteeWarning, match="delta = 0.5"):
        dpjax.fit(X, Y, epsilon=1.0, delta=0.5, **SMALL)
    with pytest.warns(dpjax.FixedKeyWarning, match="key=None"):
        dpjax.fit(X, Y, epsilon=1.0, **SMALL)
    fresh = {**SMALL, "key": None}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dpjax.fit(X, Y, epsilon=1.0, **fresh)
        dpjax.fit(X, Y, epsilon=None, **SMALL)          # not private: nothing to protect


def test_numpy_and_dataframe_inputs_predict_interchangeably():
    """A model fitted on an array predicts a DataFrame by position (warned, as scikit-learn
    warns); a DataFrame's extra columns, such as the label, are named and left out."""
    on_array = dpjax.fit(X, Y, epsilon=1.0, **SMALL)
    frame = pd.DataFrame(X, columns=["age", "bmi", "dose"])
    with pytest.warns(UserWarning, match="taken by position"):
        by_position = on_array.predict_proba(frame)
    np.testing.assert_array_equal(by_position, on_array.predict_proba(X))
    on_frame = dpjax.fit(frame, Y, epsilon=1.0, **SMALL)
    np.testing.assert_array_equal(on_frame.predict_proba(X), on_frame.predict_proba(frame))
    with pytest.warns(UserWarning, match=r"\['label'\] the model was not fitted on"):
        with_label = on_frame.predict_proba(frame.assign(label=Y))
    np.testing.assert_array_equal(with_label, on_frame.predict_proba(frame))
    with pytest.raises(ValueError, match="lacks the columns"):
        on_frame.predict(frame.drop(columns="bmi"))
    # by position only when no name is the model's: x0 and x2 beside another column are not
    # the array's columns x0, x1, x2 in another order
    with pytest.raises(ValueError, match=r"lacks the columns \['x1'\]"):
        on_array.predict(pd.DataFrame(X, columns=["x0", "x2", "label"]))


def test_estimator_classes_are_sorted_as_scikit_learn_sorts_them():
    y = np.where(Y == 1, "yes", "no")
    clf = DPBoostedTreesClassifier(n_trees=2, depth=2, bounds=(0, 1), classes=("yes", "no"),
                                   random_state=0).fit(X, y)
    assert list(clf.classes_) == ["no", "yes"]
    proba = clf.predict_proba(X)
    np.testing.assert_array_equal(clf.classes_[proba.argmax(1)], clf.predict(X))


def test_a_sweep_is_indexed_like_a_grid_and_a_tuned_ledger_prints_narrow():
    sweep = dpjax.sweep(X, Y, method="boosted", n_trees=2, depth=2, bounds=(0, 1),
                        epsilon=[0.5, 1.0], seeds=[0, 1])
    assert sweep.shape == (2, 2) and len(sweep) == 4 and len(list(sweep)) == 4
    np.testing.assert_array_equal(sweep[1, 0].predict_proba(X),
                                  sweep.model(1, 0).predict_proba(X))
    assert sweep[1, 1].privacy.epsilon <= 1.0
    assert [m.privacy for m in sweep] == [sweep[k].privacy for k in range(len(sweep))]
    np.testing.assert_array_equal(sweep[3].predict_proba(X), sweep[1, 1].predict_proba(X))
    with pytest.raises(TypeError, match=r"sweep\[i, j\]"):
        sweep[0:2]
    with pytest.raises(IndexError):
        sweep[2, 0]
    with pytest.raises(IndexError):
        sweep[4]
    tuned = dpjax.tune(X, Y, method="boosted", n_trees=2, depth=2, bounds=(0, 1), epsilon=1.0,
                       key=0)
    assert max(map(len, str(tuned.privacy).splitlines())) <= 120
