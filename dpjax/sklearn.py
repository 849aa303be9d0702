"""scikit-learn estimators over :func:`dpjax.fit` (needs the ``sklearn`` extra).

    from dpjax.sklearn import DPBoostedTreesClassifier
    clf = DPBoostedTreesClassifier(epsilon=1.0, bounds=(lower, upper)).fit(X, y)
    clf.predict(X); clf.privacy_.epsilon

Estimators: :class:`DPRandomTreesClassifier` (Bojarski et al.), :class:`DPBoostedTreesClassifier`
(private Newton boosting), :class:`DPMalphaBoostedClassifier` (Mα-boost, Nock & Henecka),
:class:`DPRandomForestLaplaceClassifier` (RF-L), :class:`DPRandomForestExponentialClassifier`
(RF-E), :class:`DPSmoothBoostClassifier` (smooth boosting) and :class:`DPRuleListClassifier`
(DP greedy rule lists, Ly et al.).

``get_params`` / ``set_params`` / ``clone`` work, so the estimators drop into pipelines and
grid searches. Every fit of a grid search or a cross-validation loop is a release on the same
data: give the estimator an ``accountant=dpjax.BudgetAccountant(epsilon=...)`` and every clone
spends from it (a fit that would exceed its total raises
:class:`dpjax.BudgetExceededError` before any work; run such searches with ``n_jobs=1``). The
accountant covers the fits, not the search's scores: ``cv_results_`` and ``best_params_`` are
exact accuracies on private validation folds, which no ledger sees. Tune on public or held-out
data you may spend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
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

from dpjax.api import Model, fit
from dpjax.budget import BudgetAccountant
from dpjax.data.binning import is_categorical
from dpjax.data.labels import DEFAULT_NUMERIC_CLASSES
from dpjax.ensembles import boosted_decision
from dpjax.ensembles.newton import newton_decision
from dpjax.ensembles.smooth_boost import smooth_boost_decision
from dpjax.keys import as_key
from dpjax.learners import (
    Boosted,
    Learner,
    MalphaBoosted,
    RandomTrees,
    RFExponential,
    RFLaplace,
    RuleListLearner,
    SmoothBoost,
)

_ABOVE_ONE = ("the check fits with sample weights above 1, which dpjax refuses: a record "
              "weighing more than 1 would raise the sensitivity of the counts beyond what the "
              "noise covers")
EXPECTED_FAILED_CHECKS: dict[str, str] = {
    "check_classifiers_one_label": (
        "a private fit does not learn that y holds one class: the class list is public (0 and 1 "
        "for numeric labels, not read off y), and the model's noisy predictions on the check's "
        "10 rows at epsilon = 1 need not be that class (the fit itself succeeds)"),
}
"""scikit-learn's estimator checks that a DP estimator fails by design, with the reason (the one
place they are listed; :func:`expected_failed_checks` gives them to ``check_estimator`` and
``parametrize_with_checks``)."""
EXPECTED_FAILED_WEIGHT_CHECKS: dict[str, str] = {
    "check_sample_weights_list": _ABOVE_ONE,
    "check_sample_weights_not_overwritten": _ABOVE_ONE,
    "check_sample_weight_equivalence_on_dense_data": _ABOVE_ONE,
    "check_all_zero_sample_weights_error": (
        "all-zero weights fit, like an empty dataset: an error would depend on every record's "
        "weight"),
}
"""The further checks the estimators that take ``sample_weight`` (weights in ``[0, 1]``) fail
by design."""


def expected_failed_checks(estimator: BaseEstimator) -> dict[str, str]:
    """The checks of :data:`EXPECTED_FAILED_CHECKS` (and, for the estimators that take
    ``sample_weight``, :data:`EXPECTED_FAILED_WEIGHT_CHECKS`), for ``check_estimator(...,
    expected_failed_checks=expected_failed_checks(est))``."""
    weighted = getattr(estimator, "_CONFIG", None) is not None and estimator._CONFIG.takes_weights
    return {**EXPECTED_FAILED_CHECKS, **(EXPECTED_FAILED_WEIGHT_CHECKS if weighted else {})}


def _store_params(estimator: BaseEstimator, arguments: dict[str, Any]) -> None:
    """Keep every ``__init__`` argument as an attribute of the same name (the scikit-learn
    convention ``get_params`` / ``clone`` rely on), with no validation or conversion."""
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def _undeclared_classes(y: np.ndarray) -> Any:
    """``classes`` for :func:`dpjax.fit` when the estimator declares none: the public default
    of the labels' type when every label is in it (booleans, numbers in ``{0, 1}``), else
    ``"data"``: the labels' distinct values, read off the data (warned, recorded as a non-private
    release in the ledger; diffprivlib does the same when ``classes`` is not given).

    The default is a declaration: a model fitted under it is DP for datasets whose labels lie
    in ``{0, 1}``. Whether they do is the one bit this choice reads (the same bit
    :func:`dpjax.fit`'s error for other labels reveals); declare ``classes`` to read none."""
    if y.dtype == bool:
        return None
    if np.issubdtype(y.dtype, np.number) and np.isin(y, DEFAULT_NUMERIC_CLASSES).all():
        return None
    return "data"


class _DPClassifier(ClassifierMixin, BaseEstimator):
    """Shared ``fit`` / ``predict`` of the estimators: each subclass names its learner config
    (whose fields give the hyper-parameters' defaults and names); the data arguments are
    common.

    ``X`` is checked as scikit-learn does (``n_features_in_``, ``feature_names_in_``, no
    sparse or complex data, no NaN or inf unless ``missing`` allows missing values); a pandas
    DataFrame reaches :func:`dpjax.fit` as it is, so its column names and categorical columns
    keep their meaning. ``classes=None`` reads the classes off ``y`` unless every label lies in
    the public default of its type (see :func:`_undeclared_classes`).
    """

    _CONFIG: type[Learner]

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = not self._CONFIG.binary
        # DP noise at epsilon = 1 on the checks' ~100-row datasets: accuracy is not the point
        tags.classifier_tags.poor_score = True
        tags.input_tags.allow_nan = self.missing != "error"
        tags.non_deterministic = self.random_state is None
        return tags

    def _more_tags(self) -> dict[str, Any]:  # pragma: no cover - scikit-learn < 1.6
        return {"binary_only": self._CONFIG.binary, "poor_score": True,
                "allow_nan": self.missing != "error",
                "non_deterministic": self.random_state is None,
                "_xfail_checks": expected_failed_checks(self)}

    def _check_X(self, X: Any, *, reset: bool) -> Any:
        finite = "allow-nan" if self.missing != "error" else True
        if isinstance(X, pd.DataFrame) and any(is_categorical(t) for t in X.dtypes):
            _validate_data(self, X, reset=reset, skip_check_array=True)
            return X
        checked = _validate_data(self, X, reset=reset, dtype="numeric", ensure_all_finite=finite)
        return X if isinstance(X, pd.DataFrame) else checked

    def fit(self, X: Any, y: Any, **fit_params: Any) -> _DPClassifier:
        if "sample_weight" in fit_params:
            raise TypeError(f"{type(self).__name__}.fit does not take sample_weight: the "
                            "learner's privacy analysis counts every record once (the forests "
                            "take weights in [0, 1])")
        if fit_params:
            raise TypeError(f"{type(self).__name__}.fit got unexpected arguments "
                            f"{sorted(fit_params)}")
        return self._fit(X, y, None)

    def _fit(self, X: Any, y: Any, sample_weight: Any) -> _DPClassifier:
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None")
        X = self._check_X(X, reset=True)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        classes = self.classes if self.classes is not None else _undeclared_classes(y)
        mine = self.get_params()
        hyper = {name: mine[name] for name in self._CONFIG().hyperparams if name in mine}
        model: Model = fit(
            X, y, method=self._CONFIG.name, epsilon=self.epsilon, key=self.random_state,
            bounds=self.bounds, classes=classes, n_bins=self.n_bins, missing=self.missing,
            on_out_of_bounds=self.on_out_of_bounds, neighbouring=self.neighbouring,
            public_size=self.public_size, delta=self.delta, accountant=self.accountant,
            sample_weight=sample_weight, **hyper)
        self.model_ = model
        self.classes_ = np.asarray(model.classes)
        self.privacy_ = model.privacy
        return self

    def _codes(self, X: Any) -> Any:
        """The fitted model's codes of ``X`` (checked against the fit's features)."""
        check_is_fitted(self, "model_")
        return self.model_.encode(self._check_X(X, reset=False))

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "model_")
        X = self._check_X(X, reset=False)
        # a randomised prediction rule without a seed draws fresh entropy per call
        key = self.random_state if self.random_state is not None else (
            as_key(None) if self.model_.config.needs_predict_key else None)
        return self.model_.predict(X, key=key)

    def predict_proba(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(self._check_X(X, reset=False))

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


class _WeightedFit:
    """``fit`` with ``sample_weight`` (weights in ``[0, 1]``) for the forests, whose counts
    take record weights at unchanged sensitivity."""

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> _DPClassifier:
        return self._fit(X, y, sample_weight)


class DPRandomTreesClassifier(_WeightedFit, _DPClassifier):
    """Differentially private random decision-tree forest (Bojarski et al. 2014).

    Parameters are those of :func:`dpjax.fit` with ``method="random_trees"``;
    ``random_state`` is its ``key`` (``None``: fresh OS entropy).

    Attributes (after ``fit``): ``model_`` (:class:`dpjax.Model`), ``classes_``,
    ``n_features_in_``, ``privacy_`` (the privacy ledger).
    """

    def __init__(
        self,
        epsilon: float | None = 1.0,
        *,
        n_trees: int = RandomTrees.n_trees,
        depth: int = RandomTrees.depth,
        voting: str = RandomTrees.voting,
        leaf_estimate: str = RandomTrees.leaf_estimate,
        noise: str = RandomTrees.noise,
        leaf_composition: str = RandomTrees.leaf_composition,
        threshold_range: str = RandomTrees.threshold_range,
        bounds: Any = None,
        classes: Sequence[Any] | None = None,
        n_bins: int = 10,
        missing: str | Sequence[str] = "error",
        on_out_of_bounds: str = "clip",
        neighbouring: str = "add_remove",
        public_size: int | None = None,
        delta: float = 0.0,
        random_state: int | None = None,
        accountant: BudgetAccountant | None = None,
    ) -> None:
        _store_params(self, locals())

    _CONFIG = RandomTrees


class _RandomForestBaseline(_WeightedFit, _DPClassifier):
    """RF-L / RF-E of Nock & Henecka (spec §6.5): random trees whose leaf labels are released
    per leaf (budget ``epsilon / (n_trees * 2**depth)``, or per tree with
    ``leaf_composition="tree"``), majority vote."""

    def __init__(
        self,
        epsilon: float | None = 1.0,
        *,
        n_trees: int = RFLaplace.n_trees,
        depth: int = RFLaplace.depth,
        leaf_composition: str = RFLaplace.leaf_composition,
        threshold_range: str = RFLaplace.threshold_range,
        bounds: Any = None,
        classes: Sequence[Any] | None = None,
        n_bins: int = 10,
        missing: str | Sequence[str] = "error",
        on_out_of_bounds: str = "clip",
        neighbouring: str = "add_remove",
        public_size: int | None = None,
        delta: float = 0.0,
        random_state: int | None = None,
        accountant: BudgetAccountant | None = None,
    ) -> None:
        _store_params(self, locals())


class DPRandomForestLaplaceClassifier(_RandomForestBaseline):
    """RF-L: Laplace noise on each leaf's class counts, leaf label = noisy argmax."""

    _CONFIG = RFLaplace


class DPRandomForestExponentialClassifier(_RandomForestBaseline):
    """RF-E: each leaf's label drawn by the exponential mechanism on its class counts."""

    _CONFIG = RFExponential


class DPBoostedTreesClassifier(_DPClassifier):
    """Private Newton boosting (the library's accurate default booster, binary labels).

    Parameters are those of :func:`dpjax.fit` with ``method="boosted"`` (see
    :func:`dpjax.ensembles.newton.fit_newton_boosted`). ``decision_function`` gives the score
    ``F(x)`` (log-odds of ``classes_[1]``).
    """

    _CONFIG = Boosted

    def __init__(
        self,
        epsilon: float | None = 1.0,
        *,
        shape: str = Boosted.shape,
        n_trees: int = Boosted.n_trees,
        depth: int = Boosted.depth,
        learning_rate: float = Boosted.learning_rate,
        regularisation: float = Boosted.regularisation,
        min_signal: float = Boosted.min_signal,
        prior_share: float = Boosted.prior_share,
        noise: str = Boosted.noise,
        bounds: Any = None,
        classes: Sequence[Any] | None = None,
        n_bins: int = 10,
        missing: str | Sequence[str] = "error",
        on_out_of_bounds: str = "clip",
        neighbouring: str = "add_remove",
        public_size: int | None = None,
        delta: float = 0.0,
        random_state: int | None = None,
        accountant: BudgetAccountant | None = None,
    ) -> None:
        _store_params(self, locals())

    def decision_function(self, X: Any) -> np.ndarray:
        """The boosted score ``F(x)`` (positive: ``classes_[1]``)."""
        codes = self._codes(X)
        return np.asarray(newton_decision(self.model_.params, codes))


class DPMalphaBoostedClassifier(_DPClassifier):
    """Mα-boost (Nock & Henecka): boosted DP decision trees with the Mα loss.

    Parameters are those of :func:`dpjax.fit` with ``method="malpha"`` (see
    :func:`dpjax.ensembles.fit_boosted`); ``alpha`` is a number in ``(0, 1]`` or ``"oc"``
    (objective calibration). ``decision_function`` gives the ensemble score ``H(x)``.
    """

    _CONFIG = MalphaBoosted

    def __init__(
        self,
        epsilon: float | None = 1.0,
        *,
        n_trees: int = MalphaBoosted.n_trees,
        depth: int = MalphaBoosted.depth,
        alpha: float | str = MalphaBoosted.alpha,
        beta_tree: float = MalphaBoosted.beta_tree,
        clamp: float = MalphaBoosted.clamp,
        zeta: float = MalphaBoosted.zeta,
        oc_link_alpha: float = MalphaBoosted.oc_link_alpha,
        leaf_mechanism: str = MalphaBoosted.leaf_mechanism,
        beta_mode: str | None = MalphaBoosted.beta_mode,
        leaf_composition: str | None = MalphaBoosted.leaf_composition,
        oc_alpha: str | None = MalphaBoosted.oc_alpha,
        beta_oc: float = MalphaBoosted.beta_oc,
        beta_share: float = MalphaBoosted.beta_share,
        size_share: float = MalphaBoosted.size_share,
        budget: str = MalphaBoosted.budget,
        bounds: Any = None,
        classes: Sequence[Any] | None = None,
        n_bins: int = 10,
        missing: str | Sequence[str] = "error",
        on_out_of_bounds: str = "clip",
        neighbouring: str = "add_remove",
        public_size: int | None = None,
        delta: float = 0.0,
        random_state: int | None = None,
        accountant: BudgetAccountant | None = None,
    ) -> None:
        _store_params(self, locals())

    def decision_function(self, X: Any) -> np.ndarray:
        """The boosted score ``H(x) = Σ_t β_t·h_t(x)`` (positive: ``classes_[1]``)."""
        codes = self._codes(X)
        return np.asarray(boosted_decision(self.model_.params, codes))

class DPSmoothBoostClassifier(_DPClassifier):
    """Private smooth boosting (LazyBregBoost with DP-1R stumps, DP-TopDown trees or Gaussian
    halfspaces; binary labels).

    Parameters are those of :func:`dpjax.fit` with ``method="smooth_boost"`` (see
    :class:`dpjax.learners.SmoothBoost`). ``decision_function`` gives the mean vote in
    ``[−1, 1]`` (positive: ``classes_[1]``).
    """

    _CONFIG = SmoothBoost

    def __init__(
        self,
        epsilon: float | None = 1.0,
        *,
        weak_learner: str = SmoothBoost.weak_learner,
        n_rounds: int = SmoothBoost.n_rounds,
        kappa: float = SmoothBoost.kappa,
        learning_rate: float = SmoothBoost.learning_rate,
        min_signal: float = SmoothBoost.min_signal,
        size_share: float = SmoothBoost.size_share,
        tree_splits: int = SmoothBoost.tree_splits,
        calibration: str = SmoothBoost.calibration,
        accounting: str = SmoothBoost.accounting,
        bounds: Any = None,
        classes: Sequence[Any] | None = None,
        n_bins: int = 10,
        missing: str | Sequence[str] = "error",
        on_out_of_bounds: str = "clip",
        neighbouring: str = "add_remove",
        public_size: int | None = None,
        delta: float = 0.0,
        random_state: int | None = None,
        accountant: BudgetAccountant | None = None,
    ) -> None:
        _store_params(self, locals())

    def decision_function(self, X: Any) -> np.ndarray:
        """The mean vote ``(1/T)·Σ_t h_t(x)`` (positive: ``classes_[1]``)."""
        codes = self._codes(X)
        return np.asarray(smooth_boost_decision(self.model_.params,
                                                self.model_.config.predict_fn, codes))


class DPRuleListClassifier(_DPClassifier):
    """A DP greedy rule list (Ly et al.; binary labels): ``if … then … else …`` over literals of
    the public codes.

    Parameters are those of :func:`dpjax.fit` with ``method="rule_list"`` (see
    :class:`dpjax.learners.RuleListLearner`); ``describe()`` gives the list as text.
    """

    _CONFIG = RuleListLearner

    def __init__(
        self,
        epsilon: float | None = 1.0,
        *,
        max_rules: int = RuleListLearner.max_rules,
        max_card: int = RuleListLearner.max_card,
        selection: str = RuleListLearner.selection,
        calibration: str = RuleListLearner.calibration,
        min_support: float = RuleListLearner.min_support,
        confidence: Any = RuleListLearner.confidence,
        bounds: Any = None,
        classes: Sequence[Any] | None = None,
        n_bins: int = 10,
        missing: str | Sequence[str] = "error",
        on_out_of_bounds: str = "clip",
        neighbouring: str = "add_remove",
        public_size: int | None = None,
        delta: float = 0.0,
        random_state: int | None = None,
        accountant: BudgetAccountant | None = None,
    ) -> None:
        _store_params(self, locals())
