"""scikit-learn estimators over :func:`dpjax.fit` (needs the ``sklearn`` extra), one per
registered learner, made from its registration (:func:`estimator_class`).

    from dpjax.sklearn import DPBoostedTreesClassifier
    clf = DPBoostedTreesClassifier(epsilon=1.0, bounds=(lower, upper)).fit(X, y)
    clf.predict(X); clf.privacy_.epsilon

Each learner's registration names its estimator (``DPRandomTreesClassifier``,
``DPBoostedTreesClassifier``, ``DPMalphaBoostedClassifier``, ...; ``estimator_class(method)``
gives it by ``method=`` name). An estimator's parameters are ``epsilon``, its learner config's
fields (same names, same defaults: they cannot drift) and :func:`dpjax.fit`'s data arguments;
``fit`` takes ``sample_weight`` when the learner takes weights, and ``decision_function``
exists when the learner has a decision function.

``get_params`` / ``set_params`` / ``clone`` work, so the estimators drop into pipelines and
grid searches. Every fit of a grid search or a cross-validation loop is a release on the same
data: give the estimator an ``accountant=dpjax.BudgetAccountant(epsilon=...)`` and every clone
spends from it (a fit that would exceed its total raises
:class:`dpjax.BudgetExceededError` before any work; run such searches with ``n_jobs=1``, or
keep the budget in a store, ``BudgetAccountant(..., store=path)``, which every worker process
spends from). The
accountant covers the fits, not the search's scores: ``cv_results_`` and ``best_params_`` are
exact accuracies on private validation folds, which no ledger sees. Tune on public or held-out
data you may spend.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import numpy as np
import pandas as pd

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted, column_or_1d
except ImportError as error:  # pragma: no cover - exercised only without scikit-learn
    raise ImportError("dpjax.sklearn needs scikit-learn: pip install 'dpjax[sklearn]'") from error
try:                                  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:                   # pragma: no cover - scikit-learn < 1.6
    def _validate_data(estimator: Any, X: Any, **kwargs: Any) -> Any:
        if "ensure_all_finite" in kwargs:
            kwargs["force_all_finite"] = kwargs.pop("ensure_all_finite")
        return estimator._validate_data(X, **kwargs)

from dpjax._api import fit
from dpjax._keys import as_key
from dpjax._model import Model
from dpjax.data.binning import is_categorical
from dpjax.learner import Learner, Registration
from dpjax.learners import registration, registrations

EXPECTED_FAILED_CHECKS: dict[str, str] = {
    "check_classifiers_one_label": (
        "a private fit does not learn that y holds one class: the class list is public (0 and 1 "
        "for numeric labels, not read off y), and the model's noisy predictions on the check's "
        "10 rows at epsilon = 1 need not be that class (the fit itself succeeds; with "
        "classes='data' the one class is refused as a class list, which the check accepts)"),
}
"""scikit-learn's estimator checks that a DP estimator fails by design, with the reason (the one
place they are listed; :func:`expected_failed_checks` gives them to ``check_estimator`` and
``parametrize_with_checks``)."""
EXPECTED_FAILED_WEIGHT_CHECKS: dict[str, str] = {
    "check_all_zero_sample_weights_error": (
        "all-zero weights fit, like an empty dataset: an error would depend on every record's "
        "weight"),
}
"""The further check the estimators that take ``sample_weight`` (weights in ``[0, 1]``) fail
by design."""
_ABOVE_ONE = ("the check fits with integer weights up to 4, which dpjax clips to 1 (a record "
              "weighing more than 1 would raise the sensitivity of the counts beyond what the "
              "noise covers), against rows repeated up to 4 times")
EXPECTED_FAILED_EQUIVALENCE_CHECKS: dict[str, str] = {
    "check_sample_weight_equivalence_on_dense_data": _ABOVE_ONE,
    "check_sample_weight_equivalence_on_sparse_data": _ABOVE_ONE,
}
"""The weight-equivalence checks, which fail by design for the learners whose released leaf
scores are the weighted counts (``random_trees``). ``rf_laplace`` and ``rf_exponential`` pass
them on the check's data (15 rows in ``[0, 1]`` against bounds ``±10``: each tree's leaf vote,
a noisy argmax, comes out the same for the weighted and the repeated rows), so they are not
expected to fail there."""
EQUIVALENCE_FAILS = ("random_trees",)


def expected_failed_checks(estimator: BaseEstimator) -> dict[str, str]:
    """The checks ``estimator`` fails by design, with their reasons, for ``check_estimator(...,
    expected_failed_checks=expected_failed_checks(est))``: :data:`EXPECTED_FAILED_CHECKS` for
    a classifier whose classes are not read off ``y``, :data:`EXPECTED_FAILED_WEIGHT_CHECKS`
    for the estimators that take ``sample_weight``, :data:`EXPECTED_FAILED_EQUIVALENCE_CHECKS`
    for the learners of :data:`EQUIVALENCE_FAILS`."""
    config = getattr(estimator, "_CONFIG", None)
    if config is None:
        return {}
    expected = {}
    classes = getattr(estimator, "classes", None)
    if not (isinstance(classes, str) and classes == "data"):
        expected.update(EXPECTED_FAILED_CHECKS)
    if config.takes_weights:
        expected.update(EXPECTED_FAILED_WEIGHT_CHECKS)
        if config.name in EQUIVALENCE_FAILS:
            expected.update(EXPECTED_FAILED_EQUIVALENCE_CHECKS)
    return expected


def _store_params(estimator: BaseEstimator, arguments: dict[str, Any]) -> None:
    """Keep every ``__init__`` argument as an attribute of the same name (the scikit-learn
    convention ``get_params`` / ``clone`` rely on), with no validation or conversion."""
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def _sorted_classes(classes: Any) -> Any:
    """Declared ``classes`` in scikit-learn's order (``classes_`` sorted, as ``np.unique``
    sorts them; the columns of ``predict_proba`` and the positive class ``classes_[1]``
    follow it); ``None`` and ``"data"`` as they are (their classes come sorted), and labels
    that do not sort (mixed types) in the declared order."""
    if classes is None or isinstance(classes, str):
        return classes
    try:
        return sorted(classes)
    except TypeError:
        return classes


class _DPEstimator(BaseEstimator):
    """What the classifiers and regressors share: the check of ``X`` (module docstring),
    ``predict``, ``describe`` and ``feature_importances_``."""

    _CONFIG: type[Learner]

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.missing != "error"
        tags.input_tags.sparse = True
        tags.non_deterministic = self.random_state is None
        return tags

    def _check_X(self, X: Any, *, reset: bool) -> Any:
        finite = "allow-nan" if self.missing != "error" else True
        if isinstance(X, pd.DataFrame) and any(is_categorical(t) for t in X.dtypes):
            _validate_data(self, X, reset=reset, skip_check_array=True)
            return X
        checked = _validate_data(self, X, reset=reset, dtype="numeric", ensure_all_finite=finite,
                                 accept_sparse=True)
        return X if isinstance(X, pd.DataFrame) else checked

    def _checked_data(self, X: Any, y: Any) -> tuple[Any, np.ndarray]:
        """``X`` checked (resetting ``n_features_in_``) and ``y`` as a 1-D array; ``y=None`` is
        refused in scikit-learn's words."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None")
        return self._check_X(X, reset=True), column_or_1d(y, warn=True)

    def _fit_model(self, X: Any, y: Any, **data: Any) -> Model:
        """:func:`dpjax.fit` with the estimator's parameters (``data``: what the task adds)."""
        mine = self.get_params()
        hyper = {name: mine[name] for name in self._CONFIG().hyperparams if name in mine}
        model: Model = fit(
            X, y, method=self._CONFIG.name, epsilon=self.epsilon, key=self.random_state,
            bounds=self.bounds, n_bins=self.n_bins, missing=self.missing,
            on_out_of_bounds=self.on_out_of_bounds, neighbouring=self.neighbouring,
            public_size=self.public_size, delta=self.delta, accountant=self.accountant,
            bounds_share=self.bounds_share, **data, **hyper)
        self.model_ = model
        self.privacy_ = model.privacy
        return model

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "model_")
        X = self._check_X(X, reset=False)
        # a randomised prediction rule without a seed draws fresh entropy per call
        key = self.random_state if self.random_state is not None else (
            as_key(None) if self.model_.config.needs_predict_key else None)
        return self.model_.predict(X, key=key)

    def describe(self) -> str:
        """The fitted model as readable text (:meth:`dpjax.Model.describe`)."""
        check_is_fitted(self, "model_")
        return self.model_.describe()

    @property
    def feature_importances_(self) -> np.ndarray:
        """Importance of each feature, read off the released model alone
        (:meth:`dpjax.Model.feature_importances`)."""
        check_is_fitted(self, "model_")
        return self.model_.feature_importances()


class _DPClassifier(ClassifierMixin, _DPEstimator):
    """Shared ``fit`` / ``predict`` of the estimators: each estimator class
    (:func:`_make_estimator`) names its learner config (whose fields give the
    hyper-parameters' defaults and names); the data arguments are common.

    ``X`` is checked as scikit-learn does (``n_features_in_``, ``feature_names_in_``, no
    complex data, no NaN or inf unless ``missing`` allows missing values; a scipy sparse
    matrix is read as its dense twin); a pandas
    DataFrame reaches :func:`dpjax.fit` as it is, so its column names and categorical columns
    keep their meaning. ``classes`` is :func:`dpjax.fit`'s, with the same rule: undeclared, the
    public default of the labels' type (``{0, 1}`` for numbers, booleans), other labels an
    error; ``classes="data"`` reads them off ``y`` (warned, and the ledger marks the model not
    private), for scikit-learn's generic tools on labels without a public list.
    """

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = not self._CONFIG.binary
        # DP noise at epsilon = 1 on the checks' ~100-row datasets: accuracy is not the point
        tags.classifier_tags.poor_score = True
        return tags

    def _more_tags(self) -> dict[str, Any]:  # pragma: no cover - scikit-learn < 1.6
        return {"binary_only": self._CONFIG.binary, "poor_score": True,
                "X_types": ["2darray", "sparse"],
                "allow_nan": self.missing != "error",
                "non_deterministic": self.random_state is None,
                "_xfail_checks": expected_failed_checks(self)}

    def fit(self, X: Any, y: Any, **fit_params: Any) -> _DPClassifier:
        if "sample_weight" in fit_params:
            takers = sorted(e.estimator for e in registrations() if e.config.takes_weights)
            raise TypeError(f"{type(self).__name__}.fit does not take sample_weight: the "
                            "learner's privacy analysis counts every record once (estimators "
                            f"that take weights in [0, 1]: {', '.join(takers)})")
        if fit_params:
            raise TypeError(f"{type(self).__name__}.fit got unexpected arguments "
                            f"{sorted(fit_params)}")
        return self._fit(X, y, None)

    def _fit(self, X: Any, y: Any, sample_weight: Any) -> _DPClassifier:
        X, y = self._checked_data(X, y)
        check_classification_targets(y)
        model = self._fit_model(X, y, classes=_sorted_classes(self.classes),
                                sample_weight=sample_weight)
        self.classes_ = np.asarray(model.classes)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(self._check_X(X, reset=False))


class _DPRegressor(RegressorMixin, _DPEstimator):
    """The regressor of a learner that fits a real target (``task="regression"``):
    ``y_bounds`` is the target's public range, as in :func:`dpjax.fit`: under DP it must be
    declared; ``y_bounds="data"`` reads it off ``y`` (warned, and the model's ledger marks it
    **not private**), for scikit-learn's generic tools. ``score`` is the R² (scikit-learn's)."""

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags

    def fit(self, X: Any, y: Any) -> _DPRegressor:
        X, y = self._checked_data(X, y)
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError("Unknown label type: the regression target y must be numeric; "
                             f"got dtype {y.dtype}") from None
        self._fit_model(X, y, task="regression",
                        y_bounds=self.y_bounds)
        return self


class _WeightedFit:
    """``fit`` with ``sample_weight`` (weights in ``[0, 1]``) for the learners whose counts take
    record weights at unchanged sensitivity (:attr:`~dpjax.learner.Learner.takes_weights`)."""

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> _DPClassifier:
        return self._fit(X, y, sample_weight)


class _Decision:
    """``decision_function`` for the learners with a real-valued score
    (:meth:`~dpjax.learner.Learner.decision`)."""

    def decision_function(self, X: Any) -> np.ndarray:
        """The model's score (positive: ``classes_[1]``; :meth:`dpjax.Model.
        decision_function`)."""
        check_is_fitted(self, "model_")
        return self.model_.decision_function(self._check_X(X, reset=False))


DATA_PARAMETERS: tuple[tuple[str, Any], ...] = (
    ("bounds", None), ("classes", None), ("n_bins", None), ("missing", "error"),
    ("on_out_of_bounds", "clip"), ("neighbouring", "add_remove"), ("public_size", None),
    ("delta", 0.0), ("random_state", None), ("accountant", None), ("bounds_share", 0.25))
"""The estimators' parameters besides ``epsilon`` and the learner's own: :func:`dpjax.fit`'s
arguments (``random_state`` is its ``key``: ``None`` draws fresh OS entropy); a regressor
has ``y_bounds`` for ``classes``."""


def _data_parameters(regressor: bool) -> tuple[tuple[str, Any], ...]:
    if not regressor:
        return DATA_PARAMETERS
    return tuple(("y_bounds", None) if name == "classes" else (name, default)
                 for name, default in DATA_PARAMETERS)


def _signature(config: type[Learner], regressor: bool = False) -> inspect.Signature:
    """``__init__(self, epsilon=1.0, *, <the config's fields>, <DATA_PARAMETERS>)``."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                  inspect.Parameter("epsilon", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    default=1.0)]
    parameters += [inspect.Parameter(f.name, keyword, default=f.default)
                   for f in dataclasses.fields(config)]
    parameters += [inspect.Parameter(name, keyword, default=default)
                   for name, default in _data_parameters(regressor)]
    return inspect.Signature(parameters)


def _make_estimator(entry: Registration, regressor: bool = False) -> type[_DPEstimator]:
    """The scikit-learn estimator class of a registered learner (its regressor with
    ``regressor``): its parameters are the config's fields (with the config's defaults) and
    :func:`dpjax.fit`'s data arguments; a classifier's ``fit`` takes ``sample_weight`` when
    the learner does, and ``decision_function`` exists when the learner has a decision
    function."""
    config = entry.config
    signature = _signature(config, regressor)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        _store_params(self, bound.arguments)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    summary = (config.__doc__ or "").strip().split("\n\n")[0]
    doc = (f"{summary}\n\nThe scikit-learn estimator of ``method={config.name!r}``. Its "
           f"parameters are ``epsilon``, the fields of :class:`{config.__module__}."
           f"{config.__qualname__}` (the same names and defaults) and the data arguments of "
           ":func:`dpjax.fit` (``random_state`` is its ``key``: ``None`` draws fresh OS "
           "entropy).\n\nAttributes (after ``fit``): ``model_`` (:class:`dpjax.Model`), "
           "``classes_``, ``n_features_in_``, ``privacy_`` (the privacy ledger).")
    if regressor:
        doc = doc.replace("``classes_``, ", "").replace(
            f"``method={config.name!r}``", f"``method={config.name!r}, task='regression'``")
        bases: tuple[type, ...] = (_DPRegressor,)
        name = entry.regressor
    else:
        bases = ((_WeightedFit,) if config.takes_weights else ()) + (
            (_Decision,) if entry.decision is not None else ()) + (_DPClassifier,)
        name = entry.estimator
    namespace = {"__init__": __init__, "__doc__": doc, "__module__": __name__,
                 "__qualname__": name, "_CONFIG": config}
    return type(name, bases, namespace)


def estimator_class(method: str | Learner, regressor: bool = False) -> type[_DPEstimator]:
    """The scikit-learn estimator class of a registered learner (by ``method=`` name or
    config; its regressor with ``regressor``, where it fits a real target), made from its
    registration once and kept as an attribute of this module (so that its instances
    pickle)."""
    entry = registration(method)
    name = entry.regressor if regressor else entry.estimator
    if name is None:
        raise ValueError(f"{entry.name} fits classes only: it has no regressor")
    cls = globals().get(name)
    if getattr(cls, "_CONFIG", None) is not entry.config:
        cls = globals()[name] = _make_estimator(entry, regressor)
    return cls


from dpjax.sklearn_preprocessing import DPMinMaxScaler, DPOneHotEncoder  # noqa: E402, F401 (re-exported)


def __getattr__(name: str) -> Any:
    for entry in registrations():
        if name in (entry.estimator, entry.regressor):
            return estimator_class(entry.name, regressor=name == entry.regressor)
    raise AttributeError(f"module 'dpjax.sklearn' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *(entry.estimator for entry in registrations()),
                   *(entry.regressor for entry in registrations() if entry.regressor)})


for _entry in registrations():
    estimator_class(_entry.name)
    if _entry.regressor:
        estimator_class(_entry.name, regressor=True)
del _entry
