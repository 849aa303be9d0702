"""A privacy budget across many fits on the same data: :class:`BudgetAccountant`.

diffprivlib's idea with dpjax's ledger underneath. Every fit's model carries its own
:class:`~dpjax.PrivacyLedger`; a grid search, a cross-validation loop or a sweep makes many fits
on the same data, and each of them is a release. An accountant holds a total ``(ε, δ)``,
refuses a fit whose requested budget would take the total past it (before any work), and
records the ledger of every fit it allowed::

    accountant = dpjax.BudgetAccountant(epsilon=3.0)
    dpjax.fit(X, y, epsilon=1.0, bounds=b, accountant=accountant)      # spends ~1
    accountant.remaining()                                             # ~ (2.0, 0.0)

Totals (each also bounded by basic composition, and the smaller one holds):

* ``"basic"``: ``Σ ε_i``, ``Σ δ_i`` over the fits' spent ``(ε_i, δ_i)`` (sequential composition,
  Dwork & Roth 2014, Thm 3.16).
* ``"advanced"``: the heterogeneous advanced composition of the fits (Kairouz, Oh & Viswanath
  2015, eq. 9; :func:`~dpjax.privacy.composition.advanced_composition`), with the slack
  ``δ'`` that the total ``δ`` leaves over the fits' own ``Σ δ_i``.
* ``"zcdp"``: every release of every fit composed in zCDP (pure ``ε``-DP releases are
  ``ε²/2``-zCDP, Gaussian ones carry their ``ρ``) and converted to ``(ε, δ)`` at the total
  ``δ`` (Bun & Steinke 2016, Prop. 1.3 and Lemma 2.3).

The ``"optimal"`` route of the learners is not offered: the optimal composition holds for
budgets fixed in advance, and fits chosen one after another (a search, an analyst's next
question) choose theirs from what came back; each fit's own ledger may use it
(:mod:`dpjax.privacy.optimal`, "Adaptivity").

A fit is refused when its *requested* ``(ε, δ)``, composed with what was spent, would exceed the
total; the fit then spends at most what it requested (its ledger never exceeds the request), so
the total is never exceeded. For the zCDP route the request counts as ``ε²/2``-zCDP when it is
pure, else basic composition adds it on top (both valid bounds).

What an accountant does not cover: scores computed on private data outside a fit. A grid
search's ``cv_results_`` and ``best_params_`` are exact accuracies on private validation folds;
they are not differentially private (tune on public or held-out data you may spend, or treat
the selection as a leak the ledger does not see).

The accountant is a shared account: ``copy.deepcopy`` (which scikit-learn's ``clone`` uses on
hyper-parameters) returns the same accountant, so every clone of an estimator in a grid search
spends from it; pickling it is refused, since spending in another process (``n_jobs > 1``)
would never come back to it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpjax.privacy.checks import check_delta, check_epsilon, check_neighbouring
from dpjax.privacy.composition import ROUTES, route
from dpjax.privacy.ledger import LedgerEntry, PrivacyLedger


class BudgetExceededError(RuntimeError):
    """A fit would take the accountant past its total budget (nothing was fitted)."""


@dataclasses.dataclass(frozen=True)
class Spend:
    """One accounted fit: its label and its ledger."""

    label: str
    ledger: PrivacyLedger


class BudgetAccountant:
    """A total privacy budget ``(epsilon, delta)`` spent by the fits given it.

    Args:
      epsilon: the total ``ε`` (``inf``: no limit, only tracking).
      delta: the total ``δ`` in ``[0, 1)``.
      composition: ``"basic"`` (default), ``"advanced"`` or ``"zcdp"`` (module docstring).
    """

    def __init__(self, epsilon: float = math.inf, delta: float = 0.0, *,
                 composition: str = "basic") -> None:
        self.epsilon = math.inf if epsilon == math.inf else check_epsilon(epsilon)
        self.delta = check_delta(delta)
        route(composition)
        if composition == "optimal":
            raise ValueError("composition='optimal' holds for budgets fixed in advance, and fits "
                             "accounted one after another choose theirs adaptively: use 'zcdp' "
                             "(each fit's ledger keeps its own optimal total)")
        if composition != "basic" and self.delta == 0.0:
            raise ValueError(f"composition={composition!r} needs a total delta > 0 (it converts "
                             "to (epsilon, delta)-DP at that delta)")
        self.composition = composition
        self._spends: list[Spend] = []
        self._total = (0.0, 0.0)

    # --- the account ------------------------------------------------------------------------

    @property
    def spends(self) -> tuple[Spend, ...]:
        """Every accounted fit, in order."""
        return tuple(self._spends)

    def total(self) -> tuple[float, float]:
        """``(ε, δ)`` spent so far under :attr:`composition` (and never above basic)."""
        return self._total

    def remaining(self) -> tuple[float, float]:
        """``(ε, δ)`` left of the total: a fit that requests at most this much is never refused
        (it adds to the spent total by basic composition at worst)."""
        epsilon, delta = self.total()
        return max(self.epsilon - epsilon, 0.0), max(self.delta - delta, 0.0)

    def check(self, epsilon: float | Sequence[float] | None, delta: float = 0.0, *,
              count: int = 1, neighbouring: str = "add_remove") -> None:
        """Raise :class:`BudgetExceededError` unless ``count`` more fits per requested budget
        (``epsilon`` one budget or a sequence, each with ``delta``) fit in the total.
        ``epsilon=None`` (a non-private fit) is always refused, and so is a fit under another
        neighbouring relation than the fits already accounted (``ValueError``)."""
        budgets = [epsilon] if epsilon is None or np.ndim(epsilon) == 0 else list(epsilon)
        if any(e is None for e in budgets):
            raise BudgetExceededError("a non-private fit (epsilon=None) cannot be accounted: it "
                                      "spends an unbounded budget")
        self._check_relation(neighbouring)
        # a pure request is eps^2/2-zCDP; one with delta > 0 may spend its epsilon in pure
        # releases (rho = eps^2/2) or in (eps, delta) ones without a rho: both extremes count
        totals = []
        for rho_known in ({True} if delta == 0 else {True, False}):
            requests = [PrivacyLedger(
                (LedgerEntry("requested fit", "requested", float(e), 0.0 if rho_known else
                             float(delta), count, rho=0.5 * float(e)**2 if rho_known else None),
                 *((LedgerEntry("requested fit", "requested", 0.0, float(delta), count,
                                rho=0.0),) if rho_known and delta > 0 else ())),
                requested_epsilon=float(e) * count, requested_delta=float(delta) * count)
                for e in budgets]
            totals.append(self._after(requests))
        spent, spent_delta = (max(t[0] for t in totals), max(t[1] for t in totals))
        if spent > self.epsilon * (1 + 1e-12) or spent_delta > self.delta * (1 + 1e-12):
            now = self.total()
            asked = ", ".join(f"{float(e):g}" for e in budgets)
            raise BudgetExceededError(
                f"the budget (epsilon, delta) = ({self.epsilon:g}, {self.delta:g}) would be "
                f"exceeded: {len(self._spends)} fit(s) spent ({now[0]:.6g}, {now[1]:.3g}); "
                f"{count * len(budgets)} more at epsilon {asked} (delta {delta:g}) would make "
                f"({spent:.6g}, {spent_delta:.3g})")

    def spend(self, ledger: PrivacyLedger, label: str = "") -> None:
        """Record a fit's ledger. Raises ``ValueError`` for a non-private ledger and
        :class:`BudgetExceededError` if it takes the total past the budget (a fit that was
        :meth:`check`-ed first never does: its ledger stays within its request)."""
        if not ledger.private:
            raise ValueError("a non-private fit cannot be accounted: "
                             + "; ".join(ledger.not_private_reasons))
        self._check_relation(ledger.neighbouring)
        spent, spent_delta = self._after([ledger])
        if spent > self.epsilon * (1 + 1e-12) or spent_delta > self.delta * (1 + 1e-12):
            raise BudgetExceededError(
                f"recording this fit would spend ({spent:.6g}, {spent_delta:.3g}) of the "
                f"budget ({self.epsilon:g}, {self.delta:g})")
        self._spends.append(Spend(label or f"fit {len(self._spends) + 1}", ledger))
        self._total = (spent, spent_delta)

    def _check_relation(self, neighbouring: str) -> None:
        """Budgets under different neighbouring relations do not add up (an add/remove ``ε``
        is ``2ε`` under replace-one, and a replace-one fit need not be DP under add/remove):
        every fit of one accountant uses the relation of the first."""
        neighbouring = check_neighbouring(neighbouring)
        if self._spends and self._spends[0].ledger.neighbouring != neighbouring:
            raise ValueError(f"this accountant holds {self._spends[0].ledger.neighbouring} "
                             f"fits; a {neighbouring} fit cannot be added to them (use one "
                             "neighbouring relation per accountant)")

    # --- composition ------------------------------------------------------------------------

    def _after(self, ledgers: list[PrivacyLedger]) -> tuple[float, float]:
        """``(ε, δ)`` once ``ledgers`` join the accounted fits: every fit composed afresh
        (:meth:`_compose`), or the total so far plus the new fits by basic composition (both
        hold; the smaller ``ε`` within the total ``δ`` is kept)."""
        composed = self._compose([s.ledger for s in self._spends] + ledgers)
        stacked = (self._total[0] + math.fsum(ledger.epsilon for ledger in ledgers),
                   self._total[1] + math.fsum(ledger.delta for ledger in ledgers))
        within = [t for t in (composed, stacked) if t[1] <= self.delta * (1 + 1e-12)]
        return min(within or [composed, stacked], key=lambda t: t[0])

    def _compose(self, ledgers: list[PrivacyLedger]) -> tuple[float, float]:
        """``(ε, δ)`` of ``ledgers`` (each one fit) under :attr:`composition`, at most basic's:
        advanced composition composes the fits' totals (one release each), zCDP every release
        of every fit (:mod:`dpjax.privacy.composition`)."""
        basic = (math.fsum(ledger.epsilon for ledger in ledgers),
                 math.fsum(ledger.delta for ledger in ledgers))
        if self.composition == "advanced":
            entries = [LedgerEntry("fit", "", ledger.epsilon, ledger.delta) for ledger in ledgers]
        else:
            entries = [e for ledger in ledgers for e in ledger.entries]
        composed = ROUTES[self.composition].compose(entries, self.delta) if ledgers else None
        if composed is not None and composed[0] < basic[0]:
            return composed[0], self.delta      # the route spends the total δ
        return basic

    # --- the accountant is one shared account -----------------------------------------------

    def __copy__(self) -> BudgetAccountant:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> BudgetAccountant:
        return self

    def __reduce__(self) -> Any:
        raise TypeError("a BudgetAccountant cannot be pickled: spending in another process "
                        "(n_jobs > 1) would never come back to it; run the search with n_jobs=1")

    def __repr__(self) -> str:
        epsilon, delta = self.total()
        return (f"BudgetAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"composition={self.composition!r}; {len(self._spends)} fit(s) spent "
                f"({epsilon:.6g}, {delta:.3g}))")

    def __str__(self) -> str:
        epsilon, delta = self.total()
        rows = [(s.label, f"{s.ledger.epsilon:.4g}", f"{s.ledger.delta:.3g}")
                for s in self._spends]
        width = max([len("fit")] + [len(r[0]) for r in rows])
        lines = [f"Budget accountant: total (epsilon, delta) = ({self.epsilon:g}, "
                 f"{self.delta:g}), {self.composition} composition",
                 f"  {'fit'.ljust(width)}  {'epsilon':>10}  {'delta':>9}"]
        lines += [f"  {label.ljust(width)}  {eps:>10}  {dlt:>9}" for label, eps, dlt in rows]
        left = self.remaining()
        lines.append(f"  spent: ({epsilon:.6g}, {delta:.3g}); remaining: ({left[0]:.6g}, "
                     f"{left[1]:.3g})")
        return "\n".join(lines)
