"""Private Newton boosting, the default ``boosted`` learner: its config, fitted by
:func:`dpjax.ensembles.newton.boosting.fit`."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import numpy as np

from dpjax.data.describe import code_runs, wrap_items
from dpjax.ensembles.newton import boosting, rounds
from dpjax.ensembles.newton.model import (
    NewtonBoostedModel,
    newton_decision,
    newton_predict,
    newton_proba,
)
from dpjax.ensembles.newton.rounds import RESIDUAL_CLIP_FLOOR
from dpjax.ensembles.newton.schedule import (
    NOISES,
    SHAPES,
    Frame,
    Plan,
    Schedule,
    check_multiclass,
    max_rounds,
    schedule,
    settle,
)
from dpjax.learner import (
    FitContext,
    Learner,
    between,
    choice,
    hyper,
    positive_float,
    positive_int,
    register,
    traced,
    unit_interval,
)
from dpjax.privacy import fixed_point
from dpjax.trees.dense import MAX_DEPTH, DenseTree
from dpjax.trees.describe import (
    additive_terms,
    describe_dense_trees,
    tree_importances,
    values_text,
)
from dpjax.trees.oblivious import wide_row_limit


def class_values(values: np.ndarray) -> str:
    """One move per class, ``(+0.12, -0.3, +0.05)``."""
    return "(" + ", ".join(f"{v:+.3g}" for v in np.asarray(values).reshape(-1)) + ")"


def leaf_moves_text(moves: np.ndarray, by_class: bool) -> str:
    """Leaf moves ``[k]`` (``[k, C]`` with ``by_class``) of one leaf or several (their mean and
    range; per class, their mean)."""
    if not by_class:
        return values_text(moves)
    moves = np.asarray(moves).reshape(-1, np.shape(moves)[-1])
    return class_values(moves[0]) if len(moves) == 1 else "mean " + class_values(moves.mean(0))


@register(params=(NewtonBoostedModel, DenseTree), estimator="DPBoostedTreesClassifier")
@dataclasses.dataclass(frozen=True)
class Boosted(Learner):
    """Private Newton boosting of the logistic loss (two classes; the softmax loss for more
    declared ``classes``, Laplace rounds of the cyclic or random shape): a released prior (its
    log-odds read each noisy class count floored at two standard deviations of its noise), then
    rounds of cells (``shape="cyclic"``: one feature's codes per round, as DP-EBM, a first pass
    over every feature then ``passes − 1`` passes over the ``focus`` features of largest
    released gain; ``"random"``: the leaves of a random-structure tree; ``"oblivious"``: the
    ``2**depth`` leaves of a private oblivious tree, each level's split drawn by
    permute-and-flip with a share ``split_share`` of the round, at most ``oblivious_trees``;
    ``"auto"``, the default: oblivious trees where the budget affords all ``oblivious_trees``
    of them, or two on 16 features or more; else the cyclic shape unless its public schedule
    cannot afford one pass over the features, then random trees) whose noisy gradient/hessian
    sums give shrunk Newton moves. Numeric bins are merged into coarser steps where the data is
    small for the noise (``cell_signal``).
    ``learning_rate``, ``regularisation``, ``min_signal``, ``cell_signal`` and
    ``split_share`` are traced
    (sweepable); the number of rounds is a public function of ``ε``, ``δ``, the feature count
    and the released size (:func:`dpjax.ensembles.newton.schedule.active_rounds`).
    ``prior_share`` is the share of ``ε`` for the released prior; ``n_trees`` and ``depth``
    size the random shape's trees. ``noise="laplace"`` (the default) draws exact discrete
    Laplace noise (pure ``ε``-DP at ``delta = 0``; at ``delta > 0`` the rounds take the split
    of the optimal composition, :mod:`dpjax.privacy.optimal`); ``"gaussian"`` (``delta > 0``)
    the exact discrete Gaussian; ``"auto"``
    (``delta > 0``) the Gaussian where its public plan pays, decided by a scout count
    (:mod:`dpjax.ensembles.newton.boosting`). ``individual`` ``κ > 1`` (add/remove only) turns
    on individual privacy accounting (Feldman & Zrnic 2021; ``docs/individual_filter.md``):
    every round gets ``κ`` times its sequential share and each record's own loss, read off its
    clipped gradient and hessian, is filtered so that it never exceeds the rounds' budget.

    With ``task="regression"`` (:func:`dpjax.fit`, a public ``y_bounds``) it boosts the
    squared loss of the target scaled to ``[−1, 1]``, its residuals clipped at
    ``residual_clip`` (traced; in half-ranges of ``y_bounds``: the Huber loss of that
    threshold), Laplace rounds of the cyclic or random shape after a released mean; a round
    moves a cell by at most ``residual_clip`` half-ranges, so an effect much larger than that
    is under-fitted in one pass (raise it where effects are large for the range). Chosen on
    abalone, winewhite and winered (``experiments/results/regression_boosting.md``)."""

    name: ClassVar[str] = "boosted"
    cpu_compile: ClassVar[str] = "lean"
    default_bins: ClassVar[int] = 32     # merged where the data is small (cell_signal)
    regression: ClassVar[bool] = True       # task="regression": the clipped squared loss
    pads_rows: ClassVar[bool] = True        # gradient_stats zeroes a padding row's (g, h)
    shape: str = hyper("auto", choice(*SHAPES))
    n_trees: int = hyper(20, positive_int(1024))
    oblivious_trees: int = hyper(8, positive_int(1024))
    depth: int = hyper(4, positive_int(MAX_DEPTH))
    learning_rate: float = traced(1.0, positive_float)
    regularisation: float = traced(1.0, positive_float)
    min_signal: float = traced(4.0, positive_float)
    cell_signal: float = traced(16.0, positive_float)
    split_share: float = traced(0.7, unit_interval(open_high=True))
    residual_clip: float = traced(0.25, between(RESIDUAL_CLIP_FLOOR, 1.0))
    passes: int = hyper(3, positive_int(64))
    focus: int = hyper(6, positive_int(4096))
    prior_share: float = hyper(0.1, unit_interval(open_high=True))
    noise: str = hyper("laplace", choice(*NOISES))
    individual: float = hyper(1.0, positive_float)

    @property
    def composition(self) -> str:
        return "optimal"

    def validate(self) -> None:
        if self.individual < 1.0:
            raise ValueError(f"individual must be at least 1 (1: no individual accounting), "
                             f"got {self.individual!r}")
        if self.individual > 1.0 and self.noise != "laplace":
            raise ValueError("individual accounting (individual > 1) filters pure Laplace "
                             "rounds: use noise='laplace'")

    def check_regression(self, private: bool) -> None:
        check_multiclass(self, private, "regression")

    def check_request(self, private: bool, delta: float) -> None:
        if private and self.noise == "gaussian" and delta <= 0.0:
            raise ValueError("noise='gaussian' composes in zCDP and needs delta > 0 (e.g. "
                             "delta=1e-6); with delta=0 use noise='laplace'")

    def row_limit(self, private: bool, n_features: int, regression: bool = False
                  ) -> int | None:
        """Private fits sum fixed-point gradients (:mod:`dpjax.privacy.fixed_point`) exactly,
        past :data:`~dpjax.privacy.fixed_point.MAX_ROWS` rows in two limbs (the rounds' cell
        sums, oblivious trees' level utilities, the individual filter's contributions, a
        regression prior's target sum), up to
        :data:`~dpjax.privacy.fixed_point.WIDE_MAX_ROWS`; oblivious trees of 18 levels or
        more, private or not, fewer (:func:`dpjax.trees.oblivious.wide_row_limit`)."""
        limits = [fixed_point.WIDE_MAX_ROWS] if private else []
        if self.may_grow_oblivious(private, regression):
            limits.append(wide_row_limit(self.depth))
        return min(limits, default=None)

    def fit(self, key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array | None,
            context: FitContext, **traced: jax.Array) -> tuple[NewtonBoostedModel, Any]:
        return boosting.fit(self, key, codes, y, epsilon, context, **traced)

    def schedule(self, key: jax.Array, y: jax.Array, epsilon: jax.Array | None,
                 context: FitContext, **traced: jax.Array) -> tuple[Schedule, Any]:
        """The prior (and the scout, the fallback's second prior) and the public schedule read
        off it (:func:`~dpjax.ensembles.newton.schedule.schedule`)."""
        frame = Frame.of(self, len(context.n_codes_per_feature), context, epsilon is not None)
        return schedule(frame, key, y, epsilon, self.resolve_traced(traced))

    def plan(self, released: Schedule, context: FitContext, private: bool,
             batched: bool = False) -> Plan:
        """The shape and noise a released schedule took
        (:func:`~dpjax.ensembles.newton.schedule.settle`)."""
        return settle(Frame.of(self, len(context.n_codes_per_feature), context, private),
                      released, batched)

    def plan_text(self, plan: Plan) -> str:
        """The shape and noise a fit's public schedule took (its rounds: the ledger's; none
        where the ledger shows the fallback's second release of the prior), and whether
        ``shape="auto"`` chose the shape: the ledger's plan line."""
        shape = {"cyclic": "cyclic rounds (one feature's bins each)",
                 "random": "random-structure trees", "oblivious": "private oblivious trees"}
        how = ("; the shape chosen by shape='auto' from epsilon, delta, the features, the "
               "classes and the released size" if self.shape == "auto" else "")
        return f"{shape[plan.shape]}, {plan.noise.capitalize()} noise{how}"

    def grow(self, plan: Plan, key: jax.Array, codes: jax.Array, y: jax.Array,
             epsilon: jax.Array | None, context: FitContext, released: Schedule,
             **traced: jax.Array) -> tuple[NewtonBoostedModel, Any]:
        """The rounds of ``plan`` (:func:`~dpjax.ensembles.newton.rounds.grow`)."""
        frame = Frame.of(self, codes.shape[1], context, epsilon is not None)
        return rounds.grow(frame, plan, key, codes, y, released, context.structure_key,
                           self.resolve_traced(traced))

    def decision(self, params: NewtonBoostedModel, codes: jax.Array) -> jax.Array:
        """``F(x)``: the log-odds of the second class ``[m]``, or with more than two classes
        the class scores ``[m, C]`` (scikit-learn's ``decision_function`` convention); for
        regression the prediction in the target's units ``[m]``."""
        return newton_decision(params, codes)

    def dense_trees(self, params: NewtonBoostedModel) -> DenseTree:
        return params.trees

    def proba(self, params: NewtonBoostedModel, codes: jax.Array) -> jax.Array:
        return newton_proba(params, codes)

    def predict(self, params: NewtonBoostedModel, codes: jax.Array,
                key: jax.Array | None) -> jax.Array:
        return newton_predict(params, codes)

    def describe(self, params: NewtonBoostedModel, spec: Any, classes: tuple) -> str:
        """``F(x)``, the log-odds of ``classes[1]`` (or one score per class): the released
        prior, each feature's moves per code (cyclic rounds; consecutive bins of one move
        merged into a range, wrapped at 100 characters) and the trees' leaf moves
        (:func:`~dpjax.trees.describe.tree_lines`)."""
        prior, table = np.asarray(params.prior), np.asarray(params.table)
        if prior.ndim:
            lines = ["class scores F_c(x), P(c | x) = softmax_c F(x); prior: " + ", ".join(
                f"{c} {v:+.4g}" for c, v in zip(classes, prior, strict=True))]
        elif not classes:       # regression: the moves are in the target's units
            lines = [f"prediction: y(x) = {float(prior):.4g} (prior: the released mean)"]
        else:
            lines = [f"log-odds of {classes[1]}: F(x) = {float(prior):+.4g} (prior)"]
        for f in np.flatnonzero(np.abs(table.reshape(table.shape[0], -1)).sum(1) > 0).tolist():
            moves = [class_values(table[f, c]) if prior.ndim else f"{table[f, c]:+.3g}"
                     for c in range(int(spec.n_codes[f]))]
            lines += wrap_items(f"  + {spec.names[f]}:", code_runs(spec, f, moves))
        leaf = np.asarray(params.trees.leaf)
        if np.any(leaf != 0):
            trees = describe_dense_trees(
                np.asarray(params.trees.feature), np.asarray(params.trees.threshold), spec,
                lambda t, leaves: leaf_moves_text(leaf[t, leaves], bool(prior.ndim)),
                title=f"+ {leaf.shape[0]} trees of depth {self.depth} (leaf moves):")
            lines += ["  " + line for line in trees.splitlines()]
        return "\n".join(lines)

    def feature_terms(self, params: NewtonBoostedModel, spec: Any) -> np.ndarray | None:
        """Each feature's exact term of ``F(x) = prior + Σ_f term[f, x_f]``, ``[n, K]`` (``[n,
        K, C]``), when ``F`` is additive: the cyclic rounds' table plus the trees that split on
        one feature each (:func:`~dpjax.trees.describe.additive_terms`); ``None`` when a tree
        splits on two features or more (drawn by :func:`dpjax.plots.plot_shape`)."""
        trees = params.trees
        return additive_terms(params.table, trees.feature, trees.threshold, trees.leaf,
                              spec.n_codes)

    def importances(self, params: NewtonBoostedModel, spec: Any) -> np.ndarray:
        table = np.asarray(params.table, np.float64)
        table = table.reshape(*table.shape[:2], -1)         # [n, K, classes or 1]
        spread = np.asarray([np.ptp(table[f, :int(n)], axis=0).sum() if n else 0.0
                             for f, n in enumerate(spec.n_values)])
        return spread + tree_importances(params.trees.feature, params.trees.leaf,
                                         spec.n_features)

    def footprint(self, m: int, n: int, max_codes: int, n_classes: int) -> float:
        """The codes, the per-record statistics, the rounds' moves and the random trees. The
        codes: their host and device copies, a transposed copy for the cyclic shape, and for
        oblivious trees the packed codes of the level histograms (``8·m·n`` in all: measured
        at 3.7 bytes a code beyond the random shape's, 1e7 x 40 codes of 255 bins).
        The records: scores, fixed-point statistics, cells and the scan's buffers, measured
        at about 100 bytes a record (3e7 x 20 codes, random shape: 3.1 GB of peak resident
        memory beyond the data, ``benchmarks/bench_large_rows.py``)."""
        rounds = max_rounds(n, self.shape, self.n_trees, self.passes, self.focus,
                            self.oblivious_trees)
        cells = max(max_codes, 2**self.depth)
        classes = n_classes if n_classes > 2 else 1
        return (self.shared_footprint(m, n) + 64.0 * m * classes
                + 16.0 * rounds * (cells + 2**self.depth) * classes
                + self.level_histograms(m, n, max_codes))

    def level_histograms(self, m: int, n: int, max_codes: int) -> float:
        """Bytes of an oblivious level's int32 histograms (the counts, both sides' sums and
        their stacked copy): ``2**(d−1)`` cells of ``n·max_codes``, one set per chunk of rows
        past :data:`~dpjax.privacy.fixed_point.MAX_ROWS` (:func:`dpjax.trees.oblivious.
        level_utility`); 0 when no oblivious tree may grow."""
        if not self.may_grow_oblivious():
            return 0.0
        return 16.0 * fixed_point.chunk_count(m) * 2 ** (self.depth - 1) * n * max_codes

    def shared_footprint(self, m: int, n: int) -> float:
        """The codes' copies (:meth:`footprint`): every model of a sweep reads the same."""
        per_code = 8.0 if self.may_grow_oblivious() else 2.0 + (self.shape != "random")
        return per_code * m * n

    def may_grow_oblivious(self, private: bool = True, regression: bool = False) -> bool:
        """Whether a fit may boost oblivious trees: ``shape="oblivious"``, or ``"auto"`` in a
        private fit of classes (:func:`~dpjax.ensembles.newton.schedule.auto_uses_oblivious`;
        without DP ``"auto"`` is cyclic, a regression's shapes are cyclic or random). The
        memory estimates (:meth:`footprint`) count them for every ``"auto"`` fit: an upper
        bound for more than two classes."""
        return self.shape == "oblivious" or (self.shape == "auto" and private
                                             and not regression)
