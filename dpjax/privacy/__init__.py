"""Privacy arithmetic in one place: what releases cost, how costs compose and how a budget is
split, the fixed point of the released statistics, and the budget accountant.

* :class:`Cost` (:mod:`~dpjax.privacy.costs`): what a mechanism reports beside its release;
  :func:`parallel` composes disjoint releases.
* :class:`PrivacyLedger` (:mod:`~dpjax.privacy.ledger`): every model's record of its releases.
* :mod:`~dpjax.privacy.composition`: one route per composition (basic, advanced, zCDP,
  optimal), each composing ledgers and splitting budgets; :mod:`~dpjax.privacy.optimal`: the
  optimal composition of pure releases.
* :class:`BudgetAccountant` (:mod:`~dpjax.privacy.accountant`): a total across many fits.
* :mod:`~dpjax.privacy.fixed_point` and :mod:`~dpjax.privacy.rounding`: exact fixed-point
  statistics and conservative float32 rounding of budgets and scales.
* :mod:`~dpjax.privacy.checks`: ``ε``, ``δ`` and the neighbouring relation.

This package imports nothing else of dpjax: mechanisms, learners and the runtime build on it.
"""

from dpjax.privacy.accountant import BudgetAccountant, BudgetExceededError
from dpjax.privacy.checks import (
    NEIGHBOURING,
    SENSITIVITY,
    check_delta,
    check_epsilon,
    check_neighbouring,
)
from dpjax.privacy.composition import (
    ADVANCED,
    BASIC,
    OPTIMAL,
    ROUTES,
    ZCDP,
    Route,
    advanced_composition,
    route,
    zcdp_to_dp,
)
from dpjax.privacy.costs import Cost, parallel
from dpjax.privacy.ledger import LedgerEntry, PrivacyLedger

__all__ = [
    "ADVANCED",
    "BASIC",
    "NEIGHBOURING",
    "OPTIMAL",
    "ROUTES",
    "SENSITIVITY",
    "ZCDP",
    "BudgetAccountant",
    "BudgetExceededError",
    "Cost",
    "LedgerEntry",
    "PrivacyLedger",
    "Route",
    "advanced_composition",
    "check_delta",
    "check_epsilon",
    "check_neighbouring",
    "parallel",
    "route",
    "zcdp_to_dp",
]
