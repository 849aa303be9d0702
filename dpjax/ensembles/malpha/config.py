"""Mα-boost (Nock & Henecka): its config, fitted by :func:`dpjax.ensembles.malpha.boosting.fit`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import numpy as np

from dpjax.data import DataDependentWarning
from dpjax.data.caller import warn
from dpjax.ensembles.malpha import boosting
from dpjax.ensembles.malpha.leaves import (
    BETA_MODES,
    LEAF_COMPOSITIONS,
    LEAF_MECHANISMS,
    check_modes,
)
from dpjax.ensembles.malpha.model import (
    MalphaModel,
    malpha_decision,
    malpha_predict,
    malpha_proba,
)
from dpjax.ensembles.malpha.tree import (
    OBJECTIVE_CALIBRATION,
    OC_ALPHA,
    SPLIT_BUDGETS,
    resolve_oc_alpha,
)
from dpjax.learner import (
    FitContext,
    Learner,
    choice,
    hyper,
    non_negative_float,
    or_literal,
    positive_float,
    positive_int,
    register,
    traced,
    unit_interval,
)
from dpjax.mechanisms.exact import LANE_BYTES
from dpjax.privacy import fixed_point
from dpjax.trees.dense import MAX_DEPTH, DenseTree
from dpjax.trees.describe import describe_dense_trees, tree_importances, values_text
from dpjax.trees.oblivious import wide_row_limit

_UNIT = unit_interval()
NATURAL_MODES = {"counts": ("post", "parallel"), "value": ("fold", "sequential")}
"""The ``(beta_mode, leaf_composition)`` a leaf mechanism gets when they are left ``None``."""
_SHARE = unit_interval(open_high=True)


def _zeta(name: str, value: Any) -> float:
    value = _SHARE(name, value)
    if value >= 0.5:
        raise ValueError(f"{name} must be in (0, 0.5), got {value}")
    return value


@register(params=(MalphaModel, DenseTree), estimator="DPMalphaBoostedClassifier")
@dataclasses.dataclass(frozen=True)
class MalphaBoosted(Learner):
    """Mα-boost: boosted DP decision trees with the Mα loss (binary labels), ``n_trees`` trees
    of depth ``depth`` (:mod:`dpjax.ensembles.malpha.boosting`, Algorithm 1). ``alpha`` is a
    number in ``(0, 1]`` or ``"oc"`` (objective calibration, :mod:`dpjax.ensembles.malpha.tree`
    §5; ``oc_alpha``: ``"private"`` per-level noisy calibration or the paper's ``"exact"``, not
    private; ``None``: private under DP); ``alpha`` and ``beta_tree`` (each tree's share of its
    budget spent on splits) are traced (sweepable). ``clamp`` is ``M`` (DP leaf values are
    clamped to ``[−M, M]``), ``zeta`` the clamp ``ζ`` of ``q`` before the link, ``oc_link_alpha``
    the link's ``α`` under O.C; ``beta_oc`` the O.C releases' share of the split budget,
    ``beta_share`` the share of the leaves' budget for ``β̃_t`` (``beta_mode="laplace"``),
    ``size_share`` the noisy row count's share of ``ε`` (when the size is not public). ``budget``:
    the nodes of a level compose in ``"parallel"`` (default), or sequentially as in the paper
    (``"paper"``, paper (18); the reproduction's mode). The default leaves are the noisy
    weighted class sums with ``β_t`` computed from them (``leaf_mechanism="counts"``,
    ``beta_mode="post"``), the leaves of a tree composed in parallel (``None`` for ``beta_mode``
    and ``leaf_composition`` picks the leaf mechanism's natural pair: ``"post"``/``"parallel"``
    for counts, ``"fold"``/``"sequential"`` for values, :data:`NATURAL_MODES`): the paper's
    ``"value"``/``"fold"`` leaves with sequential leaf budgets are pure noise at ``ε <= 10`` on
    thousands of rows (``experiments/results/private_boosting.md``: qsar at ``ε = 1``, ``T = 20``,
    ``d = 3``: 0.41, below the majority rate 0.66; counts/post/parallel 0.65).

    With ``budget="parallel"`` and ``prior_share > 0`` (the default) the fit first releases the
    class counts with ``prior_share`` of ``ε`` (its size ``ñ``; no separate row count), then
    boosts only the ``T' <= n_trees`` trees whose leaves hold on average ``min_signal`` times
    the Laplace scale of their noisy sums (the public schedule
    :func:`~dpjax.ensembles.malpha.boosting.affordable_trees`, traced), each leaf's sums
    joined by ``shrinkage`` times that scale in pseudo-records of its round's released balance
    (traced); where no tree is affordable the trees' budget releases the class counts again
    and the model is their majority (``describe()`` says so). ``min_signal`` and
    ``shrinkage`` were chosen on the shared datasets (``experiments/learner_defaults.py``).
    ``budget="paper"`` or ``prior_share=0`` boosts every tree after a noisy row count."""

    name: ClassVar[str] = "malpha"
    binary: ClassVar[bool] = True
    pads_rows: ClassVar[bool] = True    # class_stats zeroes a padding row; the size counts labels
    n_trees: int = hyper(10, positive_int())
    depth: int = hyper(4, positive_int(MAX_DEPTH))
    alpha: float | str = traced("oc", or_literal("oc", _UNIT))
    beta_tree: float = traced(0.5, _SHARE)
    clamp: float = hyper(10.0, positive_float)
    zeta: float = hyper(1e-4, _zeta)
    oc_link_alpha: float = hyper(1.0, _UNIT)
    leaf_mechanism: str = hyper("counts", choice(*LEAF_MECHANISMS))
    beta_mode: str | None = hyper(None, or_literal(None, choice(*BETA_MODES)))
    leaf_composition: str | None = hyper(None, or_literal(None, choice(*LEAF_COMPOSITIONS)))
    oc_alpha: str | None = hyper(None, or_literal(None, choice(*OC_ALPHA)))
    beta_oc: float = hyper(0.1, _SHARE)
    beta_share: float = hyper(0.1, _SHARE)
    size_share: float = hyper(0.05, _SHARE)
    budget: str = hyper("parallel", choice(*SPLIT_BUDGETS))
    prior_share: float = hyper(0.1, unit_interval(open_low=False, open_high=True))
    min_signal: float = traced(5.0, non_negative_float)
    shrinkage: float = traced(3.0, non_negative_float)

    @property
    def leaf_modes(self) -> dict[str, str]:
        """``leaf_mechanism``, ``beta_mode`` and ``leaf_composition``, the ``None`` ones resolved
        to the leaf mechanism's natural pair."""
        beta_mode, composition = NATURAL_MODES[self.leaf_mechanism]
        return {"leaf_mechanism": self.leaf_mechanism,
                "beta_mode": beta_mode if self.beta_mode is None else self.beta_mode,
                "leaf_composition": (composition if self.leaf_composition is None
                                     else self.leaf_composition)}

    def validate(self) -> None:
        check_modes(**self.leaf_modes)

    def encode_traced(self, name: str) -> float:
        """``alpha="oc"`` is the traced value :data:`OBJECTIVE_CALIBRATION` (``-1``)."""
        if name == "alpha" and self.alpha == "oc":
            return OBJECTIVE_CALIBRATION
        return super().encode_traced(name)

    def row_limit(self, private: bool, n_features: int, regression: bool = False
                  ) -> int | None:
        """Private fits sum fixed-point weights (:mod:`dpjax.privacy.fixed_point`) exactly, past
        :data:`~dpjax.privacy.fixed_point.MAX_ROWS` rows in two limbs, up to
        :data:`~dpjax.privacy.fixed_point.WIDE_MAX_ROWS` (from depth 18 fewer: a level's
        chunked histogram has ``chunks·2**(d−1)`` nodes of up to 256 codes, an int32 segment
        index, :func:`dpjax.trees.oblivious.wide_row_limit`); exact O.C
        (``oc_alpha="exact"``, whatever ``alpha``, a traced value) sums its errors in int32, up
        to ``MAX_ROWS``."""
        if not private:
            return None
        if self.oc_alpha == "exact":
            return fixed_point.MAX_ROWS
        return min(fixed_point.WIDE_MAX_ROWS, wide_row_limit(self.depth))

    def fit(self, key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array | None,
            context: FitContext, **traced: jax.Array) -> tuple[MalphaModel, Any]:
        return boosting.fit(self, key, codes, y, epsilon, context, **traced)

    def proba(self, params: MalphaModel, codes: jax.Array) -> jax.Array:
        return malpha_proba(params, codes)

    def predict(self, params: MalphaModel, codes: jax.Array,
                key: jax.Array | None) -> jax.Array:
        return malpha_predict(params, codes)

    def decision(self, params: MalphaModel, codes: jax.Array) -> jax.Array:
        """``H(x) = Σ_t β_t·h_t(x)`` (positive: the second class)."""
        return malpha_decision(params, codes)

    def dense_trees(self, params: MalphaModel) -> DenseTree:
        return params.trees

    def describe(self, params: MalphaModel, spec: Any, classes: tuple) -> str:
        """``H(x) = Σ_t β_t·h_t(x)`` (positive: ``classes[1]``): each tree with its β and its
        released leaf values."""
        leaf, beta = np.asarray(params.trees.leaf), np.asarray(params.beta)
        prior = float(params.prior)
        if not beta.any():
            chosen = classes[1] if prior >= 0 else classes[0]
            return ("Majority fallback: no tree, only the score of the released class counts, "
                    f"H_0 = {prior:.4g}, so the model predicts {chosen} whatever the features. "
                    "With DP this is the public schedule's choice (at this budget and released "
                    "size a tree's leaves are under their noise, so the trees' budget released "
                    "the class counts again).")
        boosted = int(np.flatnonzero(beta).max(initial=-1)) + 1   # the schedule's T' trees
        start = f"H_0 = {prior:.4g} + " if prior else ""
        return describe_dense_trees(
            np.asarray(params.trees.feature)[:boosted],
            np.asarray(params.trees.threshold)[:boosted], spec,
            lambda t, leaves: values_text(leaf[t, leaves]),
            title=f"H(x) = {start}sum of beta_t * h_t(x) over {boosted} trees of depth "
                  f"{self.depth} (positive: {classes[1]}):",
            tree_titles=[f"tree {t + 1}, beta = {beta[t]:.4g}" for t in range(boosted)])

    def importances(self, params: MalphaModel, spec: Any) -> np.ndarray:
        return tree_importances(params.trees.feature, params.trees.leaf, spec.n_features,
                                weight=params.beta)

    def not_private(self) -> list[str]:
        """The paper's modes that read the data outside any mechanism (spec §4.5, §5.2)."""
        leaks = []
        if self.alpha == "oc" and resolve_oc_alpha(self.oc_alpha, True) == "exact":
            leaks.append("O.C α from exact weighted errors (paper)")
        if self.leaf_modes["beta_mode"] == "paper_fast":
            leaks.append("β_t from the data without noise (paper_fast)")
        for what in leaks:
            warn(f"malpha: {what} reads the training data outside any mechanism; the "
                 "model is NOT differentially private (the ledger says so)",
                 DataDependentWarning)
        return leaks

    def footprint(self, m: int, n: int, max_codes: int, n_classes: int) -> float:
        """The deepest level's histogram (one per chunk of rows past
        :data:`~dpjax.privacy.fixed_point.MAX_ROWS`), candidate statistics and selection lanes,
        the per-example statistics broadcast over features, and the stacked trees."""
        nodes = 2 ** (self.depth - 1)
        return (16.0 * m * n + 8.0 * fixed_point.chunk_count(m) * nodes * n * max_codes
                + float(24 + LANE_BYTES) * nodes * n * max_codes
                + 16.0 * self.n_trees * 2**self.depth)
