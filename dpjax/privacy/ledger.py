"""The ledger every model carries: one entry per kind of release, assembled from the
:class:`~dpjax.privacy.Cost` each mechanism reported (:meth:`PrivacyLedger.with_costs`), so
there is no second derivation of the budget split. Totals use basic (sequential) composition,
or the learner's composition route (:mod:`dpjax.privacy.composition`: advanced composition,
zCDP) where it is smaller. Data-dependent choices that are *not* private (bounds taken from the
data, say) are entries with ``private=False``: they make the spent epsilon infinite.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Mapping

import numpy as np

from dpjax.privacy.composition import ADVANCED, BASIC, OPTIMAL, zcdp_rho, zcdp_to_dp
from dpjax.privacy.costs import Cost

TEXT_WIDTH = (48, 40)
"""The widths at which a printed ledger wraps its release and mechanism columns."""


@dataclasses.dataclass(frozen=True)
class LedgerEntry:
    """One kind of release: ``count`` sequential releases, each ``(epsilon, delta)``-DP.

    ``rho`` is the per-release zCDP parameter when known (Gaussian noise); pure ``eps``-DP
    releases are ``eps**2 / 2``-zCDP. ``private=False`` marks a data-dependent choice made
    without a mechanism.
    """

    what: str
    mechanism: str
    epsilon: float
    delta: float = 0.0
    count: int = 1
    rho: float | None = None
    private: bool = True

    @property
    def total_epsilon(self) -> float:
        return self.epsilon * self.count if self.private else math.inf

    @property
    def total_delta(self) -> float:
        return self.delta * self.count


@dataclasses.dataclass(frozen=True)
class PrivacyLedger:
    """Immutable record of every release a fitted model made from its training data.

    ``epsilon`` / ``delta`` are the spent totals (``inf`` if any release was not private, or if
    the model was fitted with ``epsilon=None``): under basic (sequential) composition, or with
    ``composition="zcdp"`` (and a requested ``δ > 0``) the smaller of that and the zCDP view,
    every release composed in zCDP and converted at the requested ``δ``, with
    ``composition="optimal"`` the smaller of that and the optimal composition of the pure
    releases (:mod:`dpjax.privacy.optimal`), or with ``composition="advanced"`` the smaller of
    basic and advanced composition with the ``δ`` the releases leave (all hold).
    """

    entries: tuple[LedgerEntry, ...] = ()
    neighbouring: str = "add_remove"
    requested_epsilon: float | None = None
    requested_delta: float = 0.0
    composition: str = "basic"
    plan: str = ""
    """The public plan the fit took, in words (a planned learner's: ``boosted``'s shape and
    noise); empty for the others."""

    def record(self, entry: LedgerEntry) -> PrivacyLedger:
        """A new ledger with ``entry`` appended."""
        return dataclasses.replace(self, entries=(*self.entries, entry))

    def with_costs(self, costs: Mapping[str, Cost]) -> PrivacyLedger:
        """A new ledger with one entry per distinct per-release ``(ε, δ, ρ)`` of each cost (the
        costs a fit returned, concrete), in order; releases that spent nothing are left out.

        Raises ``ValueError`` if a cost is NaN: a mechanism found its budget too small for its
        sampler's range (the budget is public, so saying so leaks nothing)."""
        ledger = self
        for what, cost in costs.items():
            epsilon = np.asarray(cost.epsilon, np.float64).reshape(-1)
            delta = np.broadcast_to(np.asarray(cost.delta, np.float64), np.shape(
                cost.epsilon)).reshape(-1)
            rho = (np.full(epsilon.shape, -1.0) if cost.rho is None else np.broadcast_to(
                np.asarray(cost.rho, np.float64), np.shape(cost.epsilon)).reshape(-1))
            if np.isnan(epsilon).any() or np.isnan(delta).any():
                raise ValueError(
                    f"epsilon is too small: the budget of one release of {what!r} needs noise "
                    "beyond the exact sampler's range (scale 2**31); use a larger epsilon or "
                    "fewer trees / leaves")
            triples, counts = np.unique(np.stack([epsilon, delta, rho], -1), axis=0,
                                        return_counts=True)
            for (eps, dlt, rh), count in zip(triples, counts, strict=True):
                if eps > 0 or dlt > 0:
                    ledger = ledger.record(LedgerEntry(
                        what, cost.mechanism, float(eps), float(dlt), int(count),
                        rho=None if rh < 0 else float(rh)))
        return ledger

    @property
    def private(self) -> bool:
        """True iff the model is differentially private (a finite budget was asked for and
        every data-dependent release went through a mechanism)."""
        return self.requested_epsilon is not None and all(e.private for e in self.entries)

    @property
    def basic_epsilon(self) -> float:
        """``ε`` spent under basic (sequential) composition."""
        if not self.private:
            return math.inf
        return BASIC.compose(self.entries, self.requested_delta)[0]

    @property
    def zcdp_view(self) -> tuple[float, float] | None:
        """``(ε, δ)`` of every release composed in zCDP and converted at the requested ``δ``,
        or ``None`` (a composition other than zCDP or optimal, no ``δ`` asked for, or a
        release without a ``ρ``)."""
        if (self.composition not in ("zcdp", "optimal") or not self.private
                or self.requested_delta <= 0
                or any(e.delta > 0 and e.rho is None for e in self.entries)):
            return None
        return self.zcdp(self.requested_delta)

    @property
    def advanced_view(self) -> tuple[float, float] | None:
        """``(ε, δ)`` of every release by advanced composition with the slack ``δ'`` the
        requested ``δ`` leaves over the releases' own, or ``None`` (another composition, or no
        slack left)."""
        if self.composition != "advanced" or not self.private:
            return None
        slack = self.requested_delta - BASIC.compose(self.entries, 0.0)[1]
        if slack <= 0:
            return None
        return self.advanced(slack)

    @property
    def optimal_view(self) -> tuple[float, float] | None:
        """``(ε, δ)`` of the pure releases by their optimal composition and the Gaussian ones
        in zCDP (:data:`~dpjax.privacy.composition.OPTIMAL`, never above the zCDP view) at the
        requested ``δ``, or ``None`` (another composition, or no ``δ`` asked for)."""
        if self.composition != "optimal" or not self.private or self.requested_delta <= 0:
            return None
        return OPTIMAL.compose(self.entries, self.requested_delta)

    @property
    def composed_view(self) -> tuple[float, float] | None:
        """The ledger's composition route's ``(ε, δ)`` (:attr:`route_view`) when it is below
        basic composition's ``ε`` or basic composition's ``δ`` (the releases' own, summed)
        exceeds the requested ``δ``, else ``None``."""
        view = self.route_view
        if view is None:
            return None
        basic_delta = BASIC.compose(self.entries, 0.0)[1]
        return view if (view[0] < self.basic_epsilon
                        or basic_delta > self.requested_delta) else None

    @property
    def route_view(self) -> tuple[float, float] | None:
        """The composition route's own ``(ε, δ)``, whether or not below basic's."""
        return self.optimal_view or self.zcdp_view or self.advanced_view

    @property
    def epsilon(self) -> float:
        view = self.composed_view
        return self.basic_epsilon if view is None else view[0]

    @property
    def delta(self) -> float:
        view = self.composed_view
        return BASIC.compose(self.entries, 0.0)[1] if view is None else view[1]

    @property
    def not_private_reasons(self) -> tuple[str, ...]:
        reasons = tuple(e.what for e in self.entries if not e.private)
        if self.requested_epsilon is None:
            reasons = ("fitted with epsilon=None (non-private)", *reasons)
        return reasons

    def _private_releases(self) -> list[LedgerEntry]:
        if not self.private:
            raise ValueError(
                "the model is not differentially private: " + "; ".join(self.not_private_reasons)
            )
        return list(self.entries)

    def advanced(self, delta_slack: float) -> tuple[float, float]:
        """``(eps, delta)`` by advanced composition of all releases, with slack ``delta'``
        (:data:`~dpjax.privacy.composition.ADVANCED`).

        Returns the smaller epsilon of basic and advanced composition (both hold)."""
        epsilon, delta = ADVANCED.with_slack(self._private_releases(), delta_slack)
        return min(epsilon, self.basic_epsilon), delta

    def zcdp(self, delta: float) -> tuple[float, float]:
        """``(eps, delta)`` from composing every release in zCDP and converting back
        (:func:`~dpjax.privacy.composition.zcdp_rho`, then Bun & Steinke's conversion).

        Needs every approximate-DP release (``delta > 0``) to carry its ``rho``."""
        entries = self._private_releases()
        for e in entries:
            if e.delta > 0.0 and e.rho is None:
                raise ValueError(f"release {e.what!r} is (eps, delta)-DP without a zCDP rho")
        return zcdp_to_dp(zcdp_rho(entries), delta), delta

    def plan_lines(self) -> list[str]:
        """The printed ``plan:`` line (wrapped at 96 characters), or none."""
        if not self.plan:
            return []
        return textwrap.wrap(f"plan: {self.plan}", 96, initial_indent="  ",
                             subsequent_indent="    ")

    def __str__(self) -> str:
        relation = {"add_remove": "add/remove-one", "replace_one": "replace-one"}
        lines = [f"Privacy ledger ({relation[self.neighbouring]} neighbouring datasets)"]
        rows = [("release", "mechanism", "eps each", "x", "eps total")] + [
            (e.what, e.mechanism, f"{e.epsilon:.4g}" if e.private else "-", str(e.count),
             f"{e.total_epsilon:.4g}" if e.private else "inf") for e in self.entries]
        # the text columns wrapped at TEXT_WIDTH (a tuned model's release says what was
        # chosen), left-aligned; the numbers right-aligned, on a row's first line
        wrapped = [[textwrap.wrap(cell, TEXT_WIDTH[i]) or [""] if i < 2 else [cell]
                    for i, cell in enumerate(row)] for row in rows]
        widths = [max(len(part) for row in wrapped for part in row[i]) for i in range(5)]
        for row in wrapped:
            for k in range(max(len(cell) for cell in row)):
                cells = [(cell[k] if k < len(cell) else "").ljust(w) if i < 2 else
                         (cell[k] if k < len(cell) else "").rjust(w)
                         for i, (cell, w) in enumerate(zip(row, widths, strict=True))]
                lines.append("  " + "  ".join(cells).rstrip())
        lines += self.plan_lines()
        if self.private:
            asked = f"{self.requested_epsilon:.4g}"
            route = {"zcdp": "zCDP", "advanced": "advanced", "optimal": "optimal"}.get(
                self.composition, "basic")
            how = f"{'basic' if self.composed_view is None else route} composition"
            lines.append(
                f"  spent: epsilon = {self.epsilon:.6g}, delta = {self.delta:.3g} "
                f"({how}; requested epsilon = {asked})"
            )
            view = self.route_view
            if view is not None:
                lines.append(f"  views: basic epsilon = {self.basic_epsilon:.6g}; {route} "
                             f"epsilon = {view[0]:.6g} at delta = {view[1]:.3g}")
        else:
            lines.append("  NOT DIFFERENTIALLY PRIVATE: " + "; ".join(self.not_private_reasons))
        return "\n".join(lines)
