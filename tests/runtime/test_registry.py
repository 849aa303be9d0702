"""The registry drives the plumbing: a toy learner in one folder (``tests/toy``) whose config
carries the one registration line fits, sweeps, is written to a model file and read back, is
drawn and gets a scikit-learn estimator, with no other file touched. And the built-in
estimators' parameters are their configs' fields."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dpjax
from dpjax.learner import unregister
from dpjax.learners import FAMILIES, registrations
from dpjax.sklearn import DATA_PARAMETERS, estimator_class

RNG = np.random.default_rng(0)
X = RNG.uniform(0, 1, (200, 3))
Y = (X[:, 0] + 0.3 * RNG.normal(size=200) > 0.5).astype(int)
BOUNDS = (0.0, 1.0)


@pytest.fixture(scope="module")
def toy():
    from tests.toy import ToyTree  # importing the folder registers it: the one line
    yield ToyTree
    unregister(ToyTree.name)


def test_the_toy_fits_and_its_ledger_is_its_mechanisms_cost(toy):
    model = dpjax.fit(X, Y, method="toy_tree", epsilon=1.0, bounds=BOUNDS, key=0)
    assert isinstance(model.config, toy) and model.privacy.private
    assert [e.what for e in model.privacy.entries] == ["leaf class counts"]
    assert 0.99 < model.privacy.epsilon <= 1.0
    assert model.predict_proba(X).shape == (200, 2) and model.score(X, Y) > 0.5
    assert "a toy tree" in model.describe()
    np.testing.assert_allclose(model.feature_importances().sum(), 1.0)
    same = dpjax.fit(X, Y, method="toy_tree", epsilon=1.0, bounds=BOUNDS, key=0)
    np.testing.assert_array_equal(model.params.tree.leaf, same.params.tree.leaf)


def test_the_toy_sweeps_over_epsilon_and_its_traced_field(toy):
    sweep = dpjax.sweep(X, Y, method="toy_tree", epsilon=[0.5, 2.0], smoothing=[0.5, 3.0],
                        seeds=2, bounds=BOUNDS)
    assert sweep.score(X, Y).shape == (4, 2)
    assert all(ledger.epsilon <= point["epsilon"]
               for ledger, point in zip(sweep.ledgers, sweep.grid, strict=True))


def test_the_toy_model_file_reads_back_bit_for_bit(toy, tmp_path):
    model = dpjax.fit(X, Y, method="toy_tree", epsilon=1.0, bounds=BOUNDS, key=1, depth=2)
    back = dpjax.load(model.to_json(tmp_path / "toy.json"))
    assert back.config == model.config and back.privacy == model.privacy
    np.testing.assert_array_equal(back.predict_proba(X), model.predict_proba(X))


def test_the_toy_is_drawn(toy):
    plots = pytest.importorskip("dpjax.plots")
    model = dpjax.fit(X, Y, method="toy_tree", epsilon=1.0, bounds=BOUNDS, key=2)
    assert plots.plot_tree(model).get_title().startswith("toy_tree")
    assert plots.plot_importances(model) is not None


def test_the_toy_gets_a_scikit_learn_estimator(toy):
    from sklearn.base import clone

    import dpjax.sklearn

    cls = dpjax.sklearn.DPToyTreeClassifier
    assert cls is estimator_class("toy_tree")
    clf = cls(epsilon=1.0, depth=2, bounds=BOUNDS, random_state=0).fit(X, Y)
    assert clf.get_params()["depth"] == 2 and clf.get_params()["smoothing"] == 1.0
    assert clf.predict(X).shape == (200,) and clf.privacy_.epsilon <= 1.0
    assert clone(clf).get_params() == clf.get_params()
    assert not hasattr(clf, "decision_function")     # the toy declares no decision function


@pytest.mark.parametrize("entry", registrations(), ids=lambda e: e.name)
def test_estimator_parameters_are_the_config_fields(entry):
    """An estimator's parameters are ``epsilon``, its config's fields with the config's
    defaults, and dpjax.fit's data arguments: they cannot drift."""
    cls = estimator_class(entry.name)
    assert cls.__name__ == entry.estimator and cls._CONFIG is entry.config
    parameters = inspect.signature(cls).parameters
    fields = {f.name: f.default for f in dataclasses.fields(entry.config)}
    assert list(parameters) == ["epsilon", *fields, *dict(DATA_PARAMETERS)]
    assert {name: parameters[name].default for name in fields} == fields
    assert hasattr(cls, "decision_function") == (entry.decision is not None)
    assert ("sample_weight" in inspect.signature(cls.fit).parameters) == (
        entry.config.takes_weights)


def test_each_family_registers_the_names_it_is_listed_with():
    for module, names in FAMILIES.items():
        importlib.import_module(module)
        assert {entry.name for entry in registrations()
                if entry.config.__module__.startswith(module + ".")} == set(names), module


LAZY = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import dpjax
    warnings.simplefilter("ignore")
    X = np.random.default_rng(0).normal(size=(300, 3)); y = (X[:, 0] > 0).astype(int)
    loaded = {}
    for method in ("rule_list", "boosted"):
        dpjax.fit(X, y, method=method, epsilon=1.0, key=0, bounds=([-4] * 3, [4] * 3))
        loaded[method] = sorted(m for m in sys.modules if m.startswith("dpjax.ensembles.")
                                and m.count(".") == 2 or m in ("dpjax.trees", "chex"))
    import tests.toy     # a learner from outside dpjax: every built-in family is loaded first
    families = sorted(m for m in sys.modules if m in FAMILIES)
    print(json.dumps({"loaded": loaded, "families": families, "listed": list(dpjax.LEARNERS)}))
""")


def test_a_first_fit_imports_its_own_family_alone():
    """A fresh process's first fit imports its learner's family only (a rule list loads no
    tree module and not chex); a registration from outside dpjax loads every built-in family
    first; the listing keeps the built-in order whatever loaded first, then the others."""
    code = LAZY.replace("m in FAMILIES", f"m in {sorted(FAMILIES)!r}")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["loaded"] == {"rule_list": [],
                               "boosted": ["chex", "dpjax.ensembles.newton", "dpjax.trees"]}
    assert found["families"] == sorted(FAMILIES)
    assert found["listed"] == [name for names in FAMILIES.values() for name in names] + [
        "toy_tree"]


UNREGISTER = textwrap.dedent("""
    import dpjax.learners as learners
    learners.unregister("smooth_boost")          # its family not imported yet
    assert "smooth_boost" not in learners.LEARNERS
    print("ok")
""")


def test_a_built_in_not_yet_imported_can_be_unregistered():
    done = subprocess.run([sys.executable, "-c", UNREGISTER], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
