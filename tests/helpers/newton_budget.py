"""Private Newton boosting's budget split (``dpjax.ensembles.newton.schedule.schedule``) restated
from its public parts, for the tests that compose it (``tests/ensembles/newton``,
``tests/privacy/test_dp_accounting.py``)."""

from __future__ import annotations

import jax.numpy as jnp

from dpjax.ensembles.newton.schedule import SCOUT_SHARE
from dpjax.privacy.composition import round_budget, round_rho, zcdp_budget
from dpjax.privacy.rounding import round_down


def prior_epsilon(epsilon: float, noise: str = "laplace", delta: float = 0.0,
                  prior_share: float = 0.1) -> float:
    """The prior's share ``ε_0`` of the route (rounded down in float32): ``prior_share·ε``
    before Laplace rounds, ``sqrt(2·prior_share·ρ(ε, δ))`` (``prior_share·ρ`` in zCDP) before
    Gaussian ones."""
    if noise == "gaussian":
        return float(round_down(jnp.sqrt(2.0 * prior_share * zcdp_budget(epsilon, delta))))
    return float(round_down(prior_share * jnp.float32(epsilon)))


def newton_split(epsilon: float, rounds: int, delta: float, noise: str,
                 scout: bool = False) -> tuple[list[float], float]:
    """``(counts, each)``: the ``ε`` of the Laplace releases of the class counts (the prior, or
    with ``scout`` the ``noise="auto"`` scout at ``SCOUT_SHARE·ε`` then the prior's rest of
    its share in the route) and each of ``rounds`` rounds' budget: ``ε_r`` of
    :func:`round_budget` of the optimal route (Laplace, the ``boosted`` learner's) or ``ρ_r``
    of :func:`round_rho` (Gaussian)."""
    fixed = prior_epsilon(epsilon, noise, delta)
    if noise == "gaussian":
        each = float(round_rho(epsilon, fixed, rounds, delta))
    else:
        each = float(round_budget(epsilon, fixed, rounds, delta, "optimal", most=rounds))
    if not scout:
        return [fixed], each
    first, share = round_down(SCOUT_SHARE * jnp.float32(epsilon)), jnp.float32(fixed)
    rest = (jnp.sqrt(jnp.maximum(share**2 - first**2, 0.0)) if noise == "gaussian"
            else share - first)     # in float32, as the fit computes it
    return [float(first), float(round_down(rest))], each
