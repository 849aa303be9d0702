"""Smooth boosting's majority fallback (issue 28): where even one round's weak learner is under
its noise (the public schedule, ``fallback_signal``), the rounds' budget releases the class
counts and the model is one constant vote for the noisy majority."""

from __future__ import annotations

import numpy as np
import pytest

import dpjax
from dpjax.ensembles.smooth_boost.boosting import MAJORITY_LABEL, round_signal
from tests.helpers.data import imbalanced_threshold

ROUNDS = "1-rules (DP-1R)"


@pytest.fixture(scope="module")
def data():
    return imbalanced_threshold(2000)


def test_round_signal_is_the_selections_inverse_temperature():
    # ε_0(r)·κñ/c with ε_0(r) = ε/r
    assert float(round_signal(lambda r: 1.0 / r, 2.0, 400.0, 0.5, 4.0)) == pytest.approx(25.0)


def test_tiny_budget_votes_the_released_majority(data):
    X, y = data
    # one round at ε ≈ 0.02: signal 0.019·0.35·ñ/4 ≈ 3.3 < 20
    model = dpjax.fit(X, y, method="smooth_boost", epsilon=0.02, bounds=(0, 1), key=0)
    polarity = np.asarray(model.params.polarity)
    assert polarity[0] == -1 and not polarity[1:].any() and bool(model.params.constant[0])
    assert model.describe().startswith("Majority fallback")
    whats = {e.what for e in model.privacy.entries}
    assert whats == {"row count", MAJORITY_LABEL}
    assert 0.02 * (1 - 2e-3) <= model.privacy.epsilon <= 0.02
    np.testing.assert_array_equal(model.predict(X), 0)


def test_enough_budget_boosts_and_charges_the_rounds_not_the_counts(data):
    X, y = data
    model = dpjax.fit(X, y, method="smooth_boost", epsilon=2.0, bounds=(0, 1), key=0)
    whats = {e.what for e in model.privacy.entries}
    assert ROUNDS in whats and MAJORITY_LABEL not in whats
    assert 2.0 * (1 - 2e-3) <= model.privacy.epsilon <= 2.0
    assert not model.describe().startswith("Majority fallback")
    assert model.score(X, y) > 0.9


def test_fallback_signal_zero_always_boosts_and_sweeps_in_one_program(data):
    X, y = data
    sweep = dpjax.sweep(X, y, method="smooth_boost", epsilon=[0.02], seeds=1, bounds=(0, 1),
                        fallback_signal=[20.0, 0.0])
    constant = np.asarray(sweep.params.constant)[:, 0, 0]
    by_point = dict(zip([g["fallback_signal"] for g in sweep.grid], constant, strict=True))
    assert by_point[20.0] and not by_point[0.0]
    for point, ledger in zip(sweep.grid, sweep.ledgers, strict=True):
        assert point["epsilon"] * (1 - 2e-3) <= ledger.epsilon <= point["epsilon"]
