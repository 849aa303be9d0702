"""Rule lists at scale (issue 28, item 4): candidates' counts from code histograms, the pair
table built on the device, the greedy pair search past a public cap (a thousand features), and
the label prior."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax.rules.candidates import (
    candidate_pairs,
    device_pairs,
    extension_stats,
    literal_counts,
    literal_table,
    literal_values,
    n_candidate_pairs,
    node_stats,
)
from dpjax.rules.config import MAX_EXHAUSTIVE_PAIRS, RuleListLearner
from dpjax.rules.greedy import PRIOR_LABEL, affordable_rules, label_prior

N_CODES = np.array([2, 5, 3, 7])


def _codes(m: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, k, m) for k in N_CODES], axis=1).astype(np.uint8)


def test_literal_counts_equal_the_literal_matrix_sums():
    codes = _codes(301)
    literals = literal_table(N_CODES)
    rng = np.random.default_rng(1)
    weights = rng.integers(0, 3, (2, 301)).astype(np.int32)
    got = np.asarray(literal_counts(jnp.asarray(codes), jnp.asarray(weights), literals, N_CODES))
    values = np.asarray(literal_values(jnp.asarray(codes), *(jnp.asarray(a) for a in literals)))
    np.testing.assert_array_equal(got, weights @ values.astype(np.int64))


def test_extension_stats_equal_the_exhaustive_stats_of_the_same_pairs():
    codes, literals = jnp.asarray(_codes(200, 2)), literal_table(N_CODES)
    y = jnp.asarray(np.random.default_rng(3).integers(0, 2, 200))
    remaining = jnp.asarray(np.random.default_rng(4).uniform(size=200) < 0.7)
    values = literal_values(codes, *(jnp.asarray(a) for a in literals))
    index = np.arange(literals.size)
    singles = extension_stats(codes, remaining, y, literals, N_CODES)
    want = node_stats(values, remaining, y, np.stack([index, index], axis=1))
    np.testing.assert_array_equal(np.asarray(singles.score), np.asarray(want.score))
    first = 7
    pairs = extension_stats(codes, remaining, y, literals, N_CODES, values[:, first])
    want = node_stats(values, remaining, y, np.stack([np.full_like(index, first), index], 1))
    np.testing.assert_array_equal(np.asarray(pairs.score), np.asarray(want.score))


def test_device_pairs_are_the_static_candidate_pairs():
    literals = literal_table(N_CODES)
    for max_card in (1, 2):
        first, second = jax.jit(lambda c=max_card: device_pairs(literals, c))()
        want = candidate_pairs(literals, max_card)
        assert n_candidate_pairs(literals, max_card) == len(want)
        np.testing.assert_array_equal(np.stack([first, second], 1), want)


def test_auto_search_is_exhaustive_below_the_cap_and_greedy_past_it():
    config = RuleListLearner()
    assert config.pair_search_for(literal_table(np.full(20, 10))) == "exhaustive"
    wide = literal_table(np.full(108, 10))               # the adult one-hot matrix, 10 bins
    assert n_candidate_pairs(wide, 2) > MAX_EXHAUSTIVE_PAIRS
    assert config.pair_search_for(wide) == "greedy"
    assert RuleListLearner(max_card=1).pair_search_for(wide) == "singles"
    assert RuleListLearner(selection="exponential").pair_search_for(wide) == "exhaustive"
    with pytest.raises(ValueError, match="pair_search='greedy' goes with"):
        RuleListLearner(selection="exponential", pair_search="greedy")


@pytest.fixture(scope="module")
def planted():
    """1,500 rows of 6 features in [0, 1]; class 1 iff x0 > 0.5 and x1 > 0.3."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(1500, 6))
    return X, ((X[:, 0] > 0.5) & (X[:, 1] > 0.3)).astype(int)


def test_greedy_search_finds_the_planted_conjunction_without_noise(planted):
    X, y = planted
    model = dpjax.fit(X, y, method="rule_list", epsilon=None, bounds=(0, 1),
                      pair_search="greedy")
    assert model.score(X, y) == 1.0
    exhaustive = dpjax.fit(X, y, method="rule_list", epsilon=None, bounds=(0, 1),
                           pair_search="exhaustive")
    assert exhaustive.score(X, y) == 1.0


def test_greedy_search_ledger_charges_both_halves_of_every_node(planted):
    X, y = planted
    model = dpjax.fit(X, y, method="rule_list", epsilon=1.0, key=0, bounds=(0, 1),
                      pair_search="greedy", prior_share=0.0)
    entries = {e.what: e for e in model.privacy.entries}
    first = entries["rule selection (count_gini), first literal"]
    second = entries["rule selection (count_gini), second literal"]
    assert first.count == second.count == 4                       # max_rules nodes, all
    assert first.epsilon == pytest.approx(0.1, rel=1e-5)          # ε/(R + 1)/2
    assert 1.0 * (1 - 2e-3) <= model.privacy.epsilon <= 1.0
    assert model.score(X, y) > 0.9


def test_affordable_rules_is_the_public_schedule():
    """``R' = ⌈(ñε/Δ − min_signal)/rule_signal⌉`` in ``[0, max_rules]``."""
    def rules(size, epsilon, rule_signal=2000.0, min_signal=10.0, sensitivity=1.0):
        return int(affordable_rules(jnp.float32(size), jnp.float32(epsilon), sensitivity,
                                    rule_signal, min_signal, 4))

    assert rules(50, 0.1) == 0                        # 5 records of signal: the fallback
    assert rules(200, 0.1) == 1                       # 20: one rule
    assert rules(1500, 1.0) == 1
    assert rules(4500, 1.0) == 3
    assert rules(1e6, 10.0) == 4                      # capped at max_rules
    assert rules(4500, 1.0, sensitivity=2.0) == 2     # replace-one halves the signal


@pytest.mark.parametrize("epsilon", [0.02, 1.0, 10.0])
def test_scheduled_ledger_has_one_share_per_scheduled_release(planted, epsilon):
    """The class counts take ``prior_share·ε``; the rest is split over ``R' + 1`` releases (the
    ``R'`` selections and the label counts), so the total is ``ε`` whatever ``R'`` is."""
    X, y = planted
    model = dpjax.fit(X, y, method="rule_list", epsilon=epsilon, key=0, bounds=(0, 1))
    entries = {e.what: e for e in model.privacy.entries}
    assert entries[PRIOR_LABEL].epsilon == pytest.approx(0.05 * epsilon, rel=1e-3)
    labels = entries["rule label counts (disjoint cells)"]
    selections = entries.get("rule selection (count_gini)")
    n_scheduled = 0 if selections is None else selections.count
    assert n_scheduled == int(np.ceil((1500 * 0.95 * epsilon - 10.0) / 2000.0).clip(0, 4))
    assert labels.epsilon == pytest.approx(0.95 * epsilon / (n_scheduled + 1), rel=1e-3)
    assert epsilon * (1 - 2e-3) <= model.privacy.epsilon <= epsilon
    assert model.params.active.sum() <= n_scheduled
    if n_scheduled == 0:
        assert "majority fallback" in model.describe()


@pytest.mark.slow
def test_a_thousand_features_fit_with_the_greedy_search():
    rng = np.random.default_rng(7)
    X = rng.uniform(size=(2000, 1000))
    y = (X[:, 3] > 0.5).astype(int)
    model = dpjax.fit(X, y, method="rule_list", epsilon=5.0, key=0, bounds=(0, 1))
    assert model.privacy.epsilon <= 5.0
    assert model.score(X, y) > 0.9
    assert "x3" in model.describe()


def test_label_prior_spreads_the_records_as_the_released_balance():
    totals = jnp.asarray([80.0, 20.0])
    np.testing.assert_allclose(np.asarray(label_prior(totals, 30.0)), [24.0, 6.0], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(label_prior(totals, 0.0)), [0.0, 0.0])
    # a noisy count below 0 reads as 0 (floored at 1/2)
    np.testing.assert_allclose(np.asarray(label_prior(jnp.asarray([-3.0, 9.5]), 10.0)),
                               [0.5, 9.5], rtol=1e-6)
