"""Greedy rule lists, private and not — Ly, Ferry, Huguet, Gambs & Aïvodji (2024), Algorithm 1
(DP-GreedyRL) and its global-sensitivity baselines (spec
``docs/specs/dp-rule-lists-smooth-sensitivity.md`` §1.6, §3).

A rule list is ``if p_1 then q_1 else if p_2 then q_2 … else q_0``: at most ``max_rules`` rules,
each a conjunction of up to ``max_card`` literals (:mod:`dpjax.rules.candidates`). At each node
every candidate of the records still to classify ``X_rem`` is scored at once (the Gini-weighted
counts, :func:`~dpjax.rules.candidates.node_stats`) and one is chosen, the "no rule" option ``∅``
included (choosing it ends the list). The records a rule catches leave ``X_rem``.

Selections (``selection=``):

* ``"count_gini"`` (default; dpjax's, provably ``ε``-DP): permute-and-flip on the utility
  ``−Σ_parts a·b/(a + b)``, the Gini impurity weighted by counts (``n/2·𝒢``). Its sensitivity
  is below 1 whatever the support, and it is *monotone* (adding a record never lowers any
  candidate's value), so the rate is ``ε/Δ`` (:func:`~dpjax.mechanisms.permute_and_flip`,
  ``monotone=True``). Since the argmin of ``n·𝒢`` is the argmin of ``𝒢``, this is the smooth
  sensitivity's ``~2/n`` noise on ``𝒢`` without its support check, its ``δ`` or its unproven
  step: the noise is half of sm-Laplace's ``2S*/ε ≈ 4/(nε)`` at the same budget.
* ``"smooth_laplace"`` / ``"smooth_cauchy"`` (the paper's DP-GreedyRL): a noisy support check
  against ``Λ + T_conf``, then ``argmin 𝒢 + (2S*/ε)·Lap(1)`` (``β = ε/(2 ln(2/δ))``) or
  ``𝒢 + (6S*/ε)·Cauchy`` (``β = ε/6``) with ``S*`` the smooth sensitivity
  (:mod:`dpjax.mechanisms.smooth_sensitivity`). The noisy arg-min with data-dependent noise has no
  published proof (spec §3.7.1): the ledger states the paper's claim and labels it so. With
  ``calibration="provable"`` the claim is at least made sound where it can be: ``S*`` at the
  add/remove convention, the support check's failure probability counted in ``δ``
  (``confidence="auto"``: ``1 − 𝒞`` is a share of ``δ``), and ``Λ`` from the released count.
  Their noise is float32 ``jax.random`` noise (only the arg-min is released, so no low-bit
  leak, but the float samplers' truncated tails, mass ~1e−7, are not in ``δ``): another
  reason they are labelled the paper's claim.
* ``"global_laplace"``: report-noisy-min of ``𝒢`` with exact discrete Laplace noise of scale
  ``2Δ/ε``, ``Δ = 1/2`` (``Δ/ε`` is only ``2ε``-DP for non-monotone scores, spec §3.7.2).
* ``"global_gaussian"``: the vector of every candidate's ``𝒢`` (``∅`` included; those already
  chosen zeroed) released with the exact discrete Gaussian (L2 sensitivity
  ``Δ·sqrt(#candidates)``; a Gaussian arg-min at per-score scale is not
  covered by a theorem, spec A15), then its arg-min.
* ``"exponential"``: permute-and-flip on ``−𝒢`` with ``Δ = 1/2`` (the paper's exponential-
  mechanism baseline; never worse in expected utility).

The rules' labels come from noisy counts ``(c_0, c_1)`` of the records each rule catches and of
the default rule's rest, ``q = 1`` iff ``c_1 >= c_0`` (Algorithm 2; counts clipped at 0 first,
as :func:`rule_list_proba` reads them), after ``prior_records`` pseudo-records of the released
class balance join each rule's counts (:func:`label_prior`; private ``"provable"`` fits). The
cells partition the data, so the counts are one histogram release of L1 sensitivity 1 (parallel
composition; the paper charges a budget per rule).

Budget (``calibration="provable"``): with a pure selection (``count_gini``, ``global_laplace``,
``exponential``) and ``prior_share > 0`` (the default) a share ``prior_share`` of ``ε`` first
releases the two class counts (the size ``ñ``, and the labels' prior), then the public schedule
:func:`affordable_rules` sets the number of rules ``R' <= max_rules`` from ``ñ`` and ``ε``
alone, and the rest of ``ε`` is split equally over the ``R'`` selections and the count
histogram (``R' = 0``: the majority fallback, the whole rest labels the default rule). Without
the class counts (``prior_share = 0``, or a ``δ`` selection), ``ε`` is split in equal shares over
the ``max_rules`` selections, the support checks (smooth selections only) and the count
histogram, ``δ`` in equal shares over the nodes. Every node is charged, also those after the list
stopped: the ledger is the mechanism's ``(ε, δ)``, fixed before the fit (or by the public
schedule), not a pointwise bound that would vary with the output.
``calibration="paper"`` uses the paper's split (``ε/(3K − 1)``, ``ε/(2K − 1)``, ``ε/(2K)`` with
``K = max_rules + 1``), the paper's scales (gl-Laplace ``Δ/ε``, gl-Gaussian per score), ``S*``
as printed, ``Λ`` from the row count and the confidence ``𝒞`` outside ``δ``: a reproduction
mode whose ledger says it is not private.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.learner import FitContext, records
from dpjax.mechanisms import laplace_mechanism, report_noisy_min
from dpjax.mechanisms.exponential import permute_and_flip
from dpjax.mechanisms.gaussian import gaussian_mechanism
from dpjax.mechanisms.size import (
    CLASS_COUNTS_STREAM,
    MAX_SIZE,
    balance_pseudo_counts,
    class_totals,
    pooled_counts,
    release_class_counts,
)
from dpjax.mechanisms.smooth_sensitivity import smooth_sensitivity_gini
from dpjax.privacy import Cost, fixed_point
from dpjax.privacy.composition import (
    delta_split,
    delta_sum,
    float32_share,
    gaussian_selection_rho,
    share,
)
from dpjax.rules.candidates import (
    FRACTION_BITS,
    NodeStats,
    device_pairs,
    extension_stats,
    literal_table,
    literal_values,
    no_rule,
    node_stats,
    normalised_gini,
)

if TYPE_CHECKING:
    from dpjax.rules.config import RuleListLearner

SELECTIONS = ("count_gini", "smooth_laplace", "smooth_cauchy", "global_laplace",
              "global_gaussian", "exponential")
SMOOTH = ("smooth_laplace", "smooth_cauchy")
NEEDS_DELTA = ("smooth_laplace", "smooth_cauchy", "global_gaussian")
CALIBRATIONS = ("provable", "paper")
GINI_SENSITIVITY = 0.5 + 2.0**-23
"""``Δ`` of ``𝒢 ∈ [0, 1/2]`` (spec §2.1, A25) plus its float32 evaluation error (``𝒢`` is an
exact integer scaled twice in float32: a relative ``2**−23``)."""
COUNT_SENSITIVITY = 2.0**FRACTION_BITS
"""``Δ`` of the Gini-weighted counts in units of ``2**−F``, as evaluated: adding a record moves
one part's ``a·b/(a + b)`` up by less than 1, so its floor ``⌊2**F·a·b/(a + b)⌋`` moves up by an
integer in ``[0, 2**F]`` (exactly monotone; no rounding margin is needed)."""
PAPER_CONFIDENCE = 0.99
PRIOR_LABEL = "class counts (released size, labels' prior)"


class RuleList(NamedTuple):
    """A fitted rule list: rule ``r`` is the conjunction of literals ``(feature, lo, hi, inside)
    [r, 0]`` and ``[r, 1]`` (equal for a single literal), used iff ``active[r]``; ``counts [R +
    1, 2]`` the released counts (label 0, label 1) of the records each rule caught, the default
    rule last; ``label [R + 1]`` the class each rule predicts; ``prior [2]`` the pseudo-counts
    added to every rule's counts before its label and scores are read (0 without them)."""

    feature: jax.Array
    lo: jax.Array
    hi: jax.Array
    inside: jax.Array
    active: jax.Array
    counts: jax.Array
    label: jax.Array
    prior: jax.Array


def node_epsilon(epsilon: jax.Array, selection: str, calibration: str, max_rules: int
                 ) -> jax.Array:
    """``ε`` of each release of a node (a selection, a support check) and of the label counts:
    equal shares of the ``max_rules`` selections (and support checks) and the count histogram;
    the paper's ``ε/(3K − 1)`` (smooth), ``ε/(2K)`` (exponential) or ``ε/(2K − 1)`` with
    ``K = max_rules + 1`` under ``calibration="paper"``."""
    smooth = selection in SMOOTH
    if calibration == "paper":
        k = max_rules + 1
        shares = 3 * k - 1 if smooth else 2 * k if selection == "exponential" else 2 * k - 1
    else:
        shares = max_rules * (2 if smooth else 1) + 1
    return share(epsilon, 1.0, shares)


def delta_shares(delta: float, selection: str, calibration: str, max_rules: int,
                 confidence: str | float) -> tuple[float, float]:
    """``(δ_s, δ_c)`` of a node: the smooth-sensitivity bound's ``δ`` (Laplace) and the support
    check's failure probability ``1 − 𝒞`` (spec A6), within ``δ/max_rules`` together; for
    ``global_gaussian`` ``δ_s`` is its Gaussian release's ``δ``. Under ``calibration="paper"``
    ``δ_c = 1 − 𝒞`` is outside the budget (the paper's accounting)."""
    if selection not in NEEDS_DELTA:
        return 0.0, 0.0
    if selection == "global_gaussian":
        return float32_share(delta, max_rules), 0.0
    if calibration == "paper":
        conf = PAPER_CONFIDENCE if confidence == "auto" else float(confidence)
        return (float32_share(delta, max_rules) if selection == "smooth_laplace" else 0.0,
                1.0 - conf)
    laplace = selection == "smooth_laplace"
    try:
        if confidence == "auto":
            return delta_split(delta, max_rules, failure_share=0.5 if laplace else 1.0,
                               keep_rest=laplace)
        return delta_split(delta, max_rules, failure=1.0 - float(confidence), keep_rest=laplace)
    except ValueError as error:
        raise ValueError(f"confidence={confidence!r}: {error}: its failure probability "
                         "1 - confidence must be below it (use confidence='auto')") from None


def _argmin(noisy: jax.Array, valid: jax.Array) -> jax.Array:
    return jnp.argmin(jnp.where(valid, noisy, jnp.inf)).astype(jnp.int32)


def select_rule(key: jax.Array, score: jax.Array, size: jax.Array, valid: jax.Array,
                epsilon: jax.Array, smooth: jax.Array, *, selection: str, calibration: str,
                sensitivity: float, delta_smooth: float, n_candidates: int
                ) -> tuple[jax.Array, Cost]:
    """One node's choice among the candidates (index 0: ``∅``) and its cost (module
    docstring); ``smooth`` is the node's ``S*`` (smooth selections)."""
    gini = normalised_gini(score, size)
    if selection == "count_gini":
        # −min(score − best, 2**24), exactly (int32 or wide scores), then in float32 exactly
        gap = fixed_point.floored_gaps(fixed_point.negate(score), valid, -(2**24))
        return permute_and_flip(key, jnp.where(valid, gap.astype(jnp.float32), -jnp.inf),
                                sensitivity * COUNT_SENSITIVITY, epsilon, monotone=True,
                                label="Gini-weighted counts, sens. 1, monotone")
    if selection == "exponential":
        return permute_and_flip(key, jnp.where(valid, -gini, -jnp.inf), GINI_SENSITIVITY,
                                epsilon, label="Gini, sens. 1/2")
    if selection in SMOOTH:
        if selection == "smooth_laplace":
            noise = 2.0 * smooth / epsilon * jax.random.laplace(key, gini.shape)
            name = "smooth-sensitivity Laplace"
        else:
            noise = 6.0 * smooth / epsilon * jax.random.cauchy(key, gini.shape)
            name = "smooth-sensitivity Cauchy"
        cost = Cost(epsilon, jnp.float32(delta_smooth),
                    f"{name} noisy argmin (Ly et al.'s claim, no published proof)")
        return _argmin(gini + noise, valid), cost
    if selection == "global_laplace":
        if calibration == "paper":
            noise = 0.5 / epsilon * jax.random.laplace(key, gini.shape)
            return _argmin(gini + noise, valid), Cost(epsilon, jnp.float32(0.0), "float Laplace "
                                                      "noisy argmin at the paper's scale Δ/ε")
        return report_noisy_min(key, gini, valid, GINI_SENSITIVITY, epsilon, bound=1.0,
                                label="2Δ/ε, Δ = 1/2")
    if calibration == "paper":
        sigma = math.sqrt(2.0 * math.log(1.25 / delta_smooth)) * 0.5 / epsilon
        noise = sigma * jax.random.normal(key, gini.shape)
        return _argmin(gini + noise, valid), Cost(epsilon, jnp.float32(delta_smooth),
                                                  "float Gaussian noisy argmin per score")
    rho = gaussian_selection_rho(epsilon, delta_smooth)
    noisy, cost = gaussian_mechanism(
        key, jnp.where(valid, gini, 0.0), GINI_SENSITIVITY * math.sqrt(n_candidates), rho,
        bound=1.0, delta=delta_smooth, label="Δ·sqrt(candidates), Δ = 1/2")
    return _argmin(noisy, valid), cost


def greedy_choice(stats: NodeStats, valid: jax.Array) -> jax.Array:
    """GreedyRL's choice (spec §1.6, not private): the smallest Gini-weighted count, ties to the
    smaller caught part's (a rule that isolates a pure group first), then to the first index;
    ``∅`` wins every tie (a rule must strictly improve)."""
    tied = fixed_point.minimal(stats.score, valid)
    return jnp.argmax(fixed_point.minimal(stats.caught, tied)).astype(jnp.int32)


def greedy_pair(key: jax.Array, stats_of: Callable[[jax.Array | None], NodeStats],
                literal_feature: jax.Array, epsilon: jax.Array | None, sensitivity: float
                ) -> tuple[jax.Array, jax.Array, jax.Array, tuple[Cost, Cost]]:
    """One node of the greedy pair search (``pair_search="greedy"``, ``count_gini``): the first
    literal among ``∅`` and the single literals, then its conjunction with a literal of
    another feature or none (the single itself), each by permute-and-flip at half the node's
    ``ε`` (sequential; the second's candidates depend on the first's release only), each
    ``O(m·n + L)`` (``stats_of(first)``: :func:`~dpjax.rules.candidates.extension_stats` of the
    node's records, ``None`` for the singles) where the exhaustive search scores ``L²/2``
    pairs. Without ``epsilon`` GreedyRL's choices (:func:`greedy_choice`; the
    single wins ties with its conjunctions). Returns the first choice's index (0: ``∅``,
    the list stops), the pair of literals and the two costs."""
    k_first, k_second = jax.random.split(key)
    n_literals = literal_feature.shape[0]
    singles = stats_of(None)
    every = jnp.ones(n_literals + 1, bool)
    half = None if epsilon is None else share(epsilon, 1.0, 2)
    zero = Cost(jnp.float32(0.0), jnp.float32(0.0), "")

    def choose(k: jax.Array, stats: NodeStats, valid: jax.Array) -> tuple[jax.Array, Cost]:
        if half is None:
            return greedy_choice(stats, valid), zero
        return select_rule(k, stats.score, stats.size, valid, half, jnp.float32(0.0),
                           selection="count_gini", calibration="provable",
                           sensitivity=sensitivity, delta_smooth=0.0,
                           n_candidates=n_literals + 1)

    index, first_cost = choose(k_first, singles, every)
    first = jnp.maximum(index - 1, 0)
    extended = stats_of(first)
    own = jnp.arange(n_literals) == first
    extended = extended._replace(caught=jax.tree.map(lambda c, v: c.at[1 + first].set(v),
                                                     extended.caught, no_rule(extended.caught)))
    valid = jnp.concatenate([jnp.zeros(1, bool), (literal_feature != literal_feature[first])
                             | own])
    second, second_cost = choose(k_second, extended, valid)
    second = jnp.maximum(second - 1, 0)
    return index, jnp.minimum(first, second), jnp.maximum(first, second), (first_cost,
                                                                          second_cost)


class _Node(NamedTuple):
    remaining: jax.Array
    selected: jax.Array
    stopped: jax.Array
    min_support: jax.Array


def fit(config: RuleListLearner, key: jax.Array, codes: jax.Array, y: jax.Array,
        epsilon: jax.Array | None, context: FitContext,
        traced: dict[str, ArrayLike] | None = None) -> tuple[RuleList, dict[str, Cost]]:
    """Fit a rule list of at most ``config.max_rules`` rules of up to ``config.max_card``
    literals on ``codes [m, n]`` and binary ``y`` (module docstring; the fields are documented
    on :class:`~dpjax.rules.RuleListLearner`). ``epsilon=None``: GreedyRL without privacy (the
    best candidate while it strictly lowers the Gini, :func:`greedy_choice`; labels by
    majority, ties to 1). ``min_support`` is ``λ`` of the smooth selections (``Λ =
    max(⌊λ·ñ⌋, 2)`` with ``ñ`` the public ``context.size`` or the first noisy support count);
    ``confidence`` their ``𝒞`` (``"auto"``: ``1 − 𝒞`` a share of ``δ``). Returns the
    :class:`RuleList` and the costs of its releases."""
    max_rules, max_card, selection = config.max_rules, config.max_card, config.selection
    calibration, min_support = config.calibration, config.min_support
    sensitivity, delta, size = context.sensitivity, context.delta, context.size
    n_codes_per_feature = context.n_codes_per_feature
    literals = literal_table(n_codes_per_feature)
    search = config.pair_search_for(literals)
    if search == "exhaustive":
        first_of, second_of = device_pairs(literals, max_card)
    else:                                     # singles or the greedy search: no pair table
        first_of = second_of = jnp.arange(literals.size, dtype=jnp.int32)
    n_candidates = first_of.shape[0] + 1                  # with ∅
    literal_feature = jnp.asarray(literals.feature)
    table = tuple(jnp.asarray(a) for a in literals)

    def rows_of(index: jax.Array) -> jax.Array:
        """The literals ``index``' truth on every row (bool ``[m, *index.shape]``)."""
        return literal_values(codes, *(a[index] for a in table))

    def extended(remaining: jax.Array, first: jax.Array | None = None) -> NodeStats:
        return extension_stats(codes, remaining, labels, literals, n_codes_per_feature,
                               None if first is None else rows_of(first))

    values = literal_values(codes, *table) if search == "exhaustive" else None
    labels = jnp.asarray(y, jnp.int32)
    private = epsilon is not None
    smooth_mode = private and selection in SMOOTH
    k_nodes, k_counts = jax.random.split(key)
    traced = config.resolve_traced(traced or {})
    costs: dict[str, Cost] = {}
    n_live = jnp.int32(max_rules)
    balance = prior_epsilon = None
    if private and config.scheduled:
        # a share of ε for the class counts (the released size and the labels' prior), then
        # the public number of rules the rest can pay for (spec-free: dpjax's schedule)
        prior_epsilon = share(epsilon, config.prior_share)
        balance, costs[PRIOR_LABEL] = release_class_counts(
            jax.random.fold_in(key, CLASS_COUNTS_STREAM), class_totals(labels, 2),
            prior_epsilon, sensitivity)
        epsilon = share(epsilon, 1.0 - config.prior_share)
        public = (jnp.clip(jnp.maximum(balance, 0.0).sum(), 1.0, MAX_SIZE) if size is None
                  else jnp.float32(size))
        n_live = affordable_rules(public, epsilon, sensitivity, traced["rule_signal"],
                                  traced["min_signal"], max_rules)
    if private:
        eps_node = (share(epsilon, 1.0, n_live + 1) if config.scheduled
                    else node_epsilon(epsilon, selection, calibration, max_rules))
        delta_smooth, delta_check = delta_shares(delta, selection, calibration, max_rules,
                                                 config.confidence)
        beta = (eps_node / (2.0 * math.log(2.0 / delta_smooth)) if selection == "smooth_laplace"
                else eps_node / 6.0)
    convention = "paper" if calibration == "paper" else "add_remove"

    def step(node: _Node, inputs: tuple[jax.Array, jax.Array]) -> tuple[_Node, tuple]:
        node_key, rank = inputs
        k_check, k_select = jax.random.split(node_key)
        scheduled = rank < n_live
        if search == "greedy":
            index, first, second, select_cost = greedy_pair(
                k_select, functools.partial(extended, node.remaining), literal_feature,
                eps_node if private else None, sensitivity)
            select_cost = tuple(c.gated(scheduled) for c in select_cost)
            take = ~node.stopped & scheduled & (index > 0)
            remaining = node.remaining & ~(take & rows_of(first) & rows_of(second))
            no_check = Cost(jnp.float32(0.0), jnp.float32(0.0), "")
            return (_Node(remaining, node.selected, node.stopped | ~take, node.min_support),
                    (jnp.stack([first, second]), take, no_check, select_cost))
        if search == "singles":
            stats = extended(node.remaining)
        else:
            stats = node_stats(values, node.remaining, labels, (first_of, second_of))
        live = ~node.stopped
        passes, lam, smooth = jnp.bool_(True), node.min_support, jnp.float32(0.0)
        check_cost = Cost(jnp.float32(0.0), jnp.float32(0.0), "")
        if smooth_mode:
            noisy_size, check_cost = laplace_mechanism(k_check, stats.size, sensitivity,
                                                       eps_node, integer=True, label="sens. 1")
            if calibration == "paper":
                lam = jnp.maximum(jnp.floor(min_support * codes.shape[0]), 1.0)
                threshold = jnp.floor(-(math.log(2.0) + math.log(delta_check)) / eps_node) + 1
            else:
                public = noisy_size if size is None else size
                lam = jnp.where(lam < 0, jnp.maximum(jnp.floor(min_support * public), 2.0), lam)
                # the noise's rate per unit count is ε_spent/Δ: P(Z >= T + 1) <= δ_c
                threshold = jnp.ceil(sensitivity * math.log(1.0 / delta_check)
                                     / check_cost.epsilon) - 1.0
            passes = noisy_size >= lam + threshold
            smooth = smooth_sensitivity_gini(stats.size, lam, beta, convention=convention)
        valid = ~node.selected
        if private:
            index, select_cost = select_rule(
                k_select, stats.score, stats.size, valid, eps_node, smooth,
                selection=selection, calibration=calibration, sensitivity=sensitivity,
                delta_smooth=delta_sum(delta_smooth, delta_check if calibration == "provable"
                                       else 0.0),
                n_candidates=n_candidates)
        else:
            index = greedy_choice(stats, valid)
            select_cost = Cost(jnp.float32(0.0), jnp.float32(0.0), "")
        select_cost = select_cost.gated(scheduled)
        take = live & scheduled & passes & (index > 0)
        chosen = jnp.maximum(index - 1, 0)
        first, second = first_of[chosen], second_of[chosen]
        remaining = node.remaining & ~(take & rows_of(first) & rows_of(second))
        selected = node.selected.at[index].set(node.selected[index] | take)
        stopped = node.stopped | ~take
        # every node is charged, whether it ran or the list had stopped: the ledger is the
        # mechanism's (ε, δ), fixed before the fit, so it tells nothing of where the list
        # stopped (a pointwise ledger of the nodes that ran would)
        return (_Node(remaining, selected, stopped, lam),
                (jnp.stack([first, second]), take, check_cost, select_cost))

    # every record remains at the start; a padding row (label 2) never does
    start = _Node(records(labels, 2), jnp.zeros(n_candidates, bool),
                  jnp.bool_(False), jnp.float32(-1.0))
    _, (pairs, active, check_costs, select_costs) = jax.lax.scan(
        step, start, (jax.random.split(k_nodes, max_rules), jnp.arange(max_rules)))
    pairs = jnp.where(active[:, None], pairs, 0)     # a node's choice is released iff taken
    fires = active[None, :] & rows_of(pairs[:, 0]) & rows_of(pairs[:, 1])
    cell = jnp.where(fires.any(axis=1), jnp.argmax(fires, axis=1), max_rules)
    hist = fixed_point.segment_sum(jax.nn.one_hot(labels, 2, dtype=jnp.int32), cell,
                                   max_rules + 1)
    if private:
        counts, costs["rule label counts (disjoint cells)"] = laplace_mechanism(
            k_counts, hist, sensitivity, eps_node, integer=True, label="sens. 1")
        if smooth_mode:
            costs["support checks (noisy |X_rem|)"] = check_costs
        if search == "greedy":
            costs[f"rule selection ({selection}), first literal"] = select_costs[0]
            costs[f"rule selection ({selection}), second literal"] = select_costs[1]
        else:
            costs[f"rule selection ({selection})"] = select_costs
    else:
        counts = hist.astype(jnp.float32)
    keep = jnp.concatenate([active, jnp.ones(1, bool)])
    counts = jnp.where(keep[:, None], counts, 0.0)
    clipped = jnp.maximum(counts, 0.0)
    prior = jnp.zeros(2, jnp.float32)
    if private and calibration == "provable":
        totals = clipped.sum(0)
        if balance is not None:     # the cells' sum has the variance of R' + 1 cells
            totals = pooled_counts([(balance, prior_epsilon),
                                    (totals, eps_node / jnp.sqrt(n_live + 1.0))])
        prior = label_prior(totals, traced["prior_records"])
    # a non-private list labels by its exact int32 counts (float32 would tie past 2**24)
    label = label_of(clipped + prior if private else jnp.where(keep[:, None], hist, 0))
    table = [jnp.asarray(a)[pairs] for a in literals]
    return RuleList(*table, active, counts, label, prior), costs


def affordable_rules(size: jax.Array, epsilon: jax.Array, sensitivity: float,
                     rule_signal: ArrayLike, min_signal: ArrayLike, max_rules: int
                     ) -> jax.Array:
    """The public number of rules (dpjax's schedule, from the released size ``ñ`` and ``ε``
    only): ``R' = ⌈(ñε/Δ − min_signal)/rule_signal⌉`` clipped to ``[0, max_rules]``. Below
    ``min_signal`` records per unit of noise no rule is chosen: the whole budget labels the
    default rule, the released majority (the fallback). Each further ``rule_signal`` buys one
    more rule; the ``R' + 1`` releases share ``ε`` equally, so fewer rules are each chosen
    with more of it."""
    signal = size * jnp.asarray(epsilon, jnp.float32) / sensitivity
    wanted = jnp.ceil((signal - min_signal) / jnp.asarray(rule_signal, jnp.float32))
    return jnp.clip(wanted, 0, max_rules).astype(jnp.int32)


def label_prior(totals: jax.Array, records: ArrayLike) -> jax.Array:
    """``records`` pseudo-records spread as the released class balance ``totals [2]`` (the
    cells partition the records, so their noisy counts, clipped at 0, add up to the class
    totals; with the class counts released first, both pooled); floored at 1/2. Added to every
    rule's counts, a rule whose evidence is under ``records`` predicts the majority
    (post-processing)."""
    return balance_pseudo_counts(totals, records)


def label_of(counts: jax.Array) -> jax.Array:
    """``q = 1`` iff ``c_1 >= c_0`` (Algorithm 2; ties to 1), on float or exact integer
    counts ``[R + 1, 2]``."""
    return (counts[:, 1] >= counts[:, 0]).astype(jnp.int32)


def rule_cells(rules: RuleList, codes: jax.Array) -> jax.Array:
    """The rule that catches each row of ``codes [m, n]`` (int32 ``[m]``; ``R``: the default)."""
    hit = literal_values(codes, rules.feature, rules.lo, rules.hi, rules.inside).all(axis=-1)
    fires = hit & rules.active
    return jnp.where(fires.any(axis=1), jnp.argmax(fires, axis=1), rules.active.shape[0])


def rule_list_predict(rules: RuleList, codes: jax.Array) -> jax.Array:
    """Class index ``[m]`` of the first rule that fires (the default rule's otherwise)."""
    return rules.label[rule_cells(rules, codes)]


def rule_list_proba(rules: RuleList, codes: jax.Array) -> jax.Array:
    """``[m, 2]``: the caught rule's released counts, clipped at 0, plus the prior's
    pseudo-counts, as ``(c + 1/2)/(n + 1)``."""
    counts = (jnp.maximum(rules.counts, 0.0) + rules.prior)[rule_cells(rules, codes)]
    return (counts + 0.5) / (counts.sum(axis=-1, keepdims=True) + 1.0)


__all__ = ["CALIBRATIONS", "NEEDS_DELTA", "SELECTIONS", "SMOOTH", "RuleList", "delta_shares",
           "fit", "node_epsilon", "rule_cells", "rule_list_predict", "rule_list_proba",
           "select_rule"]
