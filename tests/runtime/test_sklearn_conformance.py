"""scikit-learn's own estimator checks (``check_estimator``) on every estimator, given bounds.

The checks a DP estimator fails by design are listed with their reasons in one place,
:data:`dpjax.sklearn.EXPECTED_FAILED_CHECKS`; every other check must pass. Small forests and
ensembles keep the compile time of the checks' many dataset shapes down."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.utils.estimator_checks import parametrize_with_checks

import dpjax
from dpjax.data import DataDependentWarning
from dpjax.sklearn import (
    DPBoostedTreesClassifier,
    DPBoostedTreesRegressor,
    DPMalphaBoostedClassifier,
    DPRandomForestExponentialClassifier,
    DPRandomForestLaplaceClassifier,
    DPRandomTreesClassifier,
    DPRuleListClassifier,
    DPSmoothBoostClassifier,
    expected_failed_checks,
)

pytestmark = pytest.mark.slow

SKLEARN_1_6 = tuple(int(p) for p in sklearn.__version__.split(".")[:2]) >= (1, 6)
BOUNDS = (-10.0, 10.0)       # the checks' data lie within, the same for every feature
DATA = {"classes": "data"}
"""The checks' labels have no public list: read off ``y`` (warned, recorded as not private),
as a user of scikit-learn's generic tools declares it."""

ESTIMATORS = [
    DPRandomTreesClassifier(n_trees=3, depth=2, bounds=BOUNDS, random_state=0, **DATA),
    DPRandomForestLaplaceClassifier(n_trees=3, depth=2, bounds=BOUNDS, random_state=0, **DATA),
    DPRandomForestExponentialClassifier(n_trees=3, depth=2, bounds=BOUNDS, random_state=0, **DATA),
    DPBoostedTreesClassifier(n_trees=3, depth=2, bounds=BOUNDS, random_state=0, **DATA),
    DPMalphaBoostedClassifier(n_trees=2, depth=2, bounds=BOUNDS, random_state=0, **DATA),
    DPSmoothBoostClassifier(n_rounds=3, bounds=BOUNDS, random_state=0, **DATA),
    DPRuleListClassifier(max_rules=3, bounds=BOUNDS, random_state=0, **DATA),
]

if not SKLEARN_1_6:
    pytest.skip("the conformance target is scikit-learn >= 1.6 (what the test extra installs; "
                "the peers extra pins < 1.6 for diffprivlib)", allow_module_level=True)


REGRESSORS = [DPBoostedTreesRegressor(n_trees=3, depth=2, bounds=BOUNDS, random_state=0,
                                       y_bounds="data")]


@parametrize_with_checks(ESTIMATORS + REGRESSORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        # the checks' labels (targets' ranges) are not declared: read off y, warned and
        # recorded as non-private
        warnings.simplefilter("ignore", DataDependentWarning)
        check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_labels_outside_the_default_are_refused_or_read_off_y_when_asked(estimator):
    """The estimators' labels follow dpjax.fit's rule: string labels (or numbers outside
    {0, 1}) without declared classes are an error naming the fix, as in dpjax.fit;
    ``classes="data"`` reads them off y, warned and recorded as not private."""
    X = np.random.default_rng(0).uniform(-1, 1, (60, 3))
    y = np.where(X[:, 0] > 0, "yes", "no")
    undeclared = sklearn.base.clone(estimator).set_params(classes=None)
    for labels in (y, np.where(X[:, 0] > 0, 2, -1)):
        with pytest.raises(ValueError, match="classes") as from_estimator:
            undeclared.fit(X, labels)
        with pytest.raises(ValueError, match="classes") as from_fit:
            dpjax.fit(X, labels, method=estimator._CONFIG.name, bounds=BOUNDS, key=0)
        assert str(from_estimator.value) == str(from_fit.value)
    with pytest.warns(DataDependentWarning, match="classes were read off"):
        fitted = sklearn.base.clone(estimator).fit(X, y)
    assert list(fitted.classes_) == ["no", "yes"]
    assert not fitted.privacy_.private
    assert any("class list" in entry.what for entry in fitted.privacy_.entries)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_sample_weight_in_the_unit_interval_where_the_counts_take_it(estimator):
    X = np.random.default_rng(0).uniform(-1, 1, (40, 2))
    y = (X[:, 0] > 0).astype(int)

    def declared():       # labels in {0, 1}: the public default, a private fit
        return sklearn.base.clone(estimator).set_params(classes=None)

    fitted = declared()
    if not estimator._CONFIG.takes_weights:
        with pytest.raises(TypeError, match="does not take sample_weight"):
            fitted.fit(X, y, sample_weight=np.ones(40))
        return
    weighted = fitted.fit(X, y, sample_weight=np.linspace(0, 1, 40))
    assert weighted.privacy_.epsilon <= 1.0
    with pytest.warns(UserWarning, match=r"clipped into it"):
        clipped = declared().fit(X, y, sample_weight=np.full(40, 2.0))
    assert clipped.privacy_.epsilon <= 1.0
    with pytest.raises(ValueError, match="finite"):
        declared().fit(X, y, sample_weight=np.full(40, np.nan))
