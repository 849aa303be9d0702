"""Composition routes: how releases add up to a total (**compose**) and how a total is shared
out among releases (**split**), one object per route, as OpenDP keeps one composition per
measure.

* :data:`BASIC`: sequential composition (Dwork & Roth 2014, Thm 3.16): ``Σ ε_i``, ``Σ δ_i``.
* :data:`ADVANCED`: the advanced composition theorem (Dwork, Rothblum & Vadhan 2010;
  heterogeneous form, Kairouz, Oh & Viswanath 2015 eq. 9) with the slack ``δ'`` the total
  ``δ`` leaves over the releases' own.
* :data:`ZCDP`: zero-concentrated DP (Bun & Steinke 2016): a pure ``ε``-DP release is
  ``ε²/2``-zCDP (Prop. 1.4), a Gaussian release carries its ``ρ``, the ``ρ``'s add (Lemma 2.3)
  and the sum converts to ``(ε, δ)`` (Prop. 1.3).
* :data:`OPTIMAL`: the optimal composition of the pure releases (Kairouz, Oh & Viswanath
  2015, Thm 3.3; :mod:`dpjax.privacy.optimal`), the Gaussian ones in zCDP beside them, and
  never above the zCDP route: the tightest bound that holds for every pure-DP release.

A further route (Rényi DP, privacy-loss distributions) is another :class:`Route`: its
:meth:`~Route.compose` for the ledgers and the accountant, its :meth:`~Route.per_round` for the
learners.

**Compose** runs in float64 on concrete ledger entries (:class:`~dpjax.privacy.PrivacyLedger`,
:class:`~dpjax.privacy.BudgetAccountant`). **Split** runs in float32 ``jnp`` on traced budgets
(so a sweep over ``ε`` is one ``vmap``), and every budget it returns is rounded down
(:func:`~dpjax.privacy.rounding.round_down`, and a relative margin of ``1e-5`` where a
conversion is inverted), so the ledger's float64 recomputation from the released costs stays
within the request. Learners state their shares and counts; the arithmetic is here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.privacy.optimal import composed_epsilon, round_epsilon
from dpjax.privacy.rounding import float32_above, float32_below, round_down, round_up

MARGIN = 1.0 - 1e-5
"""Relative margin of an inverted conversion (``ρ`` from ``(ε, δ)``, the advanced round)."""
Shares = Sequence[tuple[ArrayLike, int]]
"""A round's releases: ``(s_k, m_k)`` pairs, ``m_k`` releases of a share ``s_k`` of the
round's budget each (``Σ m_k s_k <= 1``)."""
WHOLE: Shares = ((1.0, 1),)
"""A round that is one release of its whole budget."""


# --- float64 arithmetic of the theorems --------------------------------------------------------


def advanced_composition(epsilons: list[float], delta_slack: float) -> float:
    """Advanced composition of pure ``eps_i``-DP mechanisms (Dwork, Rothblum & Vadhan 2010;
    heterogeneous form, Kairouz et al. 2015 eq. 9):
    ``sqrt(2 ln(1/delta') sum eps_i^2) + sum eps_i (e^eps_i - 1)``, valid with extra ``delta'``.
    """
    if not 0.0 < delta_slack < 1.0:
        raise ValueError(f"delta_slack must be in (0, 1), got {delta_slack}")
    squares = math.fsum(e * e for e in epsilons)
    drift = math.fsum(e * math.expm1(e) for e in epsilons)
    return math.sqrt(2.0 * math.log(1.0 / delta_slack) * squares) + drift


def zcdp_to_dp(rho: float, delta: float) -> float:
    """``rho``-zCDP implies ``(rho + 2 sqrt(rho ln(1/delta)), delta)``-DP (Bun & Steinke 2016,
    Prop. 1.3)."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_rho(entries: Sequence[Any]) -> float:
    """``Σ ρ`` of ledger entries, in order: an entry's own ``ρ`` per release, or ``ε²/2`` for a
    pure one (Bun & Steinke 2016, Prop. 1.4)."""
    rho = 0.0
    for e in entries:
        rho += e.rho * e.count if e.rho is not None else 0.5 * e.epsilon**2 * e.count
    return rho


# --- float32 arithmetic of the splits (traced) ------------------------------------------------


def zcdp_budget(epsilon: ArrayLike, delta: float) -> jax.Array:
    """The largest ``ρ`` with ``ρ + 2·sqrt(ρ·ln(1/δ)) <= ε`` (Bun & Steinke 2016, Prop. 1.3),
    ``(sqrt(ln(1/δ) + ε) − sqrt(ln(1/δ)))²``, rounded down; 0 when ``δ = 0``."""
    if delta <= 0.0:
        return jnp.zeros_like(jnp.asarray(epsilon, jnp.float32))
    log_term = math.log(1.0 / delta)
    epsilon = jnp.asarray(epsilon, jnp.float32)
    rho = epsilon**2 / (jnp.sqrt(log_term + epsilon) + math.sqrt(log_term))**2
    return round_down(rho * MARGIN)


def gaussian_selection_rho(epsilon: ArrayLike, delta: float) -> jax.Array:
    """``ρ = (sqrt(ln(1/δ) + ε) − sqrt(ln(1/δ)))²·(1 − 10⁻⁴)``: the zCDP budget that converts to
    ``(ε, δ)`` (Bun & Steinke 2016, Prop. 1.3), in the difference form with a ``10⁻⁴`` margin,
    as the rule lists' Gaussian selection states it (:func:`zcdp_budget` is the same bound in
    the ratio form, which keeps its precision at small ``ε``)."""
    log_inv = math.log(1.0 / delta)
    return (jnp.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2 * (1.0 - 1e-4)


def zcdp_epsilon(rho: ArrayLike, delta: float) -> jax.Array:
    """``ε = ρ + 2·sqrt(ρ·ln(1/δ))`` in float32, every step rounded up: the ``(ε, δ)`` a
    ``ρ``-zCDP release states for itself (Bun & Steinke 2016, Prop. 1.3)."""
    log_inverse = jnp.float32(float32_above(math.log(1.0 / float(delta))))
    rho = jnp.asarray(rho, jnp.float32)
    return round_up(rho + 2.0 * round_up(jnp.sqrt(round_up(rho * log_inverse))))


def share(total: ArrayLike, fraction: ArrayLike = 1.0, count: ArrayLike = 1) -> jax.Array:
    """``total·fraction/count`` rounded down: each of ``count`` sequential releases of a share
    ``fraction`` of ``total`` (basic composition; a share of a share is a nested call)."""
    return round_down(jnp.asarray(total, jnp.float32) * fraction / count)


def parts(total: ArrayLike, count: ArrayLike) -> jax.Array:
    """``total/count``, not rounded: ``count`` equal parts of a budget that is split again
    (the rounding is left to the final :func:`share`)."""
    return jnp.asarray(total, jnp.float32) / count


def float32_share(delta: float, count: int) -> float:
    """``δ/count`` as the largest float32 below it: a static ``δ`` split over ``count``
    releases that never sums above ``δ`` once read back from float32 costs."""
    return float32_below(delta / count)


def delta_split(delta: float, count: int, *, failure: float | None = None,
                failure_share: float = 0.0, keep_rest: bool = True) -> tuple[float, float]:
    """``δ/count``, each of ``count`` releases' share of ``δ``, split into the release's own
    ``δ`` and a failure probability (``failure``, or ``failure_share`` of the release's share),
    each stated as the largest float32 below it; the own part is 0 unless ``keep_rest``.
    ``ValueError`` when the failure probability leaves no room in the share."""
    each = delta / count
    fail = each * failure_share if failure is None else failure
    rest = each - fail if keep_rest else 0.0
    if fail <= 0 or fail > each or (keep_rest and rest <= 0):
        raise ValueError(f"a failure probability of {fail:.3g} leaves no room in delta/{count} "
                         f"= {each:.3g}")
    return float32_below(rest), float32_below(fail)


def delta_sum(*deltas: float) -> float:
    """The ``δ`` of releases composed sequentially (``Σ δ_i``), as the largest float32 below
    it."""
    return float32_below(math.fsum(deltas))


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


def round_rho(epsilon: ArrayLike, fixed: ArrayLike, rounds: ArrayLike,
              delta: float) -> jax.Array:
    """Per-round zCDP ``ρ_0 = (ρ − ε_f²/2)/r`` of ``r`` rounds beside one ``ε_f``-DP release
    within ``(ε, δ)`` (``ρ`` = :func:`zcdp_budget`; 0 when nothing is left)."""
    rho = zcdp_budget(epsilon, delta) - 0.5 * jnp.asarray(fixed, jnp.float32) ** 2
    return round_down(jnp.maximum(rho, 0.0) / jnp.asarray(rounds, jnp.float32))


def rho_epsilon(rho: ArrayLike) -> jax.Array:
    """``ε_0 = sqrt(2ρ_0)``: the pure budget whose zCDP cost ``ε_0²/2`` is ``ρ_0`` (the inverse
    of Bun & Steinke 2016, Prop. 1.4)."""
    return jnp.sqrt(2.0 * jnp.asarray(rho))


def epsilon_rho(epsilon: ArrayLike) -> jax.Array:
    """``ρ_0 = ε_0²/2``: the zCDP cost of a pure ``ε_0``-DP release (Prop. 1.4)."""
    return 0.5 * jnp.asarray(epsilon) ** 2


def affordable_rounds(epsilon: ArrayLike, fixed: ArrayLike, signal: ArrayLike, delta: float,
                      gaussian: bool = False) -> jax.Array:
    """How many equal rounds the budget left after one ``ε_f = fixed`` release affords before
    each round's noise scale exceeds ``signal`` (the statistic's expected size in units of the
    sensitivity): pure rounds (:meth:`Zcdp.per_round <Route.per_round>`) have Laplace scale
    ``1/ε_r``, so ``R <=
    ⌊(ε − ε_f)·signal⌋`` or, with ``δ > 0``, ``R <= ⌊2ρ'·signal²⌋`` (``ρ' = ρ − ε_f²/2``);
    Gaussian rounds of ``ρ'/R`` each have standard deviation ``sqrt(R/(2ρ'))``, so ``R <=
    ⌊2ρ'·signal²⌋``. Not clipped (the caller bounds ``R``)."""
    epsilon = jnp.asarray(epsilon, jnp.float32)
    fixed = jnp.asarray(fixed, jnp.float32)
    signal = jnp.asarray(signal, jnp.float32)
    zcdp = jnp.floor(2.0 * round_rho(epsilon, fixed, 1.0, delta) * signal**2)
    if gaussian:
        return zcdp
    sequential = jnp.floor(jnp.maximum(epsilon - fixed, 0.0) * signal)
    return jnp.maximum(sequential, zcdp) if delta > 0.0 else sequential


def round_budget(epsilon: ArrayLike, fixed: ArrayLike, rounds: ArrayLike, delta: float,
                 composition: str, gaussian: bool = False,
                 shares: Shares = WHOLE, most: int | None = None) -> jax.Array:
    """Per-round ``ε_0`` of ``rounds`` rounds beside one ``ε_f = fixed`` release (a released
    sample size, say) within ``(ε, δ)``: the ``composition`` route's
    :meth:`Route.per_round` for pure-DP rounds (a round of ``m_k`` releases of shares ``s_k``
    of ``ε_0`` per ``(s_k, m_k)`` in ``shares``; ``most`` bounds a traced ``rounds``), or for
    Gaussian rounds the ``ε_0 = sqrt(2ρ_0)`` of their zCDP budget :func:`round_rho`
    (``ρ_0 = ε_0²/2``)."""
    if gaussian:
        return rho_epsilon(round_rho(epsilon, fixed, rounds, delta))
    return route(composition).per_round(epsilon, fixed, rounds, delta, shares, most)


def square_share(shares: Shares) -> ArrayLike:
    """``Σ m_k s_k²``: a round's ``Σ ε_k²`` in units of ``ε_0²`` (its zCDP cost and advanced
    composition's square term)."""
    return sum(m * jnp.asarray(s, jnp.float32) ** 2 for s, m in shares)


# --- the routes -------------------------------------------------------------------------------


class Route:
    """A composition route: :meth:`compose` (ledger entries -> total ``(ε, δ)``) and
    :meth:`per_round` (total -> the budget of each of ``r`` equal rounds)."""

    name: ClassVar[str]

    def compose(self, entries: Sequence[Any], delta: float) -> tuple[float, float] | None:
        """``(ε, δ)`` of the private ledger entries (each ``count`` releases of ``(epsilon,
        delta[, rho])``) within the total ``delta``, or ``None`` where the route does not
        apply (no ``δ`` left, no entries). Callers keep the smaller of this and
        :data:`BASIC`'s ``ε`` (both hold)."""
        raise NotImplementedError

    def per_round(self, epsilon: ArrayLike, fixed: ArrayLike, rounds: ArrayLike,
                  delta: float, shares: Shares = WHOLE, most: int | None = None) -> jax.Array:
        """Per-round ``ε_0`` (rounded down) of ``r = rounds`` pure-DP rounds beside one
        ``ε_f = fixed`` release within the total ``(ε, δ)`` (smooth boosting spec §3.4;
        stumps spec §6.2). A round is ``m_k`` releases of shares ``s_k`` of ``ε_0`` per
        ``(s_k, m_k)`` in ``shares``; ``most`` is a static bound on a traced ``rounds`` (the
        optimal route lays its support out for it). The larger of :data:`BASIC`'s and the
        route's own (both hold); with ``δ = 0`` every route is basic."""
        epsilon = jnp.asarray(epsilon, jnp.float32)
        fixed = jnp.asarray(fixed, jnp.float32)
        rounds = jnp.asarray(rounds, jnp.float32)
        basic = jnp.maximum(epsilon - fixed, 0.0) / rounds
        if delta <= 0.0 or self.name == "basic":
            return round_down(basic)
        return self._per_round(basic, epsilon, fixed, rounds, delta, shares, most)

    def _per_round(self, basic: jax.Array, epsilon: jax.Array, fixed: jax.Array,
                   rounds: jax.Array, delta: float, shares: Shares,
                   most: int | None) -> jax.Array:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<composition route {self.name!r}>"


class Basic(Route):
    """Sequential composition: ``(Σ ε_i, Σ δ_i)`` (Dwork & Roth 2014, Thm 3.16)."""

    name = "basic"

    def compose(self, entries: Sequence[Any], delta: float) -> tuple[float, float]:
        return (math.fsum(e.total_epsilon for e in entries),
                math.fsum(e.total_delta for e in entries))


class Advanced(Route):
    """Advanced composition of the releases' pure parts with the slack ``δ' = δ − Σ δ_i``:
    ``(advanced_composition(ε_i, δ'), Σ δ_i + δ')``."""

    name = "advanced"

    def compose(self, entries: Sequence[Any], delta: float) -> tuple[float, float] | None:
        slack = delta - math.fsum(e.total_delta for e in entries)
        return self.with_slack(entries, slack) if slack > 0 else None

    def with_slack(self, entries: Sequence[Any], slack: float) -> tuple[float, float]:
        """``(ε, Σ δ_i + δ')`` of the entries' releases with the slack ``δ' = slack``."""
        epsilon = advanced_composition([e.epsilon for e in entries for _ in range(e.count)],
                                       slack)
        return epsilon, math.fsum(e.total_delta for e in entries) + slack

    def _per_round(self, basic: jax.Array, epsilon: jax.Array, fixed: jax.Array,
                   rounds: jax.Array, delta: float, shares: Shares,
                   most: int | None) -> jax.Array:
        return jnp.maximum(round_down(basic), advanced_round_epsilon(
            epsilon, fixed, rounds, delta, square_share(shares)))


class Zcdp(Route):
    """zCDP: every release with a ``ρ`` (pure ones: ``ε²/2``) composed in zCDP and converted
    at the ``δ`` the others leave; releases with a ``δ`` but no ``ρ`` add on top by basic
    composition."""

    name = "zcdp"

    def compose(self, entries: Sequence[Any], delta: float) -> tuple[float, float] | None:
        exact = [e for e in entries if e.delta == 0 or e.rho is not None]
        rest = [e for e in entries if not (e.delta == 0 or e.rho is not None)]
        left = delta - math.fsum(e.total_delta for e in rest)
        if not exact or left <= 0:
            return None
        epsilon = zcdp_to_dp(zcdp_rho(exact), left)
        return epsilon + math.fsum(e.total_epsilon for e in rest), delta

    def _per_round(self, basic: jax.Array, epsilon: jax.Array, fixed: jax.Array,
                   rounds: jax.Array, delta: float, shares: Shares,
                   most: int | None) -> jax.Array:
        rho = round_rho(epsilon, fixed, rounds, delta) / square_share(shares)
        return round_down(jnp.maximum(basic, jnp.sqrt(2.0 * rho)))


class Optimal(Zcdp):
    """The optimal composition of one fit's block of repeated pure releases (Kairouz, Oh &
    Viswanath 2015, Thm 3.3, by randomized-response dominance: :mod:`dpjax.privacy.optimal`),
    its single releases (a prior, a size: what sets the block's budgets) before it by basic
    composition, and Gaussian releases (with a ``ρ``) in zCDP beside them; the smaller of that
    and the zCDP route's total (both hold). Splits take the larger of the zCDP split and the
    optimal split of what the fixed release leaves (the module's "Adaptivity")."""

    name = "optimal"
    PURE_SHARES = (0.5, 0.75, 0.9, 0.99)
    """The shares of ``δ`` the pure releases may take beside Gaussian ones (each a valid split;
    the smallest total is kept)."""

    def compose(self, entries: Sequence[Any], delta: float) -> tuple[float, float] | None:
        zcdp = super().compose(entries, delta)
        pure = [e for e in entries if e.delta == 0]
        gaussian = [e for e in entries if e.delta > 0 and e.rho is not None]
        rest = [e for e in entries if e.delta > 0 and e.rho is None]
        left = delta - math.fsum(e.total_delta for e in rest)
        if not pure or left <= 0:
            return zcdp
        # single releases came first and set the block's budgets: sequential, beside the block
        on_top = math.fsum(e.total_epsilon for e in rest) + math.fsum(
            e.total_epsilon for e in pure if e.count == 1)
        block = [e for e in pure if e.count > 1]
        candidates = [] if zcdp is None else [zcdp[0]]
        for pure_share in (self.PURE_SHARES if gaussian else (1.0,)):
            exact = composed_epsilon([e.epsilon for e in block], [e.count for e in block],
                                     pure_share * left)
            candidates.append(exact + on_top + (zcdp_to_dp(
                zcdp_rho(gaussian), (1.0 - pure_share) * left) if gaussian else 0.0))
        return min(candidates), delta

    def _per_round(self, basic: jax.Array, epsilon: jax.Array, fixed: jax.Array,
                   rounds: jax.Array, delta: float, shares: Shares,
                   most: int | None) -> jax.Array:
        if most is None:
            try:
                most = int(np.max(np.asarray(rounds)))
            except (jax.errors.ConcretizationTypeError,
                    jax.errors.TracerArrayConversionError) as error:
                raise ValueError("the optimal route's split of a traced round count needs "
                                 "its static bound most=") from error
        zcdp = super()._per_round(basic, epsilon, fixed, rounds, delta, shares, most)
        return jnp.maximum(zcdp, round_epsilon(jnp.maximum(epsilon - fixed, 0.0), rounds, delta,
                                               most, shares))


BASIC, ADVANCED, ZCDP, OPTIMAL = Basic(), Advanced(), Zcdp(), Optimal()
ROUTES: dict[str, Route] = {r.name: r for r in (BASIC, ADVANCED, ZCDP, OPTIMAL)}
"""Every composition route by name (the names a learner's ``composition`` and
:class:`~dpjax.privacy.BudgetAccountant`'s ``composition`` take)."""


def route(name: str) -> Route:
    """The composition route called ``name``, or ``ValueError``."""
    if name not in ROUTES:
        raise ValueError(f"composition (accounting) must be one of {tuple(ROUTES)}; got "
                         f"{name!r}")
    return ROUTES[name]


__all__ = ["ADVANCED", "BASIC", "MARGIN", "OPTIMAL", "ROUTES", "WHOLE", "ZCDP", "Advanced", "Basic",
           "Optimal", "Route", "Shares", "Zcdp", "advanced_composition", "advanced_round_epsilon",
           "affordable_rounds", "delta_split", "delta_sum", "epsilon_rho", "float32_share",
           "gaussian_selection_rho", "parts", "rho_epsilon", "round_budget", "round_rho", "route",
           "share", "square_share", "zcdp_budget", "zcdp_epsilon", "zcdp_rho", "zcdp_to_dp"]
