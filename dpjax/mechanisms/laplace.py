"""The Laplace mechanism on a fixed-point grid, with an exact discrete Laplace sampler.

Dwork, McSherry, Nissim & Smith (2006) add ``Lap(Δ/ε)`` to a query of L1 sensitivity ``Δ``. Done
in floating point the output's low-order bits identify the input (Mironov 2012), so dpjax never
adds float noise to a released value. Instead (Canonne, Kamath & Steinke 2020, §5; the
"noise on a fixed-point grid" route):

1. the value is clipped to its public bound ``[−B, B]`` (1-Lipschitz: the sensitivity holds);
2. it is put on the grid ``g·Z`` by ``v_int = floor(v / g)``, ``g`` a power of two chosen from
   the public ``Δ``, ``ε`` and ``B`` alone; ``|floor(x) − floor(x')| <= ceil(|x − x'|)``, so the
   grid values have L1 sensitivity ``Δ_int = ceil(Δ/g) + (coordinates − 1)``, where
   ``coordinates`` may be the most that one change of the data moves (``touched``);
3. exact discrete Laplace noise of scale ``t/s >= Δ_int/ε`` is added in integer arithmetic;
4. the result ``g·clip(v_int + Z, ±2**29)`` is released (the clip and the float conversion are
   post-processing of an exactly distributed integer).

Integer statistics (``integer=True``: counts, or sums of fixed-point weights, computed exactly in
int32 or two int32 limbs) use ``g = 1``, no rounding at all, unless ``ε`` is tiny or a public
bound beyond ``2**28`` sets a coarser power-of-two grid (an exact arithmetic shift). Real values
get about ``2**GRID_BITS`` grid steps per unit of sensitivity, so the rounding is far below the
noise; the sensitivity proof needs the value itself to be computed exactly (a clipped value, a
range), which is why dpjax computes the statistics it releases in integer arithmetic.

The mechanism returns its release *and* its :class:`~dpjax.privacy.Cost`: the
``ε`` implied by the noise it actually drew, ``Δ_int·s/t <= ε`` (exact in float32), never a
second derivation of the budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from dpjax.mechanisms.exact import joint_discrete_laplace, laplace_fraction
from dpjax.privacy.costs import Cost
from dpjax.privacy.fixed_point import WideSum, shift_clip
from dpjax.privacy.rounding import round_up

GRID_BITS = 10
"""Grid steps per unit of sensitivity, ``2**GRID_BITS`` (fewer when ``ε`` is below
``2**(GRID_BITS − 20)``, to keep the integer scale within the sampler's range)."""
MAX_GRID_VALUE = 2**28
"""Grid values are clipped to ``±2**28`` before the noise (so a value's bound sets the grid)."""
RELEASE_CLIP = 2**29


def _exponent_floor(x: jax.Array) -> jax.Array:
    """``floor(log2 x)`` for positive float32 ``x``, exactly (from the float's exponent)."""
    mantissa, exponent = jnp.frexp(x)
    del mantissa
    return exponent - 1


def _exponent_ceil(x: jax.Array) -> jax.Array:
    """``ceil(log2 x)`` for positive float32 ``x``, exactly."""
    mantissa, exponent = jnp.frexp(x)
    return jnp.where(mantissa == 0.5, exponent - 1, exponent)


def _grid_exponent(sensitivity: jax.Array, epsilon: jax.Array,
                   bound: ArrayLike | None) -> jax.Array:
    """``log2`` of the grid step: ``floor(log2 Δ) − j`` with ``j = clip(floor(log2 ε) + 20, 0,
    GRID_BITS)``, and at least ``ceil(log2 B) − 28`` so that every clipped value fits the
    28-bit grid."""
    bits = jnp.clip(_exponent_floor(epsilon) + 20, 0, GRID_BITS)
    exponent = _exponent_floor(sensitivity) - bits
    if bound is not None:
        exponent = jnp.maximum(exponent, _exponent_ceil(jnp.asarray(bound, jnp.float32)) - 28)
    return exponent


def integer_grid(sensitivity: ArrayLike, epsilon: ArrayLike, coordinates: int,
                 bound: ArrayLike | None = None, aligned: int | None = None
                 ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The grid of an exact integer release (:func:`laplace_mechanism` with ``integer=True``):
    ``(exponent, step, sensitivity_int)``. Integer statistics stay in int32 (or two int32
    limbs, :class:`dpjax.privacy.fixed_point.WideSum`); the grid is the real-valued one floored
    at 1 (``> 1`` only for a tiny ``ε`` or a bound beyond 28 bits), a grid value is the
    statistic shifted right by ``exponent``, and on a coarser grid every changed coordinate can
    cross one more boundary: a shift of ``v`` units moves a coordinate's grid value by at most
    ``ceil(|v|/step)``, and as ``Σ_i ceil(a_i) <= ceil(Σ_i a_i) + k − 1`` over ``k`` changed
    coordinates, the release's integer sensitivity is ``ceil(Δ/step)`` plus ``coordinates − 1``
    when ``step > 1``, where ``coordinates`` is the most coordinates one change of the data
    moves (one record's under add/remove; under replace-one the removed and the added
    record's, which may lie in different cells). ``aligned`` (a power of two): one of those
    coordinates moves by exact multiples of ``aligned`` units (a row count in fixed point), so
    on a grid whose step divides it that coordinate moves by ``a_1 = |v_1|/step`` exactly and
    ``Σ_i ceil(a_i) <= ceil(Σ_i a_i) + k − 2``: one boundary fewer."""
    sensitivity = jnp.asarray(sensitivity, jnp.float32)
    exponent = jnp.maximum(_grid_exponent(sensitivity, jnp.asarray(epsilon, jnp.float32),
                                          bound), 0)
    step = jnp.ldexp(jnp.float32(1.0), exponent)
    crossings = coordinates - 1
    if aligned is not None and (aligned < 1 or aligned & (aligned - 1)):
        raise ValueError(f"aligned must be a power of two (units), got {aligned}")
    if aligned is not None and coordinates > 1:
        crossings = jnp.where(step <= aligned, crossings - 1, crossings)
    sensitivity_int = jnp.ceil(sensitivity / step) + jnp.where(step > 1, crossings, 0)
    return exponent, step, sensitivity_int


def grid_step(sensitivity: ArrayLike, epsilon: ArrayLike, bound: ArrayLike | None) -> jax.Array:
    """The power-of-two grid ``g`` of a real-valued release: ``Δ·2**−j`` rounded down to a
    power of two, ``j = clip(floor(log2 ε) + 20, 0, GRID_BITS)`` (a coarser grid when ``ε`` is
    tiny keeps the integer scale ``Δ/(g·ε)`` within the sampler's precise range), and at least
    ``B·2**−28``. Depends on public quantities only."""
    return jnp.ldexp(jnp.float32(1.0), _grid_exponent(jnp.asarray(sensitivity, jnp.float32),
                                                      jnp.asarray(epsilon, jnp.float32),
                                                      bound))


class LaplacePlan(NamedTuple):
    """A :func:`laplace_mechanism` release before its noise: the clipped grid values, the grid
    step, the sampler's scale ``t/s`` and the release's cost (set by ``(t, s)``)."""

    grid_value: jax.Array
    step: jax.Array
    t: jax.Array
    s: jax.Array
    cost: Cost


def laplace_mechanism(
    key: jax.Array,
    value: ArrayLike,
    sensitivity: ArrayLike,
    epsilon: ArrayLike,
    *,
    bound: ArrayLike | None = None,
    integer: bool = False,
    event_ndim: int | None = None,
    touched: int | None = None,
    aligned: int | None = None,
    label: str = "",
) -> tuple[jax.Array, Cost]:
    """Release ``value`` with exact discrete Laplace noise on a fixed-point grid (``ε``-DP).

    Args:
      key: PRNG key of this release (never shared with another release).
      value: ``[*batch, *event]``; each ``event`` block (the trailing ``event_ndim`` axes) is
        one release of L1 sensitivity ``sensitivity``; the leading axes are independent
        releases of the same kind. Integers (``integer=True``) are best passed as int32 (or,
        beyond int32, as a :class:`~dpjax.privacy.fixed_point.WideSum`): they are never
        converted to float before the noise.
      sensitivity: ``Δ`` (traced allowed), the L1 sensitivity of one event block.
      epsilon: ``ε`` of one event block (traced allowed).
      bound: public bound ``B``: real values are clipped to ``[−B, B]`` first (needed for real
        values: it sets the grid). With ``integer=True`` it only widens the grid (to ``2**k``
        with ``B/2**k <= 2**28``).
      integer: ``value`` and ``Δ`` are integers (counts, fixed-point sums): the grid is
        :func:`grid_step` floored at 1 (so 1 for counts at any reasonable ``ε``), applied by an
        exact arithmetic shift.
      event_ndim: trailing axes forming one release (default: the whole array is one).
      touched: the most coordinates of an event block that one change of the data moves
        (default: all of them; under replace-one, the removed record's and the added one's);
        on a grid coarser than 1 each adds one unit to the integer sensitivity
        (:func:`integer_grid`).
      aligned: with ``integer=True``, one touched coordinate moves by exact multiples of
        this many units (a power of two; a row count in fixed point): on a grid step that
        divides it, it adds no unit (:func:`integer_grid`).
      label: how the sensitivity reads in the ledger (e.g. ``"L1 sens. 1"``).

    Returns:
      ``(released, cost)``: float32 ``released`` of ``value``'s shape (multiples of the grid),
      and the cost of each release, ``epsilon`` of shape ``batch``.
    """
    plan = plan_laplace(value, sensitivity, epsilon, bound=bound, integer=integer,
                        event_ndim=event_ndim, touched=touched, aligned=aligned, label=label)
    return laplace_releases([key], [plan])[0]


def plan_laplace(
    value: ArrayLike,
    sensitivity: ArrayLike,
    epsilon: ArrayLike,
    *,
    bound: ArrayLike | None = None,
    integer: bool = False,
    event_ndim: int | None = None,
    touched: int | None = None,
    aligned: int | None = None,
    label: str = "",
) -> LaplacePlan:
    """A :func:`laplace_mechanism` release up to its noise (the same arguments, less the key):
    release it with :func:`laplace_releases`, alone or with others drawn at the same point."""
    sensitivity = jnp.asarray(sensitivity, jnp.float32)
    epsilon = jnp.asarray(epsilon, jnp.float32)
    wide = isinstance(value, WideSum)
    if wide and not integer:
        raise ValueError("a WideSum is an exact integer: release it with integer=True")
    value = value if wide else jnp.asarray(value)
    shape = value.hi.shape if wide else value.shape
    event_ndim = len(shape) if event_ndim is None else event_ndim
    batch_shape = shape[:len(shape) - event_ndim]
    coordinates = math.prod(shape[len(shape) - event_ndim:])
    if touched is not None:
        coordinates = min(coordinates, touched)
    if integer:
        exponent, step, sensitivity_int = integer_grid(sensitivity, epsilon, coordinates, bound,
                                                       aligned)
        grid_value = shift_clip(value, exponent, MAX_GRID_VALUE)
    else:
        if bound is None:
            raise ValueError("a real-valued release needs a public bound (it sets the grid)")
        step = grid_step(sensitivity, epsilon, bound)
        sensitivity_int = jnp.ceil(sensitivity / step) + (coordinates - 1)
        clipped = jnp.clip(value.astype(jnp.float32), -bound, bound)
        grid_value = jnp.floor(clipped / step).astype(jnp.int32)
    t, s = laplace_fraction(round_up(sensitivity_int / epsilon))
    # keep sensitivity_int * s below 2**24 (exact in float32); a smaller s only adds noise
    s = jnp.minimum(s, (jnp.float32(2**23) / sensitivity_int).astype(jnp.uint32))
    spent = sensitivity_int * s.astype(jnp.float32) / t.astype(jnp.float32)
    spent = jnp.where(s >= 1, spent, jnp.nan)       # scale beyond the sampler: not releasable
    grid_value = jnp.clip(grid_value, -MAX_GRID_VALUE, MAX_GRID_VALUE)
    name = "discrete Laplace" + (f" ({label})" if label else "")
    cost = Cost(jnp.broadcast_to(spent, batch_shape), jnp.zeros(batch_shape, jnp.float32), name)
    return LaplacePlan(grid_value, step, t, s, cost)


def laplace_releases(keys: Sequence[jax.Array], plans: Sequence[LaplacePlan]
                     ) -> list[tuple[jax.Array, Cost]]:
    """Release planned :func:`plan_laplace` releases, each with its own key (never shared with
    another release): ``[(released, cost)]``, each exactly what :func:`laplace_mechanism` gives
    alone (the same draws: :func:`~dpjax.mechanisms.exact.joint_discrete_laplace`), from one
    sampler in the compiled program however many releases there are."""
    noises = joint_discrete_laplace(jnp.stack(list(keys)),
                                    tuple(p.grid_value.shape for p in plans),
                                    jnp.stack([p.t for p in plans]),
                                    jnp.stack([p.s for p in plans]))
    return [((jnp.clip(p.grid_value + noise, -RELEASE_CLIP, RELEASE_CLIP)
              .astype(jnp.float32) * p.step), p.cost)
            for p, noise in zip(plans, noises, strict=True)]


def report_noisy_min(
    key: jax.Array,
    scores: ArrayLike,
    valid: ArrayLike,
    sensitivity: ArrayLike,
    epsilon: ArrayLike,
    *,
    bound: ArrayLike,
    label: str = "",
) -> tuple[jax.Array, Cost]:
    """Report noisy min (Dwork & Roth 2014, Claim 3.9, for scores that can move either way):
    every score gets its own :func:`laplace_mechanism` release at ``ε/2`` (noise ``2Δ/ε``) and
    only the index of the smallest valid noisy score is released; the selection costs twice a
    score's spent ``ε``, at most ``ε``.

    Args:
      key: PRNG key of this selection.
      scores: ``[n]`` real scores, each of sensitivity ``Δ`` and within ``[−bound, bound]``.
      valid: ``[n]`` bool, the candidates that may be selected (public).
      sensitivity: ``Δ`` of one score.
      epsilon: ``ε`` of the selection (traced allowed).
      bound: public bound of the scores (sets the grid).
      label: how the calibration reads in the ledger.

    Returns:
      ``(index, cost)``: the int32 index of the selected candidate and the selection's cost.
    """
    noisy, each = laplace_mechanism(key, scores, sensitivity, jnp.asarray(epsilon) / 2,
                                    bound=bound, event_ndim=0)
    index = jnp.argmin(jnp.where(valid, noisy, jnp.inf)).astype(jnp.int32)
    name = "report noisy min, discrete Laplace" + (f" ({label})" if label else "")
    return index, Cost(2.0 * jnp.max(each.epsilon), jnp.float32(0.0), name)
