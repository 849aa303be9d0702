"""The Gaussian mechanism on a fixed-point grid, with an exact discrete Gaussian sampler (zCDP).

A query of L2 sensitivity ``Δ₂`` released with Gaussian noise of standard deviation ``σ`` is
``Δ₂²/(2σ²)``-zCDP (Bun & Steinke 2016), and so is the discrete Gaussian ``N_Z(0, σ²)`` on an
integer query (Canonne, Kamath & Steinke 2020, Thm. 4 and its multivariate form for
independent coordinates). As with the Laplace mechanism
(:mod:`dpjax.mechanisms.laplace`), dpjax never adds floating-point noise to a value:

1. the value is clipped to its public bound ``[−B, B]`` per coordinate (1-Lipschitz in every
   coordinate, so the L2 sensitivity holds);
2. it is put on the grid ``g·Z`` by ``v_int = floor(v / g)``, computed exactly
   (:func:`grid_floor`). The grid step ``g = m·2**e`` (``16 <= m <= 32`` an integer) depends on
   public quantities only; ``floor(x) − floor(x') = (x − x') + (frac(x') − frac(x))`` with
   ``|frac(x') − frac(x)| < 1`` per coordinate, so by Minkowski the grid values have L2
   sensitivity ``Δ_grid = Δ₂/g + sqrt(D)`` over ``D`` coordinates;
3. exact discrete Gaussian noise of standard deviation ``2**NOISE_BITS`` grid units
   (:func:`~dpjax.mechanisms.exact.discrete_gaussian`) is added in integer arithmetic, which is
   ``ρ = Δ_grid²/2**(2·NOISE_BITS + 1)``-zCDP;
4. ``g·clip(v_int + Z, ±2**29)`` is released (post-processing).

The noise on the grid is fixed at ``2**15`` units (the largest the exact sampler takes), so the
grid sets the real noise ``σ = g·2**15``: :func:`gaussian_grid_step` rounds the smallest step
with ``Δ₂/g + sqrt(D) <= 2**15·sqrt(2ρ)`` (and at least ``B·2**−28``, so that the clipped values
fit 28 bits) up to the form ``m·2**e``. Its 4-bit mantissa makes ``σ`` at most ``1/16`` above
``Δ₂/(2**15·sqrt(2ρ) − sqrt(D))·2**15`` (when the bound does not set the grid), the rounding's
own share being
``sqrt(D)/(2**15·sqrt(2ρ))`` of the noise; a budget that leaves the rounding more than half the
noise (``sqrt(D) > 2**14·sqrt(2ρ)``) reports a NaN cost (the ledger's "epsilon is too small").

The mechanism returns its release and its :class:`~dpjax.privacy.Cost`: ``rho``
is the ``ρ`` implied by the grid and noise actually used (rounded up, at most the requested
``ρ``), and ``(epsilon, delta)`` that ``ρ`` converted for the release alone at the caller's
``δ`` (``ε = ρ + 2 sqrt(ρ ln(1/δ))``, Bun & Steinke 2016, Prop. 1.3).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.mechanisms.exact import discrete_gaussian
from dpjax.mechanisms.laplace import MAX_GRID_VALUE, RELEASE_CLIP
from dpjax.privacy.composition import zcdp_epsilon
from dpjax.privacy.costs import Cost
from dpjax.privacy.rounding import float32_above, round_down, round_up

NOISE_BITS = 15
"""The discrete Gaussian's standard deviation on the grid is ``2**NOISE_BITS`` units."""
NOISE_BITS_SCALE = float(2**NOISE_BITS)
MANTISSA_BITS = 4
"""The grid step is ``m·2**e`` with ``2**MANTISSA_BITS <= m <= 2**(MANTISSA_BITS + 1)``: at
most a ``2**−MANTISSA_BITS`` relative excess of noise over the smallest admissible step."""
MAX_ROUNDING_SHARE = 0.5
"""A release whose grid rounding ``sqrt(D)`` would exceed this share of the noise's grid units
``2**NOISE_BITS·sqrt(2ρ)`` (more than doubling the noise) is refused with a NaN cost."""
MIN_STEP = 2.0**-100
"""The grid step is at least this (keeps ``2**e`` a normal float32)."""


def _pow2(exponent: jax.Array) -> jax.Array:
    """``2**exponent`` as float32, exactly, for int32 ``exponent`` in ``[−126, 127]`` (built
    from the bits, not by ``pow``)."""
    biased = (jnp.asarray(exponent, jnp.int32) + 127) << 23
    return jax.lax.bitcast_convert_type(biased, jnp.float32)


def _sqrt_up(n: int) -> np.float32:
    """The smallest float32 ``>= sqrt(n)`` (``math.sqrt`` is correctly rounded in float64)."""
    return float32_above(math.sqrt(n))


def _grid(l2_sensitivity: jax.Array, rho: jax.Array, coordinates: int,
          bound: ArrayLike) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(exponent, multiplier, valid)`` of the grid step ``g = multiplier·2**exponent``
    (:func:`gaussian_grid_step`); ``valid`` is false where the release is refused."""
    target = NOISE_BITS_SCALE * round_down(jnp.sqrt(2.0 * rho))   # <= 2**15 sqrt(2ρ)
    root = jnp.float32(_sqrt_up(coordinates))                     # >= sqrt(D)
    room = round_down(target - root)                              # <= 2**15 sqrt(2ρ) − sqrt(D)
    valid = root <= MAX_ROUNDING_SHARE * target
    smallest = round_up(l2_sensitivity / jnp.where(valid, room, 1.0))
    bound = jnp.asarray(bound, jnp.float32)
    smallest = jnp.maximum(smallest, round_up(bound * (1.0 / MAX_GRID_VALUE)))
    smallest = jnp.maximum(smallest, jnp.float32(MIN_STEP))
    valid = valid & jnp.isfinite(smallest) & (smallest < 2.0**120)
    smallest = jnp.where(valid, smallest, 1.0)
    _, exponent = jnp.frexp(smallest)               # smallest = mantissa·2**exponent, [0.5, 1)
    exponent = exponent - 1 - MANTISSA_BITS         # smallest / 2**exponent in [16, 32)
    multiplier = jnp.ceil(smallest * _pow2(-exponent))               # exact scaling; 16..32
    return exponent, multiplier, valid



def gaussian_grid_step(l2_sensitivity: ArrayLike, rho: ArrayLike, coordinates: int,
                       bound: ArrayLike) -> jax.Array:
    """The grid step ``g`` of a release of ``coordinates`` values of L2 sensitivity ``Δ₂`` at
    zCDP ``ρ`` with public bound ``B``: the smallest ``m·2**e`` (``16 <= m <= 32``) with
    ``g >= Δ₂/(2**15·sqrt(2ρ) − sqrt(D))`` (so that ``(Δ₂/g + sqrt(D))²/2**31 <= ρ``) and
    ``g >= B·2**−28`` (so that every clipped value fits the 28-bit grid), each bound rounded
    up. NaN where the release is refused (``sqrt(D) > 2**14·sqrt(2ρ)``, see the module
    docstring). Depends on public quantities only."""
    exponent, multiplier, valid = _grid(jnp.asarray(l2_sensitivity, jnp.float32),
                                        jnp.asarray(rho, jnp.float32), coordinates, bound)
    return jnp.where(valid, multiplier * _pow2(exponent), jnp.nan)


def free_bound(l2_sensitivity: ArrayLike, rho: ArrayLike) -> jax.Array:
    """The largest public bound ``B`` that does not set the grid of a release at ``(Δ₂, ρ)``:
    ``2**12·Δ₂/sqrt(2ρ)`` rounded down, half the ``B`` at which ``B·2**−28`` would reach the
    sensitivity's step ``Δ₂/(2**15·sqrt(2ρ))`` (the noise's standard deviation is then set by
    ``(Δ₂, ρ)`` alone). Values beyond ``±B`` are clipped: a caller whose values may exceed it
    trades their accuracy, never the privacy."""
    sigma = jnp.asarray(l2_sensitivity, jnp.float32) / jnp.sqrt(2.0 * jnp.asarray(rho,
                                                                                  jnp.float32))
    return round_down(sigma * 2.0**12)


def grid_floor(value: jax.Array, exponent: jax.Array, multiplier: jax.Array) -> jax.Array:
    """``floor(value / (multiplier·2**exponent))`` exactly, as int32 (float32 ``value`` with
    ``|value| <= 2**28·multiplier·2**exponent``, integer ``1 <= multiplier <= 32``).

    ``x = value·2**−exponent`` is exact (a power-of-two scaling) and ``a = floor(x)``, ``|a| <=
    2**33``, is an integer-valued float32; ``floor(a/m) = floor(x/m)``, computed in int32 from
    ``a = hi·2**16 + lo`` (``0 <= lo < 2**16``, both exact) and ``2**16 = q·m + r`` as ``hi·q
    + floor((hi·r + lo)/m)``. A negative ``value`` whose scaling underflows to zero (flushed
    subnormals) floors to −1; a subnormal ``value`` itself may read as 0 on backends that
    flush them (a change below ``2**−126``, far inside the rounding margins of the cost).
    """
    value = jnp.asarray(value, jnp.float32)
    a = jnp.floor(value * _pow2(-exponent))
    a = jnp.where((value < 0) & (a == 0), -1.0, a)
    hi = jnp.floor(a * (1.0 / 2**16))
    lo = (a - hi * 2**16).astype(jnp.int32)
    hi = hi.astype(jnp.int32)
    m = jnp.asarray(multiplier).astype(jnp.int32)
    return hi * (2**16 // m) + jnp.floor_divide(hi * (2**16 % m) + lo, m)


def _concrete(x: ArrayLike) -> float | None:
    """``x`` as a float if it is a concrete scalar, else ``None`` (traced or not a scalar)."""
    try:
        return float(x)
    except (TypeError, jax.errors.ConcretizationTypeError):
        return None


def _validate(l2_sensitivity: ArrayLike, rho: ArrayLike, bound: ArrayLike,
              delta: float) -> None:
    """Check the concrete inputs (traced ones are the caller's responsibility)."""
    if isinstance(delta, (bool, str, bytes)) or _concrete(delta) is None:
        raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
    if not 0.0 < float(delta) < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    for name, x, lowest in (("rho", rho, "> 0"), ("l2_sensitivity", l2_sensitivity, ">= 0"),
                            ("bound", bound, "> 0")):
        number = _concrete(x)
        if number is not None and not (math.isfinite(number) and (
                number > 0 or (lowest == ">= 0" and number == 0))):
            raise ValueError(f"{name} must be {lowest} and finite, got {x!r}")


def gaussian_cost(
    l2_sensitivity: ArrayLike,
    rho: ArrayLike,
    coordinates: int,
    *,
    bound: ArrayLike,
    delta: float,
    label: str = "",
) -> Cost:
    """The :class:`~dpjax.privacy.Cost` of :func:`gaussian_mechanism` on a
    release of ``coordinates`` values (known before any noise is drawn: it depends on public
    quantities only). Arguments as there.

    ``rho`` is ``(Δ₂/g + sqrt(D))²/2**31`` on the grid step ``g`` of :func:`gaussian_grid_step`,
    every float32 rounding upwards, and at most the requested ``ρ``: ``g`` is at least
    ``Δ₂/(2**15·sqrt(2ρ) − sqrt(D))`` with each of its roundings conservative, so the exact
    spent ``ρ`` is at most the requested one and the minimum only drops the few ulps of this
    second computation. ``epsilon = ρ + 2 sqrt(ρ ln(1/δ))`` rounded up, ``delta`` is ``δ``
    rounded up to float32 (the ``(ε, δ)`` claim holds at any larger ``δ``). All NaN where the
    release is refused.
    """
    _validate(l2_sensitivity, rho, bound, delta)
    sensitivity = jnp.asarray(l2_sensitivity, jnp.float32)
    rho = jnp.asarray(rho, jnp.float32)
    exponent, multiplier, valid = _grid(sensitivity, rho, coordinates, bound)
    step = multiplier * _pow2(exponent)                                   # exact
    units = round_up(round_up(sensitivity / step) + jnp.float32(_sqrt_up(coordinates)))
    spent = jnp.minimum(round_up(units * units * (0.5 / NOISE_BITS_SCALE**2)), rho)
    spent = jnp.where(valid, spent, jnp.nan)
    epsilon = zcdp_epsilon(spent, delta)
    name = "discrete Gaussian" + (f" (L2 sens. {label})" if label else "")
    delta = jnp.full(jnp.shape(spent), float32_above(float(delta)), jnp.float32)
    return Cost(epsilon, delta, name, spent)


def gaussian_mechanism(
    key: jax.Array,
    value: ArrayLike,
    l2_sensitivity: ArrayLike,
    rho: ArrayLike,
    *,
    bound: ArrayLike,
    delta: float,
    label: str = "",
) -> tuple[jax.Array, Cost]:
    """Release ``value`` with exact discrete Gaussian noise on a fixed-point grid (``ρ``-zCDP).

    Args:
      key: PRNG key of this release (never shared with another release).
      value: real array of any (static) shape; the whole array is one release of L2
        sensitivity ``l2_sensitivity``.
      l2_sensitivity: ``Δ₂ >= 0`` (traced allowed).
      rho: the zCDP budget ``ρ > 0`` of the release (traced allowed).
      bound: public bound ``B > 0`` (Python float or traced scalar): every coordinate is
        clipped to ``[−B, B]`` first; the grid is at least ``B·2**−28``.
      delta: the ``δ`` in ``(0, 1)`` (static) at which the cost states this release's own
        ``(ε, δ)``; composition in zCDP uses ``cost.rho`` instead.
      label: how the sensitivity reads in the ledger (e.g. ``"4/(κn)"``: the mechanism is then
        ``"discrete Gaussian (L2 sens. 4/(κn))"``).

    Returns:
      ``(released, cost)``: float32 ``released`` of ``value``'s shape, ``g·(v_int + Z)`` on
      the grid step ``g`` of :func:`gaussian_grid_step` (``Z``'s standard deviation is
      ``2**15``, so the noise's is ``g·2**15``; the float conversion rounds beyond 24 bits), and
      the scalar :func:`gaussian_cost`: ``rho`` the spent ``ρ`` (``<= rho``), ``epsilon = ρ +
      2 sqrt(ρ ln(1/δ))`` rounded up, ``delta``; NaN when the budget is too small for the grid
      (the release is then refused by the ledger).

    Raises:
      ValueError: a concrete ``rho`` or ``bound`` not positive and finite, a concrete
        ``l2_sensitivity`` negative or infinite, or ``delta`` not in ``(0, 1)``.
    """
    value = jnp.asarray(value, jnp.float32)
    cost = gaussian_cost(l2_sensitivity, rho, value.size, bound=bound, delta=delta, label=label)
    exponent, multiplier, _ = _grid(jnp.asarray(l2_sensitivity, jnp.float32),
                                    jnp.asarray(rho, jnp.float32), value.size, bound)
    bound = jnp.asarray(bound, jnp.float32)
    grid_value = jnp.clip(grid_floor(jnp.clip(value, -bound, bound), exponent, multiplier),
                          -MAX_GRID_VALUE, MAX_GRID_VALUE)
    noise = discrete_gaussian(key, value.shape, NOISE_BITS)
    noisy = jnp.clip(grid_value + noise, -RELEASE_CLIP, RELEASE_CLIP)
    return noisy.astype(jnp.float32) * (multiplier * _pow2(exponent)), cost
