"""Forest learners: random trees (Bojarski et al.) and the RF-L / RF-E baselines of Nock &
Henecka (§6.5), all fitted by :func:`dpjax.ensembles.random_trees.forest.fit`."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import numpy as np

from dpjax.ensembles.random_trees import forest
from dpjax.ensembles.random_trees.forest import (
    FOREST_BUDGETS,
    LEAF_ESTIMATES,
    VOTING,
    forest_predict,
    forest_proba,
)
from dpjax.learner import (
    FitContext,
    Learner,
    choice,
    hyper,
    non_negative_float,
    positive_int,
    register,
    traced,
    unit_interval,
)
from dpjax.mechanisms.exact import LANE_BYTES
from dpjax.privacy import fixed_point
from dpjax.trees.dense import MAX_DEPTH, DenseTree
from dpjax.trees.describe import class_scores_text, describe_dense_trees, tree_importances
from dpjax.trees.grow import THRESHOLD_RANGES


@dataclasses.dataclass(frozen=True)
class Forest(Learner):
    """Shared fields and rules of the forests (random structures, noisy leaf statistics).

    With ``budget="parallel"`` and ``prior_share > 0`` (the default) the forest first releases
    the class counts with ``prior_share`` of ``ε``: the released size ``ñ`` and a class prior.
    Each leaf gets pseudo-counts of the prior, ``shrinkage`` times the Laplace scale of its
    tree's counts (traced), so a leaf whose evidence is under the noise follows the prior; and
    where an average leaf's ``ñ/2^d`` records are under ``min_signal`` times that scale (the
    public schedule, :func:`~dpjax.ensembles.random_trees.forest.forest_learns`, traced) the
    leaves' budget goes to the class counts instead and the forest predicts the released
    majority (``describe()`` says so). The leaves are released at a public depth ``k <= d``
    (:func:`~dpjax.ensembles.random_trees.forest.effective_depth`: the deepest whose groups
    hold ``depth_signal`` times that scale, traced; 0 keeps ``d``): each leaf shares its
    depth-``k`` ancestor's released counts. ``min_signal`` and ``shrinkage`` were chosen on the
    shared datasets (``experiments/learner_defaults.py``) so that no default falls below the
    majority class. ``depth_signal`` is off by default: at 2 with ``min_signal=0``,
    random_trees gains on the shared datasets (mean gain over the majority 0.1246 vs 0.1145,
    banknote at ε = 0.1 0.68 instead of the fallback's 0.56) but loses banknote at ε = 1 (0.89
    vs 0.94). ``budget="paper"`` (or ``prior_share=0``) has no prior."""

    cpu_compile: ClassVar[str] = "quick"

    n_trees: int = hyper(11, positive_int())
    depth: int = hyper(12, positive_int(MAX_DEPTH))
    voting: str = hyper("threshold", choice(*VOTING))
    noise: str = hyper("laplace", choice("laplace"))
    leaf_estimate: str = hyper("smoothed", choice(*LEAF_ESTIMATES))
    budget: str = hyper("parallel", choice(*FOREST_BUDGETS))
    prior_share: float = hyper(0.1, unit_interval(open_low=False, open_high=True))
    min_signal: float = traced(0.003, non_negative_float)
    shrinkage: float = traced(0.3, non_negative_float)
    depth_signal: float = traced(0.0, non_negative_float)
    threshold_range: str = hyper("global", choice(*THRESHOLD_RANGES))
    takes_weights: ClassVar[bool] = True
    pads_rows: ClassVar[bool] = True        # a padding row's one-hot label counts nowhere

    def fit(self, key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array | None,
            context: FitContext, **traced: jax.Array) -> tuple[DenseTree, Any]:
        return forest.fit(self, key, codes, y, epsilon, context, traced)

    def proba(self, params: DenseTree, codes: jax.Array) -> jax.Array:
        return forest_proba(params, codes, self.voting)

    def predict(self, params: DenseTree, codes: jax.Array, key: jax.Array | None) -> jax.Array:
        return forest_predict(params, codes, self.voting, key)

    @property
    def needs_predict_key(self) -> bool:
        return self.voting == "probabilistic"

    def dense_trees(self, params: DenseTree) -> DenseTree:
        return params

    def describe(self, params: DenseTree, spec: Any, classes: tuple) -> str:
        """The trees as nested rules (:func:`~dpjax.trees.describe.tree_lines`: tests that
        cannot split left out), leaves with their released class scores (a deeper subtree: its
        reachable leaves' mean scores and how many each class leads); the majority fallback
        (every leaf the same scores) said first."""
        leaf = np.asarray(params.leaf)
        if leaf.size and np.all(leaf == leaf.reshape(-1, leaf.shape[-1])[0]):
            return ("Majority fallback: every leaf holds the same class scores, "
                    f"{class_scores_text(leaf.reshape(-1, leaf.shape[-1])[:1], classes)}, so "
                    "the forest predicts one class distribution whatever the features. With DP "
                    "and the class prior this is the public schedule's choice (at this budget "
                    "and released size the leaves could not beat their noise): the distribution "
                    "released from the class counts.")
        return describe_dense_trees(
            np.asarray(params.feature), np.asarray(params.threshold), spec,
            lambda t, leaves: class_scores_text(leaf[t, leaves], classes),
            title=f"{self.voting} vote of {leaf.shape[0]} random trees of depth {self.depth} "
                  "(released leaf class scores):")

    def importances(self, params: DenseTree, spec: Any) -> np.ndarray:
        return tree_importances(params.feature, params.leaf, spec.n_features)

    def footprint(self, m: int, n: int, max_codes: int, n_classes: int) -> float:
        """Routing every row through every tree (int32 leaves and temporaries) and the noisy
        leaf counts (a sampler lane each)."""
        leaves = 2**self.depth
        return 16.0 * self.n_trees * m + float(LANE_BYTES) * self.n_trees * leaves * n_classes


@register(params=(DenseTree,), estimator="DPRandomTreesClassifier")
@dataclasses.dataclass(frozen=True)
class RandomTrees(Forest):
    """Bojarski et al.'s DP random decision trees: random structures, noisy leaf class counts
    (exact discrete Laplace, one release per tree), smoothed leaf estimates, threshold
    averaging."""

    name: ClassVar[str] = "random_trees"


@register(params=(DenseTree,), estimator="DPRandomForestLaplaceClassifier")
@dataclasses.dataclass(frozen=True)
class RFLaplace(Forest):
    """RF-L (Nock & Henecka §6.5): 21 random trees, each leaf's label the argmax of its
    Laplace-noised counts, majority vote. A tree's leaves partition its records, so they are
    released together at ``ε/T`` (parallel composition); ``budget="paper"`` is the paper's
    ``ε/(T·2^d)`` per leaf."""

    name: ClassVar[str] = "rf_laplace"
    n_trees: int = hyper(21, positive_int())
    depth: int = hyper(4, positive_int(MAX_DEPTH))
    voting: str = hyper("majority", choice(*VOTING))
    leaf_estimate: str = hyper("label", choice(*LEAF_ESTIMATES))
    min_signal: float = traced(0.3, non_negative_float)
    shrinkage: float = traced(1.0, non_negative_float)
    depth_signal: float = traced(0.0, non_negative_float)


@register(params=(DenseTree,), estimator="DPRandomForestExponentialClassifier")
@dataclasses.dataclass(frozen=True)
class RFExponential(RFLaplace):
    """RF-E (Nock & Henecka §6.5): as RF-L, each leaf's label drawn by the exponential-mechanism
    family (permute-and-flip) on its counts."""

    name: ClassVar[str] = "rf_exponential"
    noise: str = hyper("exponential", choice("exponential"))
    shrinkage: float = traced(0.0, non_negative_float)

    def weighted_row_limit(self) -> int | None:
        """Weighted counts are fixed point (``2**8`` units a record) and the exponential
        selection caps a leaf's count at :data:`~dpjax.ensembles.random_trees.forest.
        COUNT_CAP` (``2**30`` units): 4,194,303 weighted rows at most, so the cap never
        binds."""
        return forest.COUNT_CAP // fixed_point.UNIT - 1
