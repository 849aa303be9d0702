"""The bad-input table: every public entry point answers bad input with a clear ``ValueError`` /
``TypeError`` that names the argument, or with a documented, warned behaviour — never a raw
JAX traceback, a hang or an out-of-memory kill.

Entry points: ``dpjax.fit``, ``dpjax.sweep``, ``Model.predict`` / ``predict_proba`` /
``score``, ``Sweep.score``, the scikit-learn estimators, ``dpjax.load_dataset``,
``dpjax.audit``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.data import OutOfBoundsWarning
from dpjax.sklearn import DPBoostedTreesClassifier, DPRandomTreesClassifier
from tests.conftest import small

SMALL = dict(n_trees=2, depth=2)
BOUNDS = {"a": (0.0, 1.0), "b": (0.0, 1.0)}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(0, 1, 40), "b": rng.uniform(0, 1, 40)})
    return X, (X.a > 0.5).astype(int).to_numpy()


def _with(X: pd.DataFrame, column: str, value) -> pd.DataFrame:
    X = X.copy()
    X.loc[0, column] = value
    return X


# (name, keyword changes to a valid dpjax.fit call, error type, message pattern)
FIT_ERRORS = [
    ("NaN", lambda X, y: dict(X=_with(X, "a", np.nan)), ValueError, r"'a'.*missing \(NaN\)"),
    ("inf", lambda X, y: dict(X=_with(X, "b", np.inf)), ValueError, r"'b'.*infinite"),
    ("empty X", lambda X, y: dict(X=X.iloc[:0], y=y[:0]), ValueError, "at least one row"),
    ("1-D X", lambda X, y: dict(X=X.a.to_numpy()), ValueError, "X must be 2-D"),
    ("3-D X", lambda X, y: dict(X=np.zeros((40, 2, 2))), ValueError, "X must be 2-D"),
    ("complex X", lambda X, y: dict(X=X.to_numpy() + 1j, bounds=([0, 0], [1, 1])),
     ValueError, "complex"),
    ("> 255 categories", lambda X, y: dict(
        X=pd.DataFrame({"c": [str(i % 300) for i in range(40)]}),
        bounds={"c": [str(i) for i in range(300)]}), ValueError, "256 codes"),
    ("object column, no categories", lambda X, y: dict(X=X.assign(c="u")), ValueError,
     "no declared categories for categorical column 'c'"),
    ("non-numeric in numeric column", lambda X, y: dict(X=X.astype(object).assign(a="x"),
                                                          bounds=BOUNDS), ValueError, "'a'"),
    ("ε = 0", lambda X, y: dict(epsilon=0.0), ValueError, "epsilon"),
    ("ε < 0", lambda X, y: dict(epsilon=-1.0), ValueError, "epsilon"),
    ("ε NaN", lambda X, y: dict(epsilon=float("nan")), ValueError, "epsilon"),
    ("ε inf", lambda X, y: dict(epsilon=float("inf")), ValueError, "epsilon"),
    ("ε string", lambda X, y: dict(epsilon="1"), ValueError, "epsilon"),
    ("ε list", lambda X, y: dict(epsilon=[1.0, 2.0]), ValueError, "epsilon"),
    ("ε too small for the sampler", lambda X, y: dict(epsilon=1e-12), ValueError,
     "epsilon is too small"),
    ("δ = 1", lambda X, y: dict(delta=1.0), ValueError, "delta"),
    ("δ < 0", lambda X, y: dict(delta=-0.1), ValueError, "delta"),
    ("δ string", lambda X, y: dict(delta="0"), ValueError, "delta"),
    ("bounds lo > hi", lambda X, y: dict(bounds={"a": (1.0, 0.0), "b": (0.0, 1.0)}),
     ValueError, r"bounds of column 'a'.*lo <= hi"),
    ("bounds wrong length", lambda X, y: dict(bounds=([0, 0, 0], [1, 1, 1])), ValueError,
     "one entry per feature"),
    ("bounds NaN", lambda X, y: dict(bounds=([0, np.nan], [1, 1])), ValueError,
     "bounds of column"),
    ("bounds unknown column", lambda X, y: dict(bounds={**BOUNDS, "z": (0, 1)}), ValueError,
     "unknown columns"),
    ("no bounds", lambda X, y: dict(bounds=None), ValueError, "no public bounds"),
    ("bounds bad string", lambda X, y: dict(bounds="public"), ValueError, "bounds"),
    ("key float", lambda X, y: dict(key=1.5), ValueError, "key"),
    ("key negative", lambda X, y: dict(key=-1), ValueError, "key"),
    ("key >= 2**64", lambda X, y: dict(key=2**70), ValueError, "key"),
    ("key string", lambda X, y: dict(key="0"), ValueError, "key"),
    ("depth 0", lambda X, y: dict(depth=0), ValueError, "depth"),
    ("depth 30", lambda X, y: dict(depth=30), ValueError, "depth"),
    ("depth float", lambda X, y: dict(depth=2.0), ValueError, "depth"),
    ("n_trees 0", lambda X, y: dict(n_trees=0), ValueError, "n_trees"),
    ("n_trees string", lambda X, y: dict(n_trees="3"), ValueError, "n_trees"),
    ("unknown hyper-parameter", lambda X, y: dict(n_tree=3), ValueError,
     r"no parameter.*n_tree"),
    ("unknown method", lambda X, y: dict(method="gbm"), ValueError, "unknown method"),
    ("y 2-D", lambda X, y: dict(y=np.c_[y, y]), ValueError, "y must be 1-D"),
    ("y length", lambda X, y: dict(y=y[:-1]), ValueError, "as many rows"),
    ("y NaN", lambda X, y: dict(y=np.where(y == 1, np.nan, 0.0)), ValueError, "missing label"),
    ("labels outside the default classes", lambda X, y: dict(y=y * 3), ValueError,
     "default classes"),
    ("labels outside declared classes", lambda X, y: dict(classes=[0, 2]), ValueError,
     "outside the declared classes"),
    ("one declared class", lambda X, y: dict(classes=[1]), ValueError, "at least two"),
    ("n_bins 0", lambda X, y: dict(n_bins=0), ValueError, "n_bins"),
    ("n_bins 300", lambda X, y: dict(n_bins=300), ValueError, "n_bins"),
    ("neighbouring", lambda X, y: dict(neighbouring="swap"), ValueError, "neighbouring"),
    ("public_size 0", lambda X, y: dict(public_size=0), ValueError, "public_size"),
    ("public_size float", lambda X, y: dict(public_size=10.5), ValueError, "public_size"),
    ("on_out_of_bounds", lambda X, y: dict(on_out_of_bounds="ignore"), ValueError,
     "on_out_of_bounds"),
    ("missing", lambda X, y: dict(missing="drop"), ValueError, "missing"),
    ("out of bounds, opt-in error", lambda X, y: dict(X=_with(X, "a", 7.0),
                                                      on_out_of_bounds="error"),
     ValueError, "outside its declared bounds"),
    ("boosted with 3 classes", lambda X, y: dict(method="malpha", y=np.arange(40) % 3,
                                                 classes=[0, 1, 2]), ValueError,
     "binary classifier"),
]


@pytest.mark.parametrize("case", FIT_ERRORS, ids=[c[0] for c in FIT_ERRORS])
def test_fit_rejects(data, case):
    X, y = data
    _, change, error, pattern = case
    kwargs = dict(X=X, y=y, method="random_trees", epsilon=1.0, bounds=BOUNDS, key=0,
                  **SMALL) | change(X, y)
    with pytest.raises(error, match=pattern):
        dpjax.fit(kwargs.pop("X"), kwargs.pop("y"), **kwargs)


SWEEP_ERRORS = [c for c in FIT_ERRORS if c[0] != "ε list" and not c[0].startswith("key")]


@pytest.mark.parametrize("case", SWEEP_ERRORS, ids=[c[0] for c in SWEEP_ERRORS])
def test_sweep_rejects_what_fit_rejects(data, case):
    X, y = data
    _, change, error, pattern = case
    kwargs = dict(X=X, y=y, method="random_trees", epsilon=1.0, bounds=BOUNDS, seeds=1,
                  **SMALL) | change(X, y)
    with pytest.raises(error, match=pattern):
        dpjax.sweep(kwargs.pop("X"), kwargs.pop("y"), **kwargs)


@pytest.mark.parametrize("change, pattern", [
    (dict(epsilon=[]), "non-empty"),
    (dict(epsilon=[[1.0, 2.0]]), "flat sequence"),
    (dict(epsilon=[1.0, -1.0]), "epsilon"),
    (dict(seeds=0), "seeds"),
    (dict(seeds=1.5), "seeds"),
    (dict(seeds=["a"]), "seeds"),
    (dict(seeds=[]), "seeds"),
])
def test_sweep_specific_rejections(data, change, pattern):
    X, y = data
    with pytest.raises(ValueError, match=pattern):
        dpjax.sweep(X, y, method="random_trees", bounds=BOUNDS,
                    **({"epsilon": 1.0, "seeds": 1} | change), **SMALL)


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(dpjax.LEARNERS))
def test_documented_behaviours_one_row_and_one_class(data, method):
    """One row and one class are valid datasets: they fit (no exception may depend on the
    records' values inside the declared domain)."""
    X, y = data
    for X_fit, y_fit in ((X.iloc[:1], y[:1]), (X, np.ones(40, int))):
        model = dpjax.fit(X_fit, y_fit, method=method, epsilon=1.0, bounds=BOUNDS, key=0,
                          **small(method))
        assert model.privacy.private and model.predict(X).shape == (40,)


def test_memory_guard_refuses_huge_models_instead_of_running_out(data, monkeypatch):
    X, y = data
    monkeypatch.setenv("DPJAX_MEMORY_LIMIT_GB", "0.5")
    with pytest.raises(ValueError, match=r"n_trees=10000, depth=12.*GiB"):
        dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=BOUNDS, n_trees=10_000, depth=12)
    with pytest.raises(ValueError, match="GiB"):
        dpjax.fit(X, y, method="malpha", epsilon=1.0, bounds=BOUNDS, n_trees=2, depth=20)
    with pytest.raises(ValueError, match="models at once"):
        dpjax.sweep(X, y, method="random_trees", epsilon=list(np.geomspace(0.1, 10, 200)),
                    bounds=BOUNDS, n_trees=300, depth=12)


def test_many_models_at_once_count_the_shared_codes_once(monkeypatch):
    """A sweep of ``B`` boosted models needs ``B·footprint − (B − 1)·shared``: the codes (and
    the oblivious trees' packed codes) are read by every model, not copied per model."""
    from dpjax._preparation import check_limits
    from dpjax.ensembles.newton import Boosted

    config = Boosted()                       # "auto" on 123 features: oblivious trees too
    shape = (32_561, 123)
    one, shared = config.footprint(*shape, 2, 2), config.shared_footprint(*shape)
    assert 0 < shared < one
    monkeypatch.setenv("DPJAX_MEMORY_LIMIT_GB", str((256 * one - 255 * shared) / 2**30 * 1.01))
    check_limits(config, shape, 2, 2, 256, private=True)
    monkeypatch.setenv("DPJAX_MEMORY_LIMIT_GB", str((256 * one - 255 * shared) / 2**30 * 0.99))
    with pytest.raises(ValueError, match="256 models at once"):
        check_limits(config, shape, 2, 2, 256, private=True)


def test_limits_are_checked_before_any_work_on_the_data(data, monkeypatch):
    """Row and memory limits read shapes and hyper-parameters only, so they refuse before the
    data is encoded (and before anything compiles)."""
    import dpjax._preparation

    def no_encoding(*args, **kwargs):
        raise AssertionError("encoded the data before checking the limits")

    monkeypatch.setattr(dpjax._preparation, "encode", no_encoding)
    monkeypatch.setenv("DPJAX_MEMORY_LIMIT_GB", "0.5")
    X, y = data
    with pytest.raises(ValueError, match="GiB"):
        dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=BOUNDS, n_trees=10_000, depth=12)
    monkeypatch.setattr(dpjax.LEARNERS["boosted"], "row_limit",
                            lambda self, private, n, regression=False: 10)
    with pytest.raises(ValueError, match="at most 10 rows"):
        dpjax.fit(X, y, method="boosted", epsilon=1.0, bounds=BOUNDS)


def test_a_public_size_equal_to_the_row_count_is_warned_under_add_remove(data):
    """Declaring ``public_size = len(X)`` publishes the private row count: warned (it may be a
    fixed-size study), not under replace-one (where the size is public anyway)."""
    X, y = data
    with pytest.warns(UserWarning, match="publishes it"):
        dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=BOUNDS, key=0,
                  public_size=len(X), **SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", dpjax.FixedKeyWarning)     # key=0: an experiment
        dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=BOUNDS, key=0,
                  public_size=len(X), neighbouring="replace_one", **SMALL)
        dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=BOUNDS, key=0,
                  public_size=len(X) + 5, **SMALL)


# --------------------------------------------------------------------------------------------
# Prediction
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model(data):
    X, y = data
    return dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=BOUNDS, key=0, **SMALL)


PREDICT_ERRORS = [
    ("wrong feature count", lambda X: X.to_numpy()[:, :1], "features, the model expects 2"),
    ("missing column", lambda X: X[["a"]], r"lacks the columns \['b'\]"),
    ("NaN", lambda X: _with(X, "a", np.nan), "missing"),
    ("inf", lambda X: _with(X, "a", np.inf), "infinite"),
    ("empty", lambda X: X.iloc[:0], "at least one row"),
    ("1-D", lambda X: X.a.to_numpy(), "2-D"),
    ("strings in numeric column", lambda X: np.array([["a", "b"]]), "non-numeric"),
    ("complex", lambda X: X.to_numpy() + 1j, "complex"),
]


@pytest.mark.parametrize("case", PREDICT_ERRORS, ids=[c[0] for c in PREDICT_ERRORS])
@pytest.mark.parametrize("entry", ["predict", "predict_proba"])
def test_predict_rejects(data, model, case, entry):
    X, _ = data
    _, change, pattern = case
    with pytest.raises(ValueError, match=pattern):
        getattr(model, entry)(change(X))


def test_score_rejects_mismatched_labels(data, model):
    X, y = data
    with pytest.raises(ValueError, match="one label per row"):
        model.score(X, y[:-1])
    sweep = dpjax.sweep(X, y, method="random_trees", epsilon=[1.0, 2.0], seeds=1, bounds=BOUNDS,
                        **SMALL)
    with pytest.raises(ValueError, match="one label per row"):
        sweep.score(X, y[:-1])


def test_prediction_clips_out_of_bounds_values_and_codes_unseen_categories(data):
    """Documented: prediction spends no budget, so values outside the bounds are clipped and
    unknown categories take the "other" code, with a warning."""
    X, y = data
    model = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=BOUNDS, key=0, **SMALL)
    with pytest.warns(OutOfBoundsWarning):
        assert model.predict(X + 5.0).shape == (40,)
    Xc = X.assign(c=["u", "v"] * 20)
    categorical = dpjax.fit(Xc, y, method="random_trees", epsilon=1.0,
                            bounds={**BOUNDS, "c": ["u", "v"]}, key=0, **SMALL)
    with pytest.warns(OutOfBoundsWarning, match="other"):
        assert categorical.predict(Xc.assign(c="never seen")).shape == (40,)


# --------------------------------------------------------------------------------------------
# scikit-learn estimators, load_dataset, audit
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("estimator", [DPRandomTreesClassifier, DPBoostedTreesClassifier])
def test_estimators_reject_bad_input(data, estimator):
    X, y = data
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        estimator(bounds=BOUNDS).predict(X)
    with pytest.raises(ValueError, match="epsilon"):
        estimator(epsilon=0.0, bounds=BOUNDS).fit(X, y)
    with pytest.raises(ValueError, match="missing"):
        estimator(bounds=BOUNDS, n_trees=2, depth=2).fit(_with(X, "a", np.nan), y)
    with pytest.raises(ValueError, match="delta"):
        estimator(bounds=BOUNDS, delta=2.0).fit(X, y)
    fitted = estimator(bounds=BOUNDS, n_trees=2, depth=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X.to_numpy()[:, :1])


def test_load_dataset_rejects():
    with pytest.raises(ValueError, match="unknown dataset 'nope'"):
        dpjax.load_dataset("nope")
    with pytest.raises(FileNotFoundError, match="adult_train.csv.gz"):
        dpjax.load_dataset("adult_train", data_dir="/nonexistent")


def test_audit_rejects(data):
    X, y = data
    with pytest.raises(ValueError, match="epsilon"):
        dpjax.audit(X, y, bounds=BOUNDS, epsilon=0.0, n=10)
    with pytest.raises(ValueError, match="positive"):
        dpjax.audit(X, y, bounds=BOUNDS, epsilon=1.0, n=0)
    with pytest.raises(ValueError, match="record"):
        dpjax.audit(X, y, bounds=BOUNDS, epsilon=1.0, n=10, record="middle")


def test_no_warning_escapes_as_an_error_for_valid_input(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", dpjax.FixedKeyWarning)     # key=0: an experiment
        dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=BOUNDS, key=0, **SMALL)


def test_requests_a_learner_cannot_serve_are_refused_before_compiling(data, monkeypatch):
    """A learner's own request checks (``Learner.check_request``) run in the preparation, so
    the error is not raised from inside a traced program."""
    import dpjax._api

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled before refusing the request")

    monkeypatch.setattr(dpjax._api, "compile_cached", no_compile)
    X, y = data
    for request in (dict(method="smooth_boost", weak_learner="halfspace"),
                    dict(method="rule_list", selection="smooth_laplace")):
        for run in (dpjax.fit, dpjax.sweep):
            with pytest.raises(ValueError, match="needs delta > 0"):
                run(X, y, epsilon=1.0, bounds=BOUNDS, **request)
