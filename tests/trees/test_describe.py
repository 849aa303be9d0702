"""Looking inside models: describe(), feature importances from released values, JSON export
and ``dpjax.load``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.data import make_feature_spec
from dpjax.data.describe import split_text
from dpjax.trees.describe import tree_importances

SETTINGS = {
    "random_trees": dict(n_trees=3, depth=3),
    "rf_laplace": dict(n_trees=3, depth=3),
    "rf_exponential": dict(n_trees=3, depth=3),
    "boosted": dict(),
    "malpha": dict(n_trees=2, depth=2),
    "rule_list": dict(max_rules=3),
    "smooth_boost": dict(n_rounds=4),
}


@pytest.fixture(scope="module")
def planted():
    """Feature ``signal`` decides the label; ``noise_a`` and ``noise_b`` are independent."""
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.uniform(0, 1, (2000, 3)), columns=["noise_a", "signal", "noise_b"])
    y = (X["signal"] > 0.5).astype(int).to_numpy()
    return X, y


@pytest.fixture(scope="module", params=sorted(SETTINGS))
def fitted(request, planted):
    X, y = planted
    return dpjax.fit(X, y, method=request.param, epsilon=5.0, bounds=(0, 1), key=0,
                     **SETTINGS[request.param])


@pytest.mark.slow
def test_describe_names_the_features_and_print_shows_it(fitted):
    text = fitted.describe()
    assert "signal" in text
    printed = str(fitted)                     # the summary: settings, the model, the ledger
    assert all(line in printed for line in text.splitlines()) and "Privacy ledger" in printed


@pytest.mark.slow
def test_importances_are_a_distribution_that_finds_the_signal(fitted):
    importances = fitted.feature_importances()
    assert importances.shape == (3,) and np.all(importances >= 0)
    assert importances.sum() == pytest.approx(1.0)
    assert np.argmax(importances) == 1, (fitted.method, importances)


def test_json_round_trip_predicts_the_same(fitted, planted, tmp_path):
    X, _ = planted
    path = tmp_path / "model.json"
    text = fitted.to_json(path)
    json.loads(text)                              # plain JSON
    for source in (path, text, str(path)):
        loaded = dpjax.load(source)
        assert loaded.config == fitted.config and loaded.spec == fitted.spec
        assert loaded.classes == fitted.classes and loaded.privacy == fitted.privacy
        assert np.isnan(loaded.timings.run_s)     # run time follows the data: not exported
        np.testing.assert_array_equal(loaded.predict_proba(X), fitted.predict_proba(X))


def test_load_refuses_other_types_and_other_files(fitted):
    data = json.loads(fitted.to_json())
    for name in ("os.system", "dpjax._serialization.to_json", "dpjax._api.fit"):
        data["model"]["type"] = name
        with pytest.raises(ValueError, match="not a dpjax model type"):
            dpjax.load(json.dumps(data))
    with pytest.raises(ValueError, match="not a dpjax model"):
        dpjax.load(json.dumps({"format": "other"}))


def test_split_text_reads_the_public_binning():
    X = pd.DataFrame({"age": [20.0, 60.0], "colour": pd.Categorical(["red", "blue"])})
    spec = make_feature_spec(X, {"age": (0.0, 100.0), "colour": ["red", "blue", "green"]},
                             n_bins=4, missing=["age"])
    assert split_text(spec, 0, 1) == "age < 50"
    assert split_text(spec, 0, 3) == "age is not missing"     # every bin left, missing right
    assert split_text(spec, 1, 1) == "colour in {red, blue}"


def test_tree_importances_follow_the_leaf_gaps():
    """One tree of depth 2: the root (feature 0) separates leaves 0,1 from 2,3 by a mean gap of
    2; the left child (feature 1) separates 0 from 1 by 1, weighted 1/2; the right child
    (feature 2) separates equal leaves."""
    feature = np.array([[0, 1, 2]])
    leaf = np.array([[0.0, 1.0, 2.5, 2.5]])
    np.testing.assert_allclose(tree_importances(feature, leaf, 3), [2.0, 0.5, 0.0])
