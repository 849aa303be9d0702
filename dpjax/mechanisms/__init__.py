"""DP mechanisms (explicit PRNG keys, ``vmap``-able, exact samplers) and privacy accounting.

Every mechanism returns ``(release, Cost)``: the object that sets the noise also reports what it
spent; the ledger is assembled from those costs.
"""

from dpjax.mechanisms.accounting import (
    NEIGHBOURING,
    Cost,
    LedgerEntry,
    PrivacyLedger,
    advanced_composition,
    check_epsilon,
    parallel,
    zcdp_to_dp,
)
from dpjax.mechanisms.exact import (
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    uniform_below,
)
from dpjax.mechanisms.exponential import permute_and_flip
from dpjax.mechanisms.gaussian import gaussian_mechanism
from dpjax.mechanisms.laplace import laplace_mechanism

__all__ = [
    "NEIGHBOURING",
    "Cost",
    "LedgerEntry",
    "PrivacyLedger",
    "advanced_composition",
    "bernoulli_exp",
    "check_epsilon",
    "discrete_gaussian",
    "discrete_laplace",
    "gaussian_mechanism",
    "laplace_mechanism",
    "parallel",
    "permute_and_flip",
    "uniform_below",
    "zcdp_to_dp",
]
