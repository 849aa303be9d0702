"""Exact samplers built from uniform random bits only (no floating-point noise).

Canonne, Kamath & Steinke, *The Discrete Gaussian for Differential Privacy* (NeurIPS 2020),
§5: a Bernoulli(exp(−γ)) coin (their Algorithm 1) and the discrete Laplace distribution
(Algorithm 2) can be drawn *exactly* from fair random bits with integer arithmetic alone.
Floating-point noise does not have the distribution its privacy proof assumes (Mironov 2012),
so every value dpjax releases goes through these samplers.

Each sampler is a per-lane state machine (a lane runs one draw) run by :func:`run_lanes`: every
iteration hands every lane two fresh uint32 words (threefry of the draw's index and its
iteration count, so a draw's words never depend on the others); a lane that rejects
just continues in the next iteration (a handful of iterations on average, with probability 1 a
finite number). Large arrays of draws run through a window of lanes: a lane whose draw is done
starts the next one, so the long tail of the slowest draws keeps only the window busy, not
every draw. The results are exact given ideal random bits; JAX's threefry generator is not a
cryptographically secure generator (a limitation the README states).

Representations (all exact):

* ``γ = whole + frac / 2**32`` with ``whole`` int32 ``>= 0`` and ``frac`` uint32, the rate of a
  Bernoulli(exp(−γ)) coin: the product of ``whole`` Bernoulli(e^−1) coins and one
  Bernoulli(exp(−frac/2**32)) coin, each run by Algorithm 1.
* a discrete Laplace scale is the rational ``t / s`` with ``t = 2**k`` (``11 <= k <= 31``) and
  ``s >= 1`` an integer: ``P(Z = z) ∝ exp(−|z|·s/t)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry_2x32

from dpjax.privacy.rounding import round_down

U32 = jnp.uint32
SATURATION = 2**30
"""Discrete-Laplace draws are returned saturated to ``[−2**30, 2**30]``: whoever adds one to a
value in ``[−2**28, 2**28]`` and clips the sum to ``[−2**29, 2**29]`` gets exactly the clipped
sum of the unsaturated draw (a saturated draw lands outside the clip range either way)."""
GEOMETRIC_CAP = 2**19
"""The Geometric(e^−1) count of Algorithm 2 stops at ``2**19``, an event of probability
``e^(−2**19)`` (zero in double precision); below it the arithmetic fits in 32 bits for the
``(t, s)`` that :func:`laplace_fraction` produces (``t mod s < 2**12``)."""
WINDOW_SHARE = 16
MIN_WINDOW = 1024
"""A sampler runs ``max(n/WINDOW_SHARE, MIN_WINDOW)`` lanes at a time (all ``n`` when fewer):
a lane that finishes hands its slot to the next draw, so the slowest draws of the tail no
longer keep every lane of a large array busy. A discrete-Laplace draw takes about ten
iterations on average and the slowest of 10^5 about fifty: 90,112 draws went from 158 ms (all
lanes to the end, stragglers compacted) to 52 ms on two CPU cores."""

LANE_BYTES = 48
"""Memory of one lane of the exact samplers (state, words, compaction copies), for the learners'
memory estimates."""

Lanes = tuple[jax.Array, ...]


def window_size(n: int) -> int:
    """Lanes run at a time for ``n`` draws (:data:`WINDOW_SHARE`, :data:`MIN_WINDOW`)."""
    return min(n, max(-(-n // WINDOW_SHARE), MIN_WINDOW))


def run_lanes(
    key: jax.Array,
    step: Callable[[jax.Array, jax.Array, Lanes], Lanes],
    done: Callable[[Lanes], jax.Array],
    start: Callable[[jax.Array], Lanes],
    n: int,
    outputs: tuple[int, ...],
    groups: tuple[int, ...] | None = None,
) -> Lanes:
    """Run ``n`` independent draws of a per-lane state machine, a window of lanes at a time.

    Args:
      key: PRNG key; the ``t``-th iteration of draw ``j`` reads the two words
        ``threefry2x32(pair, (j, t))``, ``pair`` two words drawn from ``key``: every (draw,
        iteration) its own counter, so no word is ever used twice and a draw's words do not
        depend on which slot runs it or when it starts.
      step: ``(w1, w2, lanes) -> lanes``, one iteration of every lane given two fresh uint32
        words per lane; it must leave done lanes unchanged.
      done: ``lanes -> bool [w]``.
      start: ``index [w] -> lanes``, the initial state of draws ``index`` (1-D arrays ``[w]``;
        ``index`` is clipped to ``n − 1``).
      n: number of draws (static); outputs: the lanes that hold a finished draw's result.
      groups: the draws as consecutive groups of these sizes (static, summing to ``n``),
        group ``g`` drawing from ``key[g]`` (a key array ``[G]``): the ``i``-th draw of group
        ``g`` reads the words of draw ``i`` of ``key[g]``, so every group gets exactly the
        draws it would get run alone, and several releases share one loop (one sampler in
        the compiled program instead of one each).

    Returns:
      The ``outputs`` lanes ``[n]`` of every finished draw.

    The window holds :func:`window_size` slots (every draw its own when ``n`` is small),
    first draws ``0..w−1``. Each iteration steps every slot; a slot whose draw is done writes
    the draw's result and starts the next draw not yet started (in index order) or, when none
    is left, idles. The loop ends when no slot holds an unfinished draw. Each draw runs from
    its initial state to its end on its own words, so the results are exactly those of running
    each draw alone, whatever the window: independent and exactly distributed given ideal
    random bits. (Words tied to the slot instead would let one draw's length shift every later
    draw of its slot, so a last-ulp change of one rate, say between two compilations of the
    same fit, would change many draws.)
    """
    width = window_size(n)
    if groups is None:
        pair = jax.random.bits(key, (2,), U32)

        def keys_of(index):
            return (pair[0], pair[1]), index
    else:
        if sum(groups) != n:
            raise ValueError(f"groups {groups} do not add up to {n} draws")
        pairs = jax.vmap(lambda k: jax.random.bits(k, (2,), U32))(key)
        group = jnp.asarray(np.repeat(np.arange(len(groups)), groups), jnp.int32)
        first_of = np.cumsum((0,) + tuple(groups[:-1]))
        local = jnp.asarray(np.arange(n) - np.repeat(first_of, groups), jnp.int32)

        def keys_of(index):
            draw = jnp.minimum(index, n - 1)            # an idle slot's words are unused
            lane_pairs = pairs[group[draw]]
            return (lane_pairs[:, 0], lane_pairs[:, 1]), local[draw]

    def words(index, age):
        pair_of, own = keys_of(index)
        w = threefry_2x32(pair_of, jnp.concatenate([own.astype(U32), age.astype(U32)]))
        return w[:width], w[width:]

    first = jnp.arange(width, dtype=jnp.int32)
    if width == n:      # every draw has its own lane: run them all to the end
        def step_all(state):
            i, lanes = state
            return i + 1, step(*words(first, jnp.broadcast_to(i, (n,))), lanes)

        lanes = jax.lax.while_loop(lambda state: ~jnp.all(done(state[1])), step_all,
                                   (jnp.int32(0), start(first)))[1]
        return tuple(lanes[j] for j in outputs)

    def body(state):
        slot, age, lanes, result = state
        lanes = step(*words(slot, age), lanes)
        finished = done(lanes) & (slot < n)
        written = jnp.where(finished, slot, n)       # out of range: dropped
        result = tuple(r.at[written].set(lanes[j], mode="drop")
                       for r, j in zip(result, outputs, strict=True))
        following = jnp.max(slot) + jnp.cumsum(finished, dtype=jnp.int32)
        slot = jnp.where(finished, following, slot)
        age = jnp.where(finished, 0, age + 1)
        fresh = start(jnp.minimum(slot, n - 1))
        lanes = tuple(jnp.where(finished, new, old) for new, old in zip(fresh, lanes,
                                                                         strict=True))
        return slot, age, lanes, result

    def running(state):
        return jnp.min(state[0]) < n

    lanes = start(first)
    result = tuple(jnp.zeros(n, lanes[j].dtype) for j in outputs)
    return jax.lax.while_loop(running, body, (first, jnp.zeros(width, jnp.int32), lanes,
                                              result))[3]


def _uniform_below_accept(word: jax.Array, n: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Exact uniform draw on ``{0, ..., n − 1}`` (uint32 ``n >= 1``) by rejection: ``word`` is
    accepted iff it lies below the largest multiple of ``n`` that fits in 32 bits. Returns
    ``(accepted, word mod n)``."""
    remainder = (U32(0) - n) % n                       # 2**32 mod n
    accepted = (remainder == 0) | (word < U32(0) - remainder)
    return accepted, word % n


def _coin_step(
    whole: jax.Array, k: jax.Array, frac: jax.Array, w1: jax.Array, w2: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """One iteration of Algorithm 1 on the current factor of a Bernoulli(exp(−γ)) coin.

    The current factor is ``exp(−1)`` while ``whole > 0``, then ``exp(−frac/2**32)``. Algorithm
    1 draws ``A ~ Bernoulli(γ_c / K)`` as ``Bernoulli(γ_c) ∧ Bernoulli(1/K)`` (two independent
    coins from ``w1`` and ``w2``; ``w1`` is read only on the fractional factor; a rejected
    ``w2`` retries the whole step), increments ``K`` while ``A = 1``, and the factor is 1 iff
    the final ``K`` is odd.

    Returns ``(whole, k, finished, outcome)``: ``finished`` marks lanes whose coin is decided
    this step, with value ``outcome``.
    """
    accepted, residue = _uniform_below_accept(w2, k)
    a = ((whole > 0) | (w1 < frac)) & (residue == 0)
    step = accepted & a                     # K <- K + 1
    stop = accepted & ~a                    # factor decided: 1 iff K odd
    factor_one = stop & (k % 2 == 1)
    last_factor = whole == 0
    # a factor of 1 on an e^-1 factor moves on to the next factor; the coin is 1 once the last
    # factor is 1, at once if the remaining fractional factor is exp(-0) = 1
    next_whole = jnp.where(factor_one & ~last_factor, whole - 1, whole)
    finished = (stop & ~factor_one) | (factor_one & (last_factor | ((next_whole == 0) &
                                                                    (frac == 0))))
    k = jnp.where(step, k + 1, jnp.where(factor_one, U32(1), k))
    return next_whole, k, finished, factor_one


def bernoulli_exp(key: jax.Array, whole: jax.Array, frac: jax.Array) -> jax.Array:
    """Exact Bernoulli(exp(−γ)) coins, ``γ = whole + frac / 2**32`` (elementwise).

    Canonne, Kamath & Steinke (2020), Algorithm 1 and its extension to ``γ > 1``.

    Args:
      key: PRNG key.
      whole: int32 ``>= 0``, the integer part of ``γ``.
      frac: uint32, the fractional part of ``γ`` in units of ``2**−32``.

    Returns:
      bool array of the broadcast shape of ``whole`` and ``frac``.
    """
    whole, frac = jnp.broadcast_arrays(jnp.asarray(whole, jnp.int32), jnp.asarray(frac, U32))
    shape = whole.shape
    whole, frac = whole.reshape(-1), frac.reshape(-1)
    done = (whole == 0) & (frac == 0)      # exp(0) = 1

    def step(w1, w2, lanes):
        whole, k, frac, done, out = lanes
        new_whole, new_k, finished, outcome = _coin_step(whole, k, frac, w1, w2)
        live = ~done
        return (jnp.where(live, new_whole, whole), jnp.where(live, new_k, k), frac,
                done | finished, jnp.where(live & finished, outcome, out))

    def start(index):
        return whole[index], jnp.ones(index.shape, U32), frac[index], done[index], done[index]

    return run_lanes(key, step, lambda lanes: lanes[3], start, whole.shape[0],
                     outputs=(4,))[0].reshape(shape)


def uniform_below(key: jax.Array, n: jax.Array) -> jax.Array:
    """Exact uniform integers on ``{0, ..., n − 1}`` (uint32 ``n >= 1``, elementwise), by
    rejection sampling from 32-bit words."""
    n = jnp.asarray(n, U32)
    shape = n.shape

    def step(w1, w2, lanes):
        del w2
        n, value, done = lanes
        accepted, residue = _uniform_below_accept(w1, n)
        return n, jnp.where(accepted & ~done, residue, value), done | accepted

    n = n.reshape(-1)

    def start(index):
        return n[index], jnp.zeros(index.shape, U32), jnp.zeros(index.shape, bool)

    return run_lanes(key, step, lambda lanes: lanes[2], start, n.shape[0],
                     outputs=(1,))[0].reshape(shape)


def laplace_fraction(scale: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(t, s)`` with ``t = 2**k`` (``11 <= k <= 31``) and ``s = floor(t/scale) >= 1``, so
    that ``t/s >= scale``: the smallest discrete-Laplace scale of this form not below ``scale``
    (relative excess below ``2**−10`` for scales in ``[1, 2**20]``). Returns uint32 ``t`` and
    ``s``; ``s = 0`` marks a scale beyond ``2**31``, out of the sampler's range.

    ``scale`` must already be rounded *up* (it is the noise scale the privacy proof needs)."""
    scale = jnp.asarray(scale, jnp.float32)
    exponent = jnp.clip(jnp.ceil(jnp.log2(scale)).astype(jnp.int32) + 11, 11, 31)
    t = jnp.ldexp(jnp.float32(1.0), exponent)
    ratio = round_down(t / scale, ulps=1)          # below t/scale: s/t <= 1/scale
    s = jnp.floor(jnp.minimum(ratio, jnp.float32(2**24 - 1)))
    return jnp.left_shift(U32(1), exponent.astype(U32)), s.astype(U32)


def discrete_laplace(key: jax.Array, shape: tuple[int, ...], t: jax.Array,
                     s: jax.Array) -> jax.Array:
    """Exact discrete Laplace draws ``P(Z = z) ∝ exp(−|z|·s/t)``, saturated to ``±2**30``.

    Canonne, Kamath & Steinke (2020), Algorithm 2: ``U ~ Uniform{0..t−1}`` (``t = 2**k``: the
    low ``k`` bits of a word) is accepted with probability ``exp(−U/t)``; ``V ~
    Geometric(e^−1)`` counts Bernoulli(e^−1) successes; ``Y = floor((U + t·V)/s)`` is then
    Geometric(exp(−s/t)); a fair sign ``B`` gives ``Z = (1 − 2B)·Y``, rejecting ``B = 1, Y =
    0``. ``Y`` is computed as ``q_t·V + q_u + floor((r_u + r_t·V)/s)`` (``t = q_t·s + r_t``,
    ``U = q_u·s + r_u``) in 32-bit arithmetic, saturated at ``2**30``.

    Lane phases: 0 draws ``U`` (word 1), 1 runs the coin ``exp(−U/t)`` (words 1, 2), 2 runs the
    Bernoulli(e^−1) coins of ``V`` (word 2; word 1 is free there and its low bit is the sign
    ``B`` when ``V`` stops), 3 is done.

    Args:
      key: PRNG key.
      shape: output shape.
      t, s: uint32 scalars from :func:`laplace_fraction` (``t = 2**k``, ``s >= 1``).

    Returns:
      int32 ``shape`` draws in ``[−2**30, 2**30]``.
    """
    return joint_discrete_laplace(key[None], (shape,), jnp.asarray(t, U32)[None],
                                  jnp.asarray(s, U32)[None])[0]


def joint_discrete_laplace(keys: jax.Array, shapes: tuple[tuple[int, ...], ...],
                           t: jax.Array, s: jax.Array) -> list[jax.Array]:
    """Several :func:`discrete_laplace` releases in one sampler loop: release ``g`` of
    ``shapes[g]`` from ``keys[g]`` at the rational scale ``t[g]/s[g]`` (uint32 ``[G]``). Each
    release's draws are exactly those of :func:`discrete_laplace` alone (:func:`run_lanes`
    groups: its own key and draw indices); the compiled program holds one sampler instead of
    ``G``, so one loop compiles once for several releases at the same point of a fit."""
    t, s = jnp.asarray(t, U32), jnp.maximum(jnp.asarray(s, U32), U32(1))
    q_t, r_t = t // s, t % s
    mask = t - U32(1)
    shift = jax.lax.clz(t) + U32(1)          # t = 2**k: U/t = (U << (32 - k)) / 2**32
    log2_t = U32(32) - shift
    saturation_v = jnp.where(q_t > 0, U32(SATURATION) // jnp.maximum(q_t, U32(1)),
                             U32(GEOMETRIC_CAP))
    sizes = tuple(math.prod(shape) for shape in shapes)
    group = np.repeat(np.arange(len(shapes)), sizes)     # each draw's release (static)
    draw_group = jnp.asarray(group, jnp.int32)

    def step(w1, w2, lanes):
        phase, u, whole, k, frac, v, negative, g = lanes
        lane_mask, lane_s, lane_shift, lane_log2_t = mask[g], s[g], shift[g], log2_t[g]
        start = phase == 0
        u = jnp.where(start, w1 & lane_mask, u)
        coining = (phase == 1) | (phase == 2)
        new_whole, new_k, finished, outcome = _coin_step(whole, k, frac, w1, w2)
        whole, k = jnp.where(coining, new_whole, whole), jnp.where(coining, new_k, k)
        accept_u = (phase == 1) & finished & outcome
        reject_u = (phase == 1) & finished & ~outcome
        success_v = (phase == 2) & finished & outcome
        v = jnp.where(accept_u, U32(0), jnp.where(success_v, v + U32(1), v))
        stop_v = ((phase == 2) & finished & ~outcome) | (success_v & (v >= GEOMETRIC_CAP))
        # the sign from word 1 (unused by the e^-1 coins); Y = 0 (U + t V < s, i.e. U < s and
        # V <= (s − U − 1)/t, t = 2**k) with a negative sign is rejected
        negative = jnp.where(stop_v, (w1 & U32(1)).astype(jnp.int32), negative)
        zero = (u < lane_s) & (v <= jnp.right_shift(lane_s - u - U32(1), lane_log2_t))
        restart = reject_u | (stop_v & (negative == 1) & zero)
        # the next coin: exp(-U/t) after drawing U; e^-1 after accepting U or a success of V
        renew = start | accept_u | (success_v & ~stop_v)
        whole = jnp.where(renew, jnp.where(start, 0, 1), whole)
        frac = jnp.where(renew, jnp.where(start, jnp.left_shift(u, lane_shift), U32(0)), frac)
        k = jnp.where(renew, U32(1), k)
        phase = jnp.select([restart, start, accept_u, stop_v],
                           [jnp.zeros_like(phase), jnp.ones_like(phase),
                            jnp.full_like(phase, 2), jnp.full_like(phase, 3)], phase)
        return phase, u, whole, k, frac, v, negative, g

    def begin(index):
        zeros = jnp.zeros(index.shape, U32)
        int_zeros = jnp.zeros(index.shape, jnp.int32)
        return int_zeros, zeros, int_zeros, zeros, zeros, zeros, int_zeros, draw_group[index]

    joint = len(sizes) > 1
    u, v, negative = run_lanes(keys if joint else keys[0], step, lambda lanes: lanes[0] == 3,
                               begin, sum(sizes), outputs=(1, 5, 6),
                               groups=sizes if joint else None)
    # Y = floor((U + t V)/s), saturated, each draw with its release's scale
    # each draw's own release constants (new names: the loop's step reads the per-release s)
    draw_q_t, draw_r_t, draw_s, draw_cap = (a[group] for a in (q_t, r_t, s, saturation_v))
    y = draw_q_t * v + u // draw_s + (u % draw_s + draw_r_t * v) // draw_s
    y = jnp.where(v > draw_cap, U32(SATURATION), jnp.minimum(y, U32(SATURATION)))
    z = jnp.where(negative == 1, -y.astype(jnp.int32), y.astype(jnp.int32))
    ends = np.cumsum(sizes)
    return [z[end - size:end].reshape(shape)
            for end, size, shape in zip(ends, sizes, shapes, strict=True)]


def square_64(d: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The exact 64-bit square of uint32 ``d`` as uint32 words ``(high, low)``, ``d² = high ·
    2**32 + low``, in 32-bit arithmetic (no x64).

    With ``d = a·2**16 + b`` (``a, b < 2**16``): ``d² = a²·2**32 + ab·2**17 + b²``, where
    ``a²``, ``ab`` and ``b²`` each fit 32 bits; ``ab·2**17`` contributes ``ab >> 15`` to the
    high word and ``ab << 17`` (mod ``2**32``) to the low word, whose sum with ``b²`` carries
    one into the high word when it wraps around.
    """
    d = jnp.asarray(d, U32)
    a, b = d >> U32(16), d & U32(0xFFFF)
    ab, b2 = a * b, b * b
    low = (ab << U32(17)) + b2
    carry = (low < b2).astype(U32)
    return a * a + (ab >> U32(15)) + carry, low


def gaussian_rate(y: jax.Array, j: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``γ = (|y| − 2**j)² / 2**(2j+1)`` as ``(whole, frac)`` for :func:`bernoulli_exp`
    (elementwise; int32 ``|y| <= 2**30``, ``11 <= j <= 15``).

    ``γ`` is dyadic with denominator ``2**(2j+1) <= 2**31``, so ``whole = D² >> (2j+1)`` and
    ``frac = (D² mod 2**(2j+1)) << (31 − 2j)`` (``D = ||y| − 2**j|``, ``D²`` exact in 64 bits
    by :func:`square_64`) are exact. ``whole`` is saturated at ``2**30`` (``frac`` kept): that
    only changes acceptance probabilities below ``exp(−2**30)``, none of which is representable
    (nor ever drawn).
    """
    j = jnp.asarray(j, U32)
    distance = jnp.abs(jnp.abs(jnp.asarray(y, jnp.int32)) - (1 << j.astype(jnp.int32)))
    high, low = square_64(distance.astype(U32))
    bits = U32(2) * j + U32(1)                              # 23..31
    # whole >= 2**30 iff d² >= 2**(30 + bits) iff high >= 2**(bits - 2) (as 30 + bits >= 32)
    saturated = high >= (U32(1) << (bits - U32(2)))
    whole = (high << (U32(32) - bits)) | (low >> bits)
    whole = jnp.where(saturated, U32(SATURATION), whole).astype(jnp.int32)
    return whole, low << (U32(32) - bits)


def discrete_gaussian(key: jax.Array, shape: tuple[int, ...], j: jax.Array | int) -> jax.Array:
    """Exact draws from the discrete Gaussian ``N_Z(0, σ²)``, ``P(Z = z) ∝ exp(−z²/(2σ²))``,
    with ``σ = 2**j`` (``11 <= j <= 15``, static or traced int).

    Canonne, Kamath & Steinke (2020), Algorithm 3 with ``t = σ`` (their proof holds for any
    ``t > 0``): ``Y`` is discrete Laplace of scale ``t`` (:func:`discrete_laplace` with
    ``t = 2**j``, ``s = 1``) and is accepted with probability ``exp(−γ)``, ``γ = (|Y| −
    σ²/t)²/(2σ²) = (|Y| − 2**j)²/2**(2j+1)``, since ``P(Y = y, accept) ∝ exp(−|y|/σ − (|y| −
    σ)²/(2σ²)) = exp(−y²/(2σ²) − 1/2)``. ``γ`` is dyadic, so the coin (:func:`bernoulli_exp`,
    rate from :func:`gaussian_rate`) is exact; the draws are exactly discrete Gaussian given
    ideal random bits, up to two saturations that change only events of probability below
    ``exp(−2**29)`` (zero in any floating-point format): ``Y`` is saturated at ``±2**30`` by
    :func:`discrete_laplace` (itself an event of probability about ``exp(−2**(30−j))``), and a
    saturated ``Y`` is accepted with probability ``exp(−γ)``, ``γ = (2**30 − 2**j)²/2**(2j+1)
    ≈ 2**(59−2j) >= 2**29``; and the rate's integer part is saturated at ``2**30``. So
    ``|Z| <= 2**30``.

    Rejected lanes draw again: round ``r`` draws a full array of candidates and coins from
    ``fold_in(key, r)`` and fills the lanes not yet accepted; the loop ends when every lane has
    accepted. A try is accepted with probability ``sqrt(π/(2e)) ≈ 0.76`` (for large ``σ``), so
    about ten rounds cover a million lanes.

    Args:
      key: PRNG key.
      shape: output shape.
      j: ``log2 σ``, an int in ``[11, 15]`` (``2j + 1 <= 31`` keeps ``γ``'s denominator within
        the coin's 32 fractional bits).

    Returns:
      int32 ``shape`` draws.
    """
    j = jnp.asarray(j, jnp.int32)
    t = U32(1) << j.astype(U32)
    size = 1
    for dim in shape:
        size *= dim

    def body(state):
        round_, z, accepted = state
        candidates_key, coins_key = jax.random.split(jax.random.fold_in(key, round_))
        y = discrete_laplace(candidates_key, (size,), t, U32(1))
        coin = bernoulli_exp(coins_key, *gaussian_rate(y, j))
        return round_ + 1, jnp.where(accepted, z, y), accepted | coin

    def running(state):
        return ~jnp.all(state[2])

    state = (jnp.int32(0), jnp.zeros(size, jnp.int32), jnp.zeros(size, bool))
    return jax.lax.while_loop(running, body, state)[1].reshape(shape)
