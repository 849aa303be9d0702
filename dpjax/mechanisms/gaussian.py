"""Gaussian mechanism, with its (eps, delta) and zero-concentrated DP (zCDP) calibrations.

* Classic calibration (Dwork & Roth 2014, Thm A.1): ``sigma = Delta sqrt(2 ln(1.25/delta)) / eps``
  gives ``(eps, delta)``-DP for ``eps < 1``.
* zCDP (Bun & Steinke 2016, Prop. 1.6): ``N(0, sigma**2)`` on an L2-sensitivity-``Delta``
  query is ``rho``-zCDP with ``rho = Delta**2 / (2 sigma**2)``; compose by adding ``rho`` and
  convert with :func:`dpjax.mechanisms.accounting.zcdp_to_dp`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Noise standard deviation of the classic Gaussian mechanism for ``(eps, delta)``-DP.

    Valid for ``0 < eps < 1`` and ``0 < delta < 1`` (the theorem's range); raises otherwise.
    """
    if not 0.0 < epsilon < 1.0:
        raise ValueError(
            f"the classic Gaussian calibration needs 0 < epsilon < 1, got {epsilon}; "
            "use gaussian_sigma_zcdp for larger budgets"
        )
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def gaussian_sigma_zcdp(sensitivity: float, rho: float) -> float:
    """Noise standard deviation giving ``rho``-zCDP: ``sigma = Delta / sqrt(2 rho)``."""
    if rho <= 0:
        raise ValueError(f"rho must be > 0, got {rho}")
    return sensitivity / math.sqrt(2.0 * rho)


def gaussian_mechanism(key: jax.Array, value: ArrayLike, sigma: ArrayLike) -> jax.Array:
    """Release ``value + N(0, sigma**2)`` element-wise."""
    value = jnp.asarray(value, jnp.float32)
    return value + jnp.asarray(sigma, jnp.float32) * jax.random.normal(key, value.shape)
