"""The proper-loss family of the Mα boosted DP trees (``docs/specs/boosted-dp-trees-malpha.md``).

Bayes risks are functions of the positive-class probability ``p in [0, 1]``, normalised so that
``L(0) = L(1) = 0`` and ``L(1/2) = 1`` (§1.1). The Mα loss interpolates between Matsushita
(``alpha = 1``) and the 0/1 loss (``alpha = 0``) (§1.2, §1.6); its canonical link ``ψ^(α)``,
inverse link and convex surrogate ``F^(α)`` follow §1.3–§1.5, and the split criterion and its
sensitivity follow §2.2 and §1.7. Equation numbers ``(n)`` are the paper's (Nock & Henecka,
arXiv 2001.09384).

Everything is ``jnp``, broadcasts ``p`` / ``z`` against ``alpha`` and takes ``alpha`` as a traced
array (no Python branching on its value), so sweeps over ``alpha`` are one ``vmap``.
Endpoints: values are exact at ``p in {0, 1}``, ``alpha in {0, 1}`` and on the flat zone's
boundary. Gradients are NaN-free everywhere and exact wherever the derivative is finite; where
it is infinite (the Matsushita and log slopes at ``p in {0, 1}``) that term contributes slope 0,
which keeps the finite slope of the 0/1 part exact at ``alpha = 0``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


def _safe_div(x: ArrayLike, y: ArrayLike) -> jax.Array:
    """``x / y`` with ``x / 0 := 0``, NaN-free in value and gradient (the "double where")."""
    nonzero = jnp.asarray(y) != 0
    return jnp.where(nonzero, x / jnp.where(nonzero, y, 1.0), 0.0)


def _safe_sqrt(x: ArrayLike) -> jax.Array:
    """``sqrt(x)`` for ``x >= 0`` with gradient 0 instead of ``inf`` at ``x = 0``."""
    positive = jnp.asarray(x) > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1.0)), 0.0)


def _xlogx(p: ArrayLike) -> jax.Array:
    """``p·log(p)`` with ``0·log(0) := 0``, NaN-free in value and gradient."""
    return p * jnp.log(jnp.where(jnp.asarray(p) > 0, p, 1.0))


# --- §1.1 normalised reference Bayes risks ---------------------------------------------------


def matsushita_risk(p: ArrayLike) -> jax.Array:
    """``L^Mat(p) = 2·sqrt(p(1 − p))`` (spec §1.1; the α = 1 member of (87))."""
    return 2 * _safe_sqrt(p * (1 - jnp.asarray(p)))


def zero_one_risk(p: ArrayLike) -> jax.Array:
    """``L^{0/1}(p) = 2·min{p, 1 − p}``, the normalised empirical risk (spec §1.1; α = 0 of
    (87))."""
    return 2 * jnp.minimum(p, 1 - jnp.asarray(p))


def gini_risk(p: ArrayLike) -> jax.Array:
    """``L^sq(p) = 4p(1 − p)``, the square loss's (Gini) Bayes risk (spec §1.1)."""
    return 4 * p * (1 - jnp.asarray(p))


def log_risk(p: ArrayLike) -> jax.Array:
    """``L^log(p) = −p·log2(p) − (1 − p)·log2(1 − p)``, the log loss's Bayes risk (information
    gain; spec §1.1)."""
    return -(_xlogx(p) + _xlogx(1 - jnp.asarray(p))) / math.log(2)


# --- §1.2–§1.5 the Mα loss ---------------------------------------------------------------------


def bayes_risk(p: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """``L^(α)(p) = α·L^Mat(p) + (1 − α)·L^{0/1}(p)``, the Mα loss's Bayes risk (spec §1.2,
    paper (87)): concave, symmetric, 0 at ``p in {0, 1}``, 1 at ``p = 1/2``."""
    return alpha * matsushita_risk(p) + (1 - jnp.asarray(alpha)) * zero_one_risk(p)


def canonical_link(p: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """``ψ^(α)(p) = α·(2p − 1)/sqrt(p(1 − p)) + 2(1 − α)·sign(2p − 1) = −L^(α)'(p)`` (spec §1.3,
    paper Fig. 1 / (91)): the leaf value of a leaf with positive fraction ``p``.

    ``ψ(1/2) := 0`` selects from the set value at the kink (§7 A2). At ``p in {0, 1}`` it is
    ``∓inf`` for ``alpha > 0`` and ``∓2`` for ``alpha = 0`` (§1.6); leaves clamp ``p`` first
    (§2.5).
    """
    p, alpha = jnp.asarray(p), jnp.asarray(alpha)
    matsushita = _safe_div(2 * p - 1, _safe_sqrt(p * (1 - p)))
    link = alpha * matsushita + 2 * (1 - alpha) * jnp.sign(2 * p - 1)
    unbounded = (alpha > 0) & ((p == 0) | (p == 1))
    return jnp.where(unbounded, jnp.where(p < 0.5, -jnp.inf, jnp.inf), link)


def _flat_zone_excess(z: ArrayLike, alpha: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """``(t, sqrt(α² + t²))`` with ``t = z/2 − sign(z)·(1 − α)`` where ``|z| >= 2(1 − α)``,
    else 0: how far ``z/2`` lies past the flat zone ``2(1 − α)·[−1, 1]`` of §1.4–§1.5."""
    z, alpha = jnp.asarray(z), jnp.asarray(alpha)
    t = jnp.where(jnp.abs(z) >= 2 * (1 - alpha), z / 2 - jnp.sign(z) * (1 - alpha), 0.0)
    return t, _safe_sqrt(jnp.square(alpha) + jnp.square(t))


def inverse_link(z: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """``ψ^(α)^{-1}(z) = (1/2)·(1 + t/ρ)``, ``ρ = sqrt(α² + t²)``, ``t`` = excess of ``z/2``
    over the flat zone (spec §1.4, paper Fig. 1 / (117)).

    Non-decreasing onto ``[0, 1]``, ``1/2`` on the flat zone ``|z| <= 2(1 − α)``, and
    ``ψ^{-1}(−y·H(x))`` is the boosting weight of an example (§3). At ``alpha = 0`` it is the
    step ``0, 1/2, 1`` of §1.6. For ``t < 0`` it is evaluated as ``α²/(2ρ(ρ − t))``, which keeps
    the small weights of well-classified examples accurate.
    """
    t, root = _flat_zone_excess(z, alpha)
    small = _safe_div(jnp.square(alpha), 2 * root * (root - t))
    return jnp.where(t < 0, small, 0.5 * (1 + _safe_div(t, root)))


def surrogate_loss(z: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """``F^(α)(z) = 1 − z/2 + sqrt(α² + t²) − α``, ``t`` = excess of ``z/2`` over the flat zone
    (spec §1.5, paper Fig. 1 / (114)–(116)): the convex surrogate of the margin ``z = y·H(x)``
    that the linear combination boosts, the convex conjugate ``sup_u {−z·u + L^(α)(u)}``, with
    ``F^(α)'(z) = −ψ^(α)^{-1}(−z)``.

    Evaluated without cancellation: ``α²/(ρ + u)`` with ``ρ = sqrt(α² + t²)``,
    ``u = z/2 − (1 − α)`` past the right end of the flat zone (``u = t > 0``), and
    ``1 − z/2 + t²/(ρ + α)`` elsewhere (which also has the right slope in ``alpha`` at 0).
    """
    z, alpha = jnp.asarray(z), jnp.asarray(alpha)
    t, root = _flat_zone_excess(z, alpha)
    u = z / 2 - (1 - alpha)
    right_tail = _safe_div(jnp.square(alpha), root + u)
    return jnp.where(u > 0, right_tail, 1 - z / 2 + _safe_div(jnp.square(t), root + alpha))


# --- §1.7 and §2.2: the split criterion and its sensitivity --------------------------------------


def split_sensitivity(m: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """``Δ^(α)(m) = 3 + 2α(sqrt(m) − 1)`` (spec §1.7, paper Cor. 7): bound on the change of
    :func:`split_risk` between add/remove-one neighbours, ``m`` the size of the whole training
    sample and example weights in ``(0, 1]`` (double it for replace-one, §4.1)."""
    return 3 + 2 * alpha * (jnp.sqrt(m) - 1)


def node_risk(stats: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """``f_L(h, λ, S) = w(λ)·L^(α)(q(λ)) = 2α·sqrt(w⁻·w⁺) + 2(1 − α)·min(w⁻, w⁺)`` (spec §1.2,
    §1.7, paper (6)) of a node's weighted class sums ``[..., 2]``: the perspective of the Mα
    Bayes risk, evaluated from the sums directly (no ``q = w⁺/w`` and ``1 − q``, which cancel
    catastrophically for near-pure nodes in float32); an empty node gives 0 (``Ľ(0, 0) = 0``,
    §2.2)."""
    stats = jnp.asarray(stats)
    if stats.shape[-1:] != (2,):
        raise ValueError(f"class statistics must have a last axis of 2, got shape {stats.shape}")
    negative, positive = stats[..., 0], stats[..., 1]
    alpha = jnp.asarray(alpha)
    return (2 * alpha * _safe_sqrt(negative) * _safe_sqrt(positive)
            + 2 * (1 - alpha) * jnp.minimum(negative, positive))


def split_risk(left: ArrayLike, right: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """``crit_α(g, λ) = w(λ_0)·L^(α)(q(λ_0)) + w(λ_1)·L^(α)(q(λ_1))`` (spec §2.2, paper (3),
    (6), (118)) of every candidate split, from the children's unnormalised weighted class sums
    ``[..., 2]`` (as :func:`dpjax.trees.histogram.split_stats` gives them). Lower is better; its
    add/remove-one sensitivity is :func:`split_sensitivity` (§1.7, §4.3)."""
    return node_risk(left, alpha) + node_risk(right, alpha)


CRITERION_ROUNDING = 2.0**-18
"""Float32 rounding of :func:`clamped_split_risk` on the clamped sums, relative to the public
size: ``|fl(crit) − crit| <= 28·2**−24·ñ`` per evaluation (int32 -> float32 conversions,
square roots, products and sums: at most ``6u`` per child of magnitude ``<= 2ñ``, ``u`` per
sum of the two children; ``u = 2**−24``), so neighbouring evaluations differ from the exact
ones by at most ``56·2**−24·ñ <= 2**−18·ñ``. Under DP it is added to the sensitivity
(:func:`criterion_sensitivity`)."""


def criterion_sensitivity(size: ArrayLike, alpha: ArrayLike) -> jax.Array:
    """The sensitivity a private selection on :func:`clamped_split_risk` uses: ``Δ^(α)(ñ)``
    (spec §1.7) plus :data:`CRITERION_ROUNDING` ``·ñ`` for its float32 evaluation."""
    return split_sensitivity(size, alpha) + CRITERION_ROUNDING * jnp.asarray(size)


def clamped_split_risk(left: ArrayLike, right: ArrayLike, alpha: ArrayLike,
                       bound: ArrayLike) -> jax.Array:
    """:func:`split_risk` of the children's class sums clamped coordinate-wise to ``bound``
    (a public sample size ``ñ``): its add/remove-one sensitivity is ``Δ^(α)(ñ)`` whatever the
    private sample size ``m`` (under DP the row count is private, so ``m`` itself may not set
    the sensitivity).

    Why: ``f(x, y) = (x + y)·L(x/(x + y))`` is concave and non-decreasing in each class sum and
    ``f(0, y) = 0``. An example of weight ``w <= 1`` moves one clamped sum by ``w' <= w``, so the
    criterion moves by at most ``f(w', y') − f(0, y') <= f(1, ñ) = Ľ(1, ñ + 1) <= Δ^(α)(ñ)``
    with the other clamped sum ``y' <= ñ`` (spec §1.7, Thm 3 with ``m = ñ``). When ``ñ >= m``
    nothing is clamped and this is :func:`split_risk`."""
    bound = jnp.asarray(bound)
    return split_risk(jnp.minimum(left, bound), jnp.minimum(right, bound), alpha)
