"""DP mechanisms: explicit PRNG keys, ``vmap``-able, exact samplers.

Every mechanism returns ``(release, Cost)``: the object that sets the noise also reports what it
spent (:class:`dpjax.privacy.Cost`); the ledger is assembled from those costs.

* :func:`laplace_mechanism`, :func:`gaussian_mechanism`: exact discrete Laplace / Gaussian noise
  on a fixed-point grid;
* :func:`permute_and_flip`: private selection with exact coins; :func:`report_noisy_min`:
  selection by Laplace-noised scores;
* :func:`release_size`: the noisy row count;
* :mod:`~dpjax.mechanisms.exact`: the exact samplers; :mod:`~dpjax.mechanisms.smooth_sensitivity`:
  the smooth sensitivity of the Gini impurity.
"""

from dpjax.mechanisms.exact import (
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    uniform_below,
)
from dpjax.mechanisms.exponential import permute_and_flip
from dpjax.mechanisms.gaussian import gaussian_mechanism
from dpjax.mechanisms.laplace import laplace_mechanism, report_noisy_min
from dpjax.mechanisms.size import release_size

__all__ = [
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "gaussian_mechanism",
    "laplace_mechanism",
    "permute_and_flip",
    "release_size",
    "report_noisy_min",
    "uniform_below",
]
