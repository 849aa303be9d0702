"""DP mechanisms (explicit PRNG keys, ``vmap``-able) and the privacy ledger."""

from dpjax.mechanisms.accounting import (
    NEIGHBOURING,
    LedgerEntry,
    PrivacyLedger,
    advanced_composition,
    allocate,
    check_epsilon,
    split_budget,
    zcdp_to_dp,
)
from dpjax.mechanisms.discrete import discrete_laplace_mechanism, discrete_laplace_noise
from dpjax.mechanisms.exponential import exponential_logits, exponential_mechanism
from dpjax.mechanisms.gaussian import (
    gaussian_mechanism,
    gaussian_sigma,
    gaussian_sigma_zcdp,
)
from dpjax.mechanisms.laplace import laplace_mechanism, laplace_scale

__all__ = [
    "NEIGHBOURING",
    "LedgerEntry",
    "PrivacyLedger",
    "advanced_composition",
    "allocate",
    "check_epsilon",
    "discrete_laplace_mechanism",
    "discrete_laplace_noise",
    "exponential_logits",
    "exponential_mechanism",
    "gaussian_mechanism",
    "gaussian_sigma",
    "gaussian_sigma_zcdp",
    "laplace_mechanism",
    "laplace_scale",
    "split_budget",
    "zcdp_to_dp",
]
