"""Shared settings of the user-facing API tests."""

from __future__ import annotations

SMALL = dict(n_trees=3, depth=3)
# every budget inside a fit is rounded down (float32) and each release reports the ε its exact
# noise buys: a ledger spends within [ε (1 − SLACK), ε]
SLACK = 2e-3


def assert_spent(spent: float, epsilon: float) -> None:
    assert spent <= epsilon
    assert spent >= epsilon * (1 - SLACK)
