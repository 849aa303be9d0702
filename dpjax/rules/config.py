"""DP greedy rule lists (``method="rule_list"``): the config, fitted by
:func:`dpjax.rules.greedy.fit`."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import numpy as np

from dpjax.data import DataDependentWarning
from dpjax.data.caller import warn
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
from dpjax.privacy import fixed_point
from dpjax.rules import greedy
from dpjax.rules.candidates import (
    Literals,
    literal_table,
    n_candidate_pairs,
    row_block,
)
from dpjax.rules.describe import describe_rule_list
from dpjax.rules.greedy import (
    CALIBRATIONS,
    NEEDS_DELTA,
    SELECTIONS,
    SMOOTH,
    RuleList,
    rule_list_predict,
    rule_list_proba,
)

PAIR_SEARCHES = ("auto", "exhaustive", "greedy")
MAX_EXHAUSTIVE_PAIRS = 2**20
"""``pair_search="auto"`` scores every literal pair while there are at most this many
candidates (``L²/2``: about 1,450 literals), and searches pairs greedily past it."""


class UnprovenClaimWarning(UserWarning):
    """A mechanism whose privacy claim comes from a paper without a published proof."""


@register(params=(RuleList,), estimator="DPRuleListClassifier")
@dataclasses.dataclass(frozen=True)
class RuleListLearner(Learner):
    """A greedy rule list (binary labels): at most ``max_rules`` rules of up to ``max_card``
    (1 or 2) literals, then a default rule, as Ly et al.'s DP-GreedyRL. ``selection`` picks
    each rule privately: ``"count_gini"`` (default: permute-and-flip on the count-weighted Gini,
    pure ``ε``-DP), the paper's ``"smooth_laplace"`` / ``"smooth_cauchy"`` (smooth sensitivity;
    need ``delta > 0``; their noisy arg-min is the paper's claim, unproven), or its
    global-sensitivity baselines ``"global_laplace"``, ``"global_gaussian"`` (needs
    ``delta``), ``"exponential"``. ``min_support`` (``λ``) and ``confidence`` (``𝒞``, or
    ``"auto"``: its failure probability inside ``δ``) serve the smooth selections;
    ``calibration="paper"`` reproduces the paper's scales and budget split (not private: the
    ledger says so). ``prior_records`` (traced; private ``"provable"`` fits): that many
    pseudo-records of the released class balance join every rule's counts before its label is
    read, so a rule whose evidence is weaker predicts the majority (30, chosen on the shared
    datasets with ``experiments/learner_defaults.py``: german at ε = 10 fell 0.02 below the
    majority without it; 0 reads the counts alone). ``prior_share`` (pure selections, private
    ``"provable"`` fits): the share of ``ε`` that first releases the class counts, whose sum
    ``ñ`` sets the public number of rules ``R' = ⌈(ñε'/Δ − min_signal)/rule_signal⌉`` in
    ``[0, max_rules]`` (traced ``rule_signal``, ``min_signal``; ``R' = 0`` is the majority
    fallback); 0 runs all ``max_rules`` nodes at ``ε/(max_rules + 1)`` each, as before.
    Defaults (0.05, 2000, 10) chosen on the shared datasets (``experiments/learner_defaults.py``
    and 3 splits × 5 seeds at ε = 0.1): with all four rules at ε = 0.1 german, qsar and
    transfusion fell 0.03–0.06 below the majority; one better-paid rule learns there. See
    :mod:`dpjax.rules.greedy`."""

    name: ClassVar[str] = "rule_list"
    cpu_compile: ClassVar[str] = "quick"
    binary: ClassVar[bool] = True
    max_rules: int = hyper(4, positive_int(64))
    max_card: int = hyper(2, positive_int(2))
    selection: str = hyper("count_gini", choice(*SELECTIONS))
    calibration: str = hyper("provable", choice(*CALIBRATIONS))
    min_support: float = hyper(0.05, unit_interval(open_high=True))
    confidence: Any = hyper("auto", or_literal("auto", unit_interval(open_high=True)))
    prior_records: float = traced(30.0, non_negative_float)
    prior_share: float = hyper(0.05, unit_interval(open_low=False, open_high=True))
    rule_signal: float = traced(2000.0, positive_float)
    min_signal: float = traced(10.0, non_negative_float)
    pair_search: str = hyper("auto", choice(*PAIR_SEARCHES))

    @property
    def pads_rows(self) -> bool:        # type: ignore[override]
        """Padding rows start outside the remaining data (:func:`~dpjax.rules.greedy.fit`),
        except under ``calibration="paper"``, whose ``Λ = ⌊λ·m⌋`` reads the row count."""
        return self.calibration != "paper"

    @property
    def scheduled(self) -> bool:
        """Whether a private fit releases the class counts and runs the public rule schedule
        (:func:`~dpjax.rules.greedy.affordable_rules`): ``calibration="provable"``, a pure
        selection (the ``δ`` selections keep their fixed split) and ``prior_share > 0``."""
        return (self.calibration == "provable" and self.selection not in NEEDS_DELTA
                and self.prior_share > 0.0)

    def pair_search_for(self, literals: Literals) -> str:
        """How a node searches its candidates (static, from the public schema): ``"singles"``
        (``max_card = 1``: the literals' column sums), ``"exhaustive"`` (every pair of
        literals of different features, two Gram matrices ``O(m·L²)``) or ``"greedy"`` (a
        first literal, then its best conjunction, ``O(m·L)``; ``count_gini`` only): ``"auto"``
        is exhaustive up to :data:`MAX_EXHAUSTIVE_PAIRS` candidates, or with a selection other
        than ``count_gini``."""
        if self.max_card == 1:
            return "singles"
        if self.pair_search == "auto":
            many = n_candidate_pairs(literals, self.max_card) > MAX_EXHAUSTIVE_PAIRS
            return "greedy" if many and self.selection == "count_gini" else "exhaustive"
        return self.pair_search

    def validate(self) -> None:
        if self.pair_search == "greedy" and self.selection != "count_gini":
            raise ValueError("pair_search='greedy' goes with selection='count_gini' (the "
                             "paper's selections score every pair: pair_search='exhaustive')")
        if self.calibration == "paper" and self.selection == "count_gini":
            raise ValueError("selection='count_gini' is dpjax's own: it has no paper "
                             "calibration")

    def row_limit(self, private: bool, n_features: int, regression: bool = False
                  ) -> int | None:
        """:data:`~dpjax.privacy.fixed_point.WIDE_MAX_ROWS`: the scores go wide past
        ``2**24 − 1`` rows, and the released counts stay within the Laplace mechanism's
        ``2**28`` grid steps."""
        return fixed_point.WIDE_MAX_ROWS

    def check_request(self, private: bool, delta: float) -> None:
        if private and self.selection in NEEDS_DELTA and delta <= 0:
            raise ValueError(f"selection={self.selection!r} is (epsilon, delta)-DP: it needs "
                             "delta > 0")

    def fit(self, key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array | None,
            context: FitContext, **traced: jax.Array) -> tuple[RuleList, Any]:
        return greedy.fit(self, key, codes, y, epsilon, context, traced)

    def proba(self, params: RuleList, codes: jax.Array) -> jax.Array:
        return rule_list_proba(params, codes)

    def predict(self, params: RuleList, codes: jax.Array, key: jax.Array | None) -> jax.Array:
        return rule_list_predict(params, codes)

    def describe(self, params: RuleList, spec: Any, classes: tuple) -> str:
        return describe_rule_list(params, spec, classes)

    def importances(self, params: RuleList, spec: Any) -> np.ndarray:
        """The number of active rules that read each feature."""
        scores = np.zeros(spec.n_features)
        for rule, active in zip(np.asarray(params.feature), np.asarray(params.active),
                                strict=True):
            if active:
                scores[np.unique(rule)] += 1.0
        return scores

    def not_private(self) -> list[str]:
        """The paper's calibration (spec §2.6, §3.7, A6, A15); the smooth selections' claim is
        kept but warned about."""
        if self.calibration == "paper":
            what = (f"rule_list {self.selection} at the paper's calibration (local sensitivity "
                    "g(n), noisy-argmin scales, support-check failure outside delta)")
            warn(f"{what}: the model is NOT differentially private (the ledger says "
                 "so)", DataDependentWarning)
            return [what]
        if self.selection in SMOOTH:
            warn(f"selection={self.selection!r}: the (epsilon, delta) in the ledger is "
                 "Ly et al.'s claim for a noisy argmin with smooth-sensitivity noise, "
                 "which has no published proof; selection='count_gini' (the default) "
                 "is provably epsilon-DP with less noise", UnprovenClaimWarning)
        return []

    def footprint(self, m: int, n: int, max_codes: int, n_classes: int) -> float:
        """The codes, the bool literal matrix (and its padded copy, read in row blocks), one
        block's float32 Gram operands, and the candidates' pair counts, scores and noise."""
        literals = 4 * n * max_codes
        if self.pair_search_for(literal_table(np.full(n, max_codes))) != "exhaustive":
            return 2.0 * m * n + 4.0 * m * literals + 64.0 * literals * self.max_rules
        block = row_block(m, literals)
        return (2.0 * m * n + 3.0 * m * literals + 16.0 * block * literals
                + 64.0 * literals**2 * self.max_rules)

