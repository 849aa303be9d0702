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
grid searches. Note that tuning hyper-parameters on private data spends privacy that no ledger
sees (the paper's protocol does it too): tune on public or held-out data you may spend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.utils.validation import check_is_fitted
except ImportError as error:  # pragma: no cover - exercised only without scikit-learn
    raise ImportError("dpjax.sklearn needs scikit-learn: pip install 'dpjax[sklearn]'") from error

from dpjax.api import Model, fit
from dpjax.ensembles import boosted_decision
from dpjax.ensembles.newton import newton_decision
from dpjax.ensembles.smooth_boost import smooth_boost_decision
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


def _store_params(estimator: BaseEstimator, arguments: dict[str, Any]) -> None:
    """Keep every ``__init__`` argument as an attribute of the same name (the scikit-learn
    convention ``get_params`` / ``clone`` rely on), with no validation or conversion."""
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


class _DPClassifier(ClassifierMixin, BaseEstimator):
    """Shared ``fit`` / ``predict`` of the estimators: each subclass names its learner config
    (whose fields give the hyper-parameters' defaults and names); the data arguments are
    common."""

    _CONFIG: type[Learner]

    def fit(self, X: Any, y: Any) -> _DPClassifier:
        mine = self.get_params()
        hyper = {name: mine[name] for name in self._CONFIG().hyperparams if name in mine}
        model: Model = fit(
            X, y, method=self._CONFIG.name, epsilon=self.epsilon, key=self.random_state,
            bounds=self.bounds, classes=self.classes, n_bins=self.n_bins, missing=self.missing,
            on_out_of_bounds=self.on_out_of_bounds, neighbouring=self.neighbouring,
            public_size=self.public_size, delta=self.delta, **hyper)
        self.model_ = model
        self.classes_ = np.asarray(model.classes)
        self.n_features_in_ = model.spec.n_features
        self.privacy_ = model.privacy
        return self

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.model_.predict(X, key=self.random_state)

    def predict_proba(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(X)


class DPRandomTreesClassifier(_DPClassifier):
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
    ) -> None:
        _store_params(self, locals())

    _CONFIG = RandomTrees


class _RandomForestBaseline(_DPClassifier):
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
    ) -> None:
        _store_params(self, locals())

    def decision_function(self, X: Any) -> np.ndarray:
        """The boosted score ``F(x)`` (positive: ``classes_[1]``)."""
        check_is_fitted(self, "model_")
        return np.asarray(newton_decision(self.model_.params, self.model_.encode(X)))


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
    ) -> None:
        _store_params(self, locals())

    def decision_function(self, X: Any) -> np.ndarray:
        """The boosted score ``H(x) = Σ_t β_t·h_t(x)`` (positive: ``classes_[1]``)."""
        check_is_fitted(self, "model_")
        return np.asarray(boosted_decision(self.model_.params, self.model_.encode(X)))

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
    ) -> None:
        _store_params(self, locals())

    def decision_function(self, X: Any) -> np.ndarray:
        """The mean vote ``(1/T)·Σ_t h_t(x)`` (positive: ``classes_[1]``)."""
        check_is_fitted(self, "model_")
        predict = self.model_.config.predict_fn
        return np.asarray(smooth_boost_decision(self.model_.params, predict,
                                                self.model_.encode(X)))



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
    ) -> None:
        _store_params(self, locals())

    def describe(self) -> str:
        """The fitted rule list as ``if … then …`` lines with its released counts."""
        check_is_fitted(self, "model_")
        model = self.model_
        return model.config.describe(model.params, model.spec, model.classes)
