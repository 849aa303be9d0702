"""The user-facing API: the ledger never exceeds the budget, what makes a fit not private, and
the neighbouring relations."""

from __future__ import annotations

import math
import warnings

import chex
import numpy as np
import pytest

import dpjax
from dpjax.data import DataDependentWarning
from tests.helpers.api import SMALL, assert_spent

# --------------------------------------------------------------------------------------------
# The ledger never exceeds the budget
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
@pytest.mark.parametrize("n_trees", [1, 3, 21])
@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0, 10.0])
def test_ledger_within_budget(toy_xy, epsilon, n_trees, neighbouring):
    X, y, bounds = toy_xy
    model = dpjax.fit(X, y, method="random_trees", epsilon=epsilon, bounds=bounds, key=0,
                      n_trees=n_trees, depth=2, neighbouring=neighbouring,
                      prior_share=0.0)   # Bojarski et al.'s forest
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
    model = dpjax.fit(X, y, method="random_trees", epsilon=None, bounds=bounds, key=0, **SMALL)
    assert model.privacy.epsilon == math.inf
    assert not model.privacy.private
    assert "NOT DIFFERENTIALLY PRIVATE" in str(model.privacy)
    assert "non-private" in repr(model)
    # a non-private fit may take its bounds from the data without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        model = dpjax.fit(X, y, method="random_trees", epsilon=None, key=0, **SMALL)
    assert not model.privacy.private


def test_bounds_from_data_is_not_private(toy_xy):
    X, y, _ = toy_xy
    with pytest.warns(DataDependentWarning):
        model = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds="data", key=0, **SMALL)
    assert model.privacy.epsilon == math.inf
    assert not model.privacy.private
    assert any("from the data" in r for r in model.privacy.not_private_reasons)
    assert model.spec.from_data == ("a", "b")


def test_classes_read_off_labels_are_not_private(toy_xy):
    X, y, bounds = toy_xy
    labels = np.where(y == 1, "yes", "no")
    with pytest.raises(ValueError, match="classes='data'"):      # undeclared strings: refused
        dpjax.fit(X, labels, method="random_trees", epsilon=1.0, bounds=bounds, key=0, **SMALL)
    with pytest.warns(DataDependentWarning, match="classes"):
        model = dpjax.fit(X, labels, method="random_trees", epsilon=1.0, bounds=bounds, key=0,
                          classes="data", **SMALL)
    assert not model.privacy.private
    assert model.privacy.epsilon == math.inf
    declared = dpjax.fit(X, labels, method="random_trees", epsilon=1.0, bounds=bounds, key=0,
                         classes=["no", "yes"], **SMALL)
    assert declared.privacy.private
    assert declared.privacy.epsilon <= 1.0
    # numeric labels outside the default classes (0, 1) must be declared under DP
    signs = np.where(y == 1, 1, -1)
    with pytest.raises(ValueError, match="outside the default classes"):
        dpjax.fit(X, signs, method="random_trees", epsilon=1.0, bounds=bounds, key=0, **SMALL)
    signed = dpjax.fit(X, signs, method="random_trees", epsilon=1.0, bounds=bounds, key=0,
                       classes=[-1, 1], **SMALL)
    assert signed.privacy.private and signed.classes == (-1, 1)
    # without DP they are inferred as before
    assert dpjax.fit(X, signs, method="random_trees", epsilon=None, bounds=bounds, key=0,
                     **SMALL).classes == (-1, 1)


def test_single_class_training_set_is_fine(toy_xy):
    """A training set in which a declared (or default) class never occurs is no error (whether
    it is would depend on one record): the class keeps its place, with a zero noisy count."""
    X, y, bounds = toy_xy
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        model = dpjax.fit(X, np.ones_like(y), method="random_trees", epsilon=1.0, bounds=bounds,
                          key=0, **SMALL)
    assert model.classes == (0, 1)
    assert model.privacy.private
    assert model.predict_proba(X).shape == (len(y), 2)


# --------------------------------------------------------------------------------------------
# The neighbouring relations
# --------------------------------------------------------------------------------------------


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
