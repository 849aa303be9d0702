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

ESTIMATORS = [
    DPRandomTreesClassifier(n_trees=3, depth=2, bounds=BOUNDS, random_state=0),
    DPRandomForestLaplaceClassifier(n_trees=3, depth=2, bounds=BOUNDS, random_state=0),
    DPRandomForestExponentialClassifier(n_trees=3, depth=2, bounds=BOUNDS, random_state=0),
    DPBoostedTreesClassifier(n_trees=3, depth=2, bounds=BOUNDS, random_state=0),
    DPMalphaBoostedClassifier(n_trees=2, depth=2, bounds=BOUNDS, random_state=0),
    DPSmoothBoostClassifier(n_rounds=3, bounds=BOUNDS, random_state=0),
    DPRuleListClassifier(max_rules=3, bounds=BOUNDS, random_state=0),
]

if not SKLEARN_1_6:
    pytest.skip("the conformance target is scikit-learn >= 1.6 (what the test extra installs; "
                "the peers extra pins < 1.6 for diffprivlib)", allow_module_level=True)


REGRESSORS = [DPBoostedTreesRegressor(n_trees=3, depth=2, bounds=BOUNDS, random_state=0)]


@parametrize_with_checks(ESTIMATORS + REGRESSORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        # the checks' labels (targets' ranges) are not declared: read off y, warned and
        # recorded as non-private
        warnings.simplefilter("ignore", DataDependentWarning)
        check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_undeclared_labels_outside_the_default_are_read_off_y_and_recorded(estimator):
    X = np.random.default_rng(0).uniform(-1, 1, (60, 3))
    y = np.where(X[:, 0] > 0, "yes", "no")
    with pytest.warns(DataDependentWarning, match="classes were read off"):
        fitted = sklearn.base.clone(estimator).fit(X, y)
    assert list(fitted.classes_) == ["no", "yes"]
    assert not fitted.privacy_.private
    assert any("class list" in entry.what for entry in fitted.privacy_.entries)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_sample_weight_in_the_unit_interval_where_the_counts_take_it(estimator):
    X = np.random.default_rng(0).uniform(-1, 1, (40, 2))
    y = (X[:, 0] > 0).astype(int)
    fitted = sklearn.base.clone(estimator)
    if not estimator._CONFIG.takes_weights:
        with pytest.raises(TypeError, match="does not take sample_weight"):
            fitted.fit(X, y, sample_weight=np.ones(40))
        return
    weighted = fitted.fit(X, y, sample_weight=np.linspace(0, 1, 40))
    assert weighted.privacy_.epsilon <= 1.0
    with pytest.warns(UserWarning, match=r"clipped into it"):
        clipped = sklearn.base.clone(estimator).fit(X, y, sample_weight=np.full(40, 2.0))
    assert clipped.privacy_.epsilon <= 1.0
    with pytest.raises(ValueError, match="finite"):
        sklearn.base.clone(estimator).fit(X, y, sample_weight=np.full(40, np.nan))
