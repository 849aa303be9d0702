"""The user-facing API: bad inputs, out-of-bounds values, mixed column types end to end."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.data import DataDependentWarning, OutOfBoundsWarning
from tests.helpers.api import SMALL

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
        ("lengths", dict(y=y[:-1]), "as many rows"),
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
    kwargs = dict(X=X, y=y, method="random_trees", epsilon=1.0, bounds=bounds, key=0,
                  **SMALL) | change
    with pytest.raises(ValueError, match=message):
        dpjax.fit(kwargs.pop("X"), kwargs.pop("y"), **kwargs)


def test_out_of_bounds_values_are_clipped_by_default(toy_xy):
    """Values outside the declared bounds are clipped (with a warning that prints no value)
    by default, at fit and at predict time; ``on_out_of_bounds="error"`` is the opt-in for the
    training data."""
    X, y, _ = toy_xy
    narrow = {"a": (0.0, 0.5), "b": (0.0, 1.0)}
    with pytest.warns(OutOfBoundsWarning, match="'a'") as warned:
        model = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=narrow, key=0, **SMALL)
    assert model.privacy.private  # clipping is data-independent post-processing
    message = str(next(w.message for w in warned if w.category is OutOfBoundsWarning))
    assert "[0, 0.5]" in message
    assert not any(f"{v:.3}" in message for v in X["a"][X["a"] > 0.5])
    clipped = X.assign(a=X["a"].clip(upper=0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfBoundsWarning)  # values inside: no warning
        codes = model.encode(clipped)
    with pytest.warns(OutOfBoundsWarning):
        np.testing.assert_array_equal(model.encode(X), codes)
    # the opt-in error is for the training data; prediction clips (it spends no budget)
    strict = dpjax.fit(X.assign(a=X["a"] / 2), y, method="random_trees", epsilon=1.0, bounds=narrow,
                       key=0, on_out_of_bounds="error", **SMALL)
    with pytest.warns(OutOfBoundsWarning):
        np.testing.assert_array_equal(strict.predict(X), strict.predict(clipped))


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
    model = dpjax.fit(X, y, method="random_trees", epsilon=2.0, bounds=bounds, missing=["size"],
                      key=1, **SMALL)
    assert model.privacy.private
    # categories + "other"; 10 bins + missing; bool + "other"
    np.testing.assert_array_equal(model.spec.n_codes, [4, 11, 3])
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
    # under DP a category dtype is no declaration: undeclared, its categories are read off the
    # data (warned, not private)
    with pytest.warns(DataDependentWarning, match="colour"):
        undeclared = dpjax.fit(X, y, method="random_trees", epsilon=2.0, bounds={"size": (0, 10)},
                               missing=["size"], key=1, **SMALL)
    assert not undeclared.privacy.private
    np.testing.assert_array_equal(undeclared.spec.n_codes, [4, 11, 3])
    # an unseen category gets the "other" code at predict time
    unseen = X.assign(colour=pd.Categorical(["purple"] * m))
    with pytest.warns(OutOfBoundsWarning, match="colour"):
        np.testing.assert_array_equal(model.encode(unseen)[:, 0], 3)
