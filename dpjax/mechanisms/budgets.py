"""Budget splits: a total ``(ε, δ)`` turned into per-release parameters (the inverse of the
ledger's composition, :mod:`dpjax.mechanisms.accounting`), as traced ``jnp`` functions so that
``ε`` can be swept. Every result is rounded down with a relative margin of ``1e-5``, so the
ledger's float64 recomputation from the released costs stays within the request."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.mechanisms.rounding import round_down

ACCOUNTING = ("basic", "advanced", "zcdp")
MARGIN = 1.0 - 1e-5


def zcdp_budget(epsilon: ArrayLike, delta: float) -> jax.Array:
    """The largest ``ρ`` with ``ρ + 2·sqrt(ρ·ln(1/δ)) <= ε`` (Bun & Steinke 2016, Prop. 1.3),
    ``(sqrt(ln(1/δ) + ε) − sqrt(ln(1/δ)))²``, rounded down; 0 when ``δ = 0``."""
    if delta <= 0.0:
        return jnp.zeros_like(jnp.asarray(epsilon, jnp.float32))
    log_term = math.log(1.0 / delta)
    epsilon = jnp.asarray(epsilon, jnp.float32)
    rho = epsilon**2 / (jnp.sqrt(log_term + epsilon) + math.sqrt(log_term))**2
    return round_down(rho * MARGIN)


def advanced_round_epsilon(epsilon: ArrayLike, fixed: ArrayLike, rounds: ArrayLike,
                           delta: float, square_share: float = 1.0,
                           iterations: int = 60) -> jax.Array:
    """The largest ``e`` with ``sqrt(2 ln(1/δ)(ε_f² + r·q·e²)) + ε_f(e^{ε_f} − 1) +
    r·q·e(e^e − 1) <= ε``: ``r`` rounds of ``e``-DP beside one ``ε_f``-DP release composed by
    the advanced composition theorem (Dwork, Rothblum & Vadhan 2010, heterogeneous form; the
    stumps spec §6.2 inverts it by bisection) with slack ``δ``; 0 if even ``e = 0`` does not
    fit. A round made of releases of shares ``s_k`` of ``e`` (``Σ s_k = 1``) has ``q = Σ s_k²``
    (``square_share``): its terms are ``Σ (s_k e)² = q·e²`` and ``Σ s_k e(e^{s_k e} − 1) <=
    q·e(e^e − 1)`` (convexity), so the bound holds for every split of a round."""
    epsilon = jnp.asarray(epsilon, jnp.float32)
    fixed = jnp.asarray(fixed, jnp.float32)
    rounds = jnp.asarray(rounds, jnp.float32)
    log_term = math.log(1.0 / delta)

    def total(e: jax.Array) -> jax.Array:
        return (jnp.sqrt(2.0 * log_term * (fixed**2 + rounds * square_share * e**2))
                + fixed * jnp.expm1(fixed) + rounds * square_share * e * jnp.expm1(e))

    def halve(_: int, bracket: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        low, high = bracket
        middle = 0.5 * (low + high)
        fits = total(middle) <= epsilon * MARGIN
        return jnp.where(fits, middle, low), jnp.where(fits, high, middle)

    high = jnp.broadcast_to(epsilon, jnp.broadcast_shapes(epsilon.shape, fixed.shape,
                                                          rounds.shape))
    low, _ = jax.lax.fori_loop(0, iterations, halve, (jnp.zeros_like(high), high))
    return round_down(low)


def round_epsilon(epsilon: ArrayLike, fixed: ArrayLike, rounds: ArrayLike, delta: float,
                  accounting: str, square_share: float = 1.0) -> jax.Array:
    """Per-round ``ε_0`` of ``r = rounds`` pure-DP rounds beside one ``ε_f = fixed`` release
    (a released sample size, say) within the total ``(ε, δ)`` (smooth boosting spec §3.4;
    stumps spec §6.2):

    * ``"basic"``: ``(ε − ε_f)/r``;
    * ``"advanced"``: the larger of that and :func:`advanced_round_epsilon` (``δ > 0``);
    * ``"zcdp"``: the larger of that and ``sqrt(2(ρ − ε_f²/2)/(r·q))``, ``ρ`` =
      :func:`zcdp_budget` (``ε_0``-DP is ``ε_0²/2``-zCDP, Bun & Steinke 2016 Prop. 1.4; a
      round of releases of shares ``s_k`` of ``ε_0`` is ``q·ε_0²/2``-zCDP, ``q = Σ s_k²`` =
      ``square_share``).

    Both candidates hold (the ledger takes the smaller total of basic composition and the
    route's view). With ``δ = 0`` every route is basic."""
    if accounting not in ACCOUNTING:
        raise ValueError(f"accounting must be one of {ACCOUNTING}, got {accounting!r}")
    epsilon = jnp.asarray(epsilon, jnp.float32)
    fixed = jnp.asarray(fixed, jnp.float32)
    rounds = jnp.asarray(rounds, jnp.float32)
    basic = jnp.maximum(epsilon - fixed, 0.0) / rounds
    if delta <= 0.0 or accounting == "basic":
        return round_down(basic)
    if accounting == "advanced":
        return jnp.maximum(round_down(basic), advanced_round_epsilon(
            epsilon, fixed, rounds, delta, square_share))
    rho = round_rho(epsilon, fixed, rounds, delta) / square_share
    return round_down(jnp.maximum(basic, jnp.sqrt(2.0 * rho)))


def round_rho(epsilon: ArrayLike, fixed: ArrayLike, rounds: ArrayLike,
              delta: float) -> jax.Array:
    """Per-round zCDP ``ρ_0 = (ρ − ε_f²/2)/r`` of ``r`` rounds beside one ``ε_f``-DP release
    within ``(ε, δ)`` (``ρ`` = :func:`zcdp_budget`; 0 when nothing is left)."""
    rho = zcdp_budget(epsilon, delta) - 0.5 * jnp.asarray(fixed, jnp.float32) ** 2
    return round_down(jnp.maximum(rho, 0.0) / jnp.asarray(rounds, jnp.float32))


__all__ = ["ACCOUNTING", "advanced_round_epsilon", "round_epsilon", "round_rho",
           "zcdp_budget"]
