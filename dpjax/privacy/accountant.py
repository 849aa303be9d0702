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

**A budget that outlives the process** (issue 53): ``store=`` keeps the budget and its spends
in an SQLite file or a PostgreSQL database (:mod:`dpjax.privacy.budget_store`); every process
that opens it sees every spend::

    accountant = dpjax.BudgetAccountant(3.0, store="team-budget.db")   # created, or reopened
    dpjax.fit(X, y, epsilon=1.0, bounds=b, accountant=accountant)

A fit *reserves* its requested budget before any work, in one write transaction that reads
the spent total and refuses what would pass the budget (so concurrent processes can never pass
it together), and *closes* the reservation with its ledger, in another, before it returns the
model: a returned model's spend is always recorded. A fit that fails before it returns gives
its reservation back. A reservation whose process died stays counted at its request (the
fit's noise may have been drawn): that errs on the side of the budget; so does one whose ledger
the closing transaction refuses. Open reservations count as their requests in every check
(:func:`request_ledgers`: under the same composition route), so concurrent fits do not refuse
each other's closes; a close is refused only where its own ledger falls outside the bound its
check took (under the zCDP route, a large ``δ > 0`` fit mixing pure and ``ρ``-less releases).

The accountant is a shared account: ``copy.deepcopy`` (which scikit-learn's ``clone`` uses on
hyper-parameters) returns the same accountant, so every clone of an estimator in a grid search
spends from it. A stored accountant pickles as its store, so that a search's worker processes
(``n_jobs > 1``) spend from the same budget; pickling an in-memory one is refused, since
spending in another process would never come back to it.
"""

from __future__ import annotations

import dataclasses
import datetime
import getpass
import math
import os
import socket
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpjax.privacy.budget_store import (
    BudgetStoreError,
    Request,
    SQLStore,
    State,
    Terms,
    open_store,
    same_number,
)
from dpjax.privacy.checks import check_delta, check_epsilon, check_neighbouring
from dpjax.privacy.composition import ROUTES, route
from dpjax.privacy.ledger import LedgerEntry, PrivacyLedger

SLACK = 1 + 1e-12
"""A total passes the budget only beyond this relative float round-off."""


class BudgetExceededError(RuntimeError):
    """A fit would take the accountant past its total budget (nothing was fitted)."""


@dataclasses.dataclass(frozen=True)
class Spend:
    """One accounted fit: its label and its ledger; with the time it was recorded (UTC, ISO
    8601), its method and the tag of the accountant that spent it."""

    label: str
    ledger: PrivacyLedger
    time: str = ""
    method: str = ""
    tag: str = ""


@dataclasses.dataclass(frozen=True)
class Reserved:
    """A fit in progress (or whose process died): counted at its requested ``(ε, δ)``."""

    label: str
    epsilon: float
    delta: float
    time: str = ""
    method: str = ""
    tag: str = ""


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def default_tag() -> str:
    """``user@host pid N``: who spends, for the store's record."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "?"
    return f"{user}@{socket.gethostname()} pid {os.getpid()}"


def _basic(ledgers: Sequence[PrivacyLedger]) -> tuple[float, float]:
    return (math.fsum(ledger.epsilon for ledger in ledgers),
            math.fsum(ledger.delta for ledger in ledgers))


class BudgetAccountant:
    """A total privacy budget ``(epsilon, delta)`` spent by the fits given it.

    Args:
      epsilon: the total ``ε`` (``inf``: no limit, only tracking). ``None``: ``inf`` in
        memory; with a ``store``, the stored budget's (reopening it).
      delta: the total ``δ`` in ``[0, 1)`` (``None``: 0, or the stored budget's).
      composition: ``"basic"`` (default), ``"advanced"`` or ``"zcdp"`` (module docstring).
      neighbouring: the fits' neighbouring relation. ``None``: in memory, the first fit's; a
        new stored budget is ``"add_remove"``; a stored one keeps its own.
      store: ``None`` (this process's memory), a path to an SQLite file (created if absent;
        ``sqlite:///path`` too) or a ``postgresql://`` URL: the budget, its terms and its
        spends live there, shared by every process that opens it
        (:mod:`dpjax.privacy.budget_store`). Reopening a stored budget with other terms
        (``epsilon``, ``delta``, ``composition``, ``neighbouring``) is a
        :class:`~dpjax.privacy.budget_store.BudgetStoreError`.
      name: the budget's name in its store (one store may hold several budgets).
      tag: recorded with every spend (default ``user@host pid N``).
      read_only: open a stored budget to inspect it only (an SQLite file the user may read
        but not write; nothing is created, and spending fails).

    With ``epsilon`` given, the same call creates the budget or reopens it: the terms left out
    take their defaults (``delta`` 0, ``"basic"``, ``"add_remove"``) and must match the
    stored ones. Without it, the stored budget is reopened as it is.
    """

    def __init__(self, epsilon: float | None = None, delta: float | None = None, *,
                 composition: str | None = None, neighbouring: str | None = None,
                 store: Any = None, name: str = "default", tag: str | None = None,
                 read_only: bool = False) -> None:
        if epsilon is not None and epsilon != math.inf:
            epsilon = check_epsilon(epsilon)
        delta = None if delta is None else check_delta(delta)
        if composition is not None:
            route(composition)
            if composition == "optimal":
                raise ValueError("composition='optimal' holds for budgets fixed in advance, "
                                 "and fits accounted one after another choose theirs "
                                 "adaptively: use 'zcdp' (each fit's ledger keeps its own "
                                 "optimal total)")
        neighbouring = None if neighbouring is None else check_neighbouring(neighbouring)
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        self.name, self.tag = name, default_tag() if tag is None else str(tag)
        read_only = read_only and store is not None
        self._store: SQLStore = open_store(store, read_only)
        creates = not read_only and (epsilon is not None or store is None)
        if not creates and not self._store.exists:
            raise BudgetStoreError(f"no budget store at {self._store.where!r}"
                                   + ("" if read_only else ": give epsilon (and delta) to "
                                      "create one there"))
        asked = Terms(math.inf if epsilon is None else float(epsilon),
                      0.0 if delta is None else float(delta), composition or "basic",
                      neighbouring if neighbouring or store is None else "add_remove", _now())
        if epsilon is not None and store is not None:    # the terms' defaults must match
            delta, composition, neighbouring = asked.delta, asked.composition, asked.neighbouring
        with self._store.transaction(write=not read_only) as cursor:
            self._store.ensure_layout(cursor, create=not read_only)
            found = self._store.terms(cursor, name)
            if found is None:
                if not creates:
                    raise BudgetStoreError(
                        f"store {self._store.where!r} holds no budget named {name!r}"
                        + ("" if read_only else ": give epsilon (and delta) to create it"))
                if asked.composition != "basic" and asked.delta == 0.0:
                    raise ValueError(f"composition={asked.composition!r} needs a total delta "
                                     "> 0 (it converts to (epsilon, delta)-DP at that delta)")
                self._store.create(cursor, name, asked)
                terms = asked
            else:
                terms = found[0]
                self._check_terms(terms, epsilon, delta, composition, neighbouring)
        self.epsilon, self.delta, self.composition = terms.epsilon, terms.delta, terms.composition

    def _check_terms(self, terms: Terms, epsilon: float | None, delta: float | None,
                     composition: str | None, neighbouring: str | None) -> None:
        """A reopened budget's terms are fixed: asking for others is an error."""
        wrong = [f"{what} {given!r} (stored: {stored!r})" for what, given, stored, same in (
            ("epsilon", epsilon, terms.epsilon, epsilon is None or same_number(
                epsilon, terms.epsilon)),
            ("delta", delta, terms.delta, delta is None or same_number(delta, terms.delta)),
            ("composition", composition, terms.composition,
             composition in (None, terms.composition)),
            ("neighbouring", neighbouring, terms.neighbouring,
             neighbouring in (None, terms.neighbouring))) if not same]
        if wrong:
            raise BudgetStoreError(
                f"store {self._store.where!r} holds the budget {self.name!r} of (epsilon, "
                f"delta) = ({terms.epsilon:g}, {terms.delta:g}), {terms.composition} "
                f"composition, {terms.neighbouring or 'any'} neighbouring, created "
                f"{terms.created}; asked for another: {', '.join(wrong)}. Its terms are fixed "
                "when it is created: use another name or store for another budget")

    @classmethod
    def budgets(cls, store: Any) -> list[str]:
        """The names of the budgets ``store`` holds (read only: nothing is created)."""
        opened = open_store(store, read_only=True)
        if store is None or not opened.exists:
            raise BudgetStoreError(f"no budget store at {opened.where!r}")
        with opened.transaction(write=False) as cursor:
            opened.ensure_layout(cursor, create=False)
            return opened.names(cursor)

    @property
    def store(self) -> str | None:
        """Where the budget lives (a URL without its password), or ``None`` (in memory)."""
        return self._store.where if self._store.shared else None

    @property
    def neighbouring(self) -> str | None:
        """The fits' neighbouring relation (``None``: an in-memory accountant before its first
        spend)."""
        return _relation(self._read())

    # --- the account ------------------------------------------------------------------------

    def _read(self) -> State:
        with self._store.transaction(write=False) as cursor:
            return self._store.state(cursor, self.name)

    @property
    def spends(self) -> tuple[Spend, ...]:
        """Every accounted fit, in order (of every process spending from the store)."""
        return tuple(Spend(row.label, row.ledger, row.time, row.method, row.tag)
                     for row in self._read().rows if row.ledger is not None)

    @property
    def reserved(self) -> tuple[Reserved, ...]:
        """The open reservations: fits in progress, or whose process died before they closed
        (counted at their requested budget)."""
        return tuple(Reserved(row.label, row.epsilon, row.delta, row.time, row.method, row.tag)
                     for row in self._read().rows if row.open)

    def total(self) -> tuple[float, float]:
        """``(ε, δ)`` spent so far under :attr:`composition` (and never above basic), by the
        closed spends (the open reservations: :meth:`remaining`)."""
        return self._read().spent

    def remaining(self) -> tuple[float, float]:
        """``(ε, δ)`` left of the total, the open reservations taken at their request: a fit
        that requests at most this much is never refused (it adds to the spent total by basic
        composition at worst)."""
        return self._left(self._read())

    def _left(self, state: State) -> tuple[float, float]:
        epsilon, delta = _plus(state.spent, _basic_open(state))
        return max(self.epsilon - epsilon, 0.0), max(self.delta - delta, 0.0)

    def check(self, epsilon: float | Sequence[float] | None, delta: float = 0.0, *,
              count: int = 1, neighbouring: str = "add_remove") -> None:
        """Raise :class:`BudgetExceededError` unless ``count`` more fits per requested budget
        (``epsilon`` one budget or a sequence, each with ``delta``) fit in the total.
        ``epsilon=None`` (a non-private fit) is always refused, and so is a fit under another
        neighbouring relation than the budget's (``ValueError``). Reserves nothing
        (:meth:`reserve`)."""
        self._check_request(self._read(), _request(epsilon, delta, count, neighbouring))

    def reserve(self, epsilon: float | Sequence[float] | None, delta: float = 0.0, *,
                count: int = 1, neighbouring: str = "add_remove", label: str = "",
                method: str = "") -> Reservation:
        """:meth:`check` and record the request as an open reservation, in one write
        transaction: concurrent processes can never pass the budget together. Close it with
        :meth:`Reservation.commit` (the fits' ledgers) or give it back with
        :meth:`Reservation.cancel`; as a context manager, an exception gives it back."""
        request = _request(epsilon, delta, count, neighbouring)
        with self._store.transaction() as cursor:
            state = self._store.state(cursor, self.name)
            self._check_request(state, request)
            row = self._store.insert(cursor, self.name, _now(), label or "fit in progress",
                                     method, self.tag, request)
        return Reservation(self, row)

    def spend(self, ledger: PrivacyLedger, label: str = "", method: str = "") -> None:
        """Record a fit's ledger. Raises ``ValueError`` for a non-private ledger and
        :class:`BudgetExceededError` if it takes the total past the budget (a fit that was
        :meth:`check`-ed first never does: its ledger stays within its request)."""
        self._close(None, [(ledger, label, method)])

    # --- inside the transactions ------------------------------------------------------------

    def _check_request(self, state: State, request: Request) -> None:
        self._check_relation(state, request.neighbouring)
        # a pure request is eps^2/2-zCDP; one with delta > 0 may spend its epsilon in pure
        # releases (rho = eps^2/2) or in (eps, delta) ones without a rho: both extremes count
        delta, count, budgets = request.delta, request.count, request.epsilons
        totals = [self._bound(state, request_ledgers(request, forms)) for forms in (
            [("pure", "delta"), ("rho_free",)] if delta > 0 else [("pure",)])]
        spent, spent_delta = (max(t[0] for t in totals), max(t[1] for t in totals))
        if spent > self.epsilon * SLACK or spent_delta > self.delta * SLACK:
            closed = sum(1 for row in state.rows if not row.open)
            reserved = _basic_open(state)
            asked = ", ".join(f"{float(e):g}" for e in budgets)
            raise BudgetExceededError(
                f"the budget (epsilon, delta) = ({self.epsilon:g}, {self.delta:g}) would be "
                f"exceeded: {closed} fit(s) spent ({state.spent[0]:.6g}, "
                f"{state.spent[1]:.3g})" + (f", fits in progress reserve ({reserved[0]:.6g}, "
                                            f"{reserved[1]:.3g})" if any(reserved) else "")
                + f"; {count * len(budgets)} more at epsilon {asked} (delta {delta:g}) would "
                f"make ({spent:.6g}, {spent_delta:.3g})")

    def _close(self, reservation: int | None,
               spends: Sequence[tuple[PrivacyLedger, str, str]]) -> None:
        """Record ``spends`` (ledger, label, method) in place of the open ``reservation``, in
        one transaction. A non-private ledger gives the reservation back (the fit raises: no
        model is returned). A spend that would pass the budget (a ledger outside what its
        reservation's check allowed for) records nothing and leaves the reservation counted at
        its request: the fit raises, but its noise was drawn."""
        for ledger, _, _ in spends:
            if not ledger.private:
                if reservation is not None:
                    self._cancel(reservation)
                raise ValueError("a non-private fit cannot be accounted: "
                                 + "; ".join(ledger.not_private_reasons))
        refused = None
        with self._store.transaction() as cursor:
            state = self._store.state(cursor, self.name)
            others = State(state.terms, state.spent,
                           tuple(row for row in state.rows if row.id != reservation))
            if reservation is not None and len(others.rows) == len(state.rows):
                raise RuntimeError(f"the reservation {reservation} of budget {self.name!r} is "
                                   "gone from the store: its spends cannot be recorded")
            for ledger, _, _ in spends:
                self._check_relation(others, ledger.neighbouring)
            ledgers = [ledger for ledger, _, _ in spends]
            epsilon, delta = self._bound(others, ledgers)
            if epsilon > self.epsilon * SLACK or delta > self.delta * SLACK:
                refused = (f"recording this fit would spend ({epsilon:.6g}, {delta:.6g}) of the "
                           f"budget ({self.epsilon:g}, {self.delta:g})" + (
                               "; its reservation stays counted at its request"
                               if reservation is not None else ""))
            else:
                if reservation is not None:
                    self._store.delete(cursor, [reservation])
                if state.terms.neighbouring is None and ledgers:
                    self._store.set_neighbouring(cursor, self.name, ledgers[0].neighbouring)
                closed = sum(1 for row in state.rows if not row.open)
                for index, (ledger, label, method) in enumerate(spends):
                    self._store.insert(cursor, self.name, _now(),
                                       label or f"fit {closed + index + 1}", method, self.tag,
                                       ledger)
                self._store.set_spent(cursor, self.name, self._after(others, ledgers))
        if refused is not None:
            raise BudgetExceededError(refused)

    def _cancel(self, reservation: int) -> None:
        with self._store.transaction() as cursor:
            self._store.delete(cursor, [reservation])

    @staticmethod
    def _check_relation(state: State, neighbouring: str) -> None:
        """Budgets under different neighbouring relations do not add up (an add/remove ``ε``
        is ``2ε`` under replace-one, and a replace-one fit need not be DP under add/remove):
        every fit of one budget uses its relation (an in-memory accountant's: the first
        spend's, or an open reservation's)."""
        neighbouring = check_neighbouring(neighbouring)
        fixed = _relation(state)
        if fixed is not None and fixed != neighbouring:
            raise ValueError(f"this accountant holds {fixed} fits; a {neighbouring} fit cannot "
                             "be added to them (use one neighbouring relation per accountant)")

    # --- composition ------------------------------------------------------------------------

    def _after(self, state: State, ledgers: list[PrivacyLedger]) -> tuple[float, float]:
        """``(ε, δ)`` of the closed spends once ``ledgers`` join them (the stored spent
        total): :meth:`_bound` without the open reservations."""
        return self._bound(state, ledgers, reserved=False)

    def _bound(self, state: State, ledgers: list[PrivacyLedger],
               reserved: bool = True) -> tuple[float, float]:
        """``(ε, δ)`` once ``ledgers`` join the closed spends and (``reserved``) the open
        reservations, each at its request (:func:`request_ledgers`, which bounds any ledger
        within it): every fit composed afresh (:meth:`_compose`), or the spent total so far
        plus the reservations and the new fits by basic composition (both hold; the smaller
        ``ε`` within the total ``δ`` is kept)."""
        closed = [row for row in state.rows if row.ledger is not None]
        held = ([ledger for row in state.rows if row.request is not None
                 for ledger in request_ledgers(row.request,
                                               held_forms(row.request, self.composition))]
                if reserved else [])
        # the closed spends' own totals as recorded (each ledger's, when it was inserted)
        recorded = (math.fsum(row.epsilon for row in closed),
                    math.fsum(row.delta for row in closed))
        composed = self._compose([row.ledger for row in closed] + held + ledgers,
                                 _plus(recorded, _basic(held + ledgers)))
        stacked = _plus(_plus(state.spent, _basic_open(state) if reserved else (0.0, 0.0)),
                        _basic(ledgers))
        within = [t for t in (composed, stacked) if t[1] <= self.delta * SLACK]
        return min(within or [composed, stacked], key=lambda t: t[0])

    def _compose(self, ledgers: list[PrivacyLedger],
                 basic: tuple[float, float] | None = None) -> tuple[float, float]:
        """``(ε, δ)`` of ``ledgers`` (each one fit) under :attr:`composition`, at most basic's:
        advanced composition composes the fits' totals (one release each), zCDP every release
        of every fit (:mod:`dpjax.privacy.composition`); ``basic``: their basic total, where
        known."""
        basic = _basic(ledgers) if basic is None else basic
        if self.composition == "basic":     # a ledger's own total is at most its basic sum
            return basic
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
        if not self._store.shared:
            raise TypeError("an in-memory BudgetAccountant cannot be pickled: spending in "
                            "another process (n_jobs > 1) would never come back to it; run the "
                            "search with n_jobs=1, or keep the budget in a store "
                            "(BudgetAccountant(..., store=path))")
        return _reopen, (self._store.target, self.name, self.tag)

    def __repr__(self) -> str:
        state = self._read()
        epsilon, delta = state.spent
        where = f", store={self._store.where!r}" if self._store.shared else ""
        closed = sum(1 for row in state.rows if not row.open)
        return (f"BudgetAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"composition={self.composition!r}{where}; {closed} fit(s) spent "
                f"({epsilon:.6g}, {delta:.3g}))")

    def __str__(self) -> str:
        state = self._read()
        closed = [row for row in state.rows if not row.open]
        rows = [(row.label, f"{row.epsilon:.4g}", f"{row.delta:.3g}") for row in closed]
        rows += [(f"{row.label} (reserved)", f"{row.epsilon:.4g}", f"{row.delta:.3g}")
                 for row in state.rows if row.open]
        width = max([len("fit")] + [len(r[0]) for r in rows])
        where = f" in {self._store.where}" if self._store.shared else ""
        lines = [f"Budget accountant{where}: total (epsilon, delta) = ({self.epsilon:g}, "
                 f"{self.delta:g}), {self.composition} composition",
                 f"  {'fit'.ljust(width)}  {'epsilon':>10}  {'delta':>9}"]
        lines += [f"  {label.ljust(width)}  {eps:>10}  {dlt:>9}" for label, eps, dlt in rows]
        epsilon, delta = state.spent
        left = self._left(state)
        lines.append(f"  spent: ({epsilon:.6g}, {delta:.3g}); remaining: ({left[0]:.6g}, "
                     f"{left[1]:.3g})")
        return "\n".join(lines)


class Reservation:
    """A fit's reserved budget (:meth:`BudgetAccountant.reserve`): :meth:`commit` records the
    fit's ledgers in its place, :meth:`cancel` gives it back; as a context manager, leaving
    with an exception before :meth:`commit` cancels it."""

    def __init__(self, accountant: BudgetAccountant, row: int) -> None:
        self.accountant, self.row, self.done = accountant, row, False

    def commit(self, spends: Sequence[tuple[PrivacyLedger, str]], method: str = "") -> None:
        """Record ``spends`` (ledger, label), each within its request, and close the
        reservation, in one transaction."""
        if self.done:
            raise RuntimeError("this reservation is already closed")
        self.done = True
        self.accountant._close(self.row, [(ledger, label, method) for ledger, label in spends])

    def cancel(self) -> None:
        """Give the reserved budget back (the fit released nothing)."""
        if not self.done:
            self.done = True
            self.accountant._cancel(self.row)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        if kind is not None:
            self.cancel()


def _plus(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    return a[0] + b[0], a[1] + b[1]


def _basic_open(state: State) -> tuple[float, float]:
    """The open reservations' requested ``(ε, δ)``, by basic composition."""
    rows = [row for row in state.rows if row.open]
    return math.fsum(row.epsilon for row in rows), math.fsum(row.delta for row in rows)


def _relation(state: State) -> str | None:
    """The budget's neighbouring relation: fixed when it was created, or (in memory) by the
    first spend or open reservation."""
    if state.terms.neighbouring is not None:
        return state.terms.neighbouring
    for row in state.rows:
        if row.ledger is not None:
            return row.ledger.neighbouring
        if row.request is not None:
            return row.request.neighbouring
    return None


def _request(epsilon: float | Sequence[float] | None, delta: float, count: int,
             neighbouring: str) -> Request:
    """``count`` fits at each of ``epsilon`` (one budget or a sequence), each with ``delta``;
    a non-private fit (``None``) is refused."""
    budgets = [epsilon] if epsilon is None or np.ndim(epsilon) == 0 else list(epsilon)
    if any(e is None for e in budgets):
        raise BudgetExceededError("a non-private fit (epsilon=None) cannot be accounted: it "
                                  "spends an unbounded budget")
    return Request(tuple(float(e) for e in budgets), float(delta), int(count),
                   check_neighbouring(neighbouring))


def request_ledgers(request: Request, forms: Sequence[str]) -> list[PrivacyLedger]:
    """A request as ledgers, one per requested budget ``ε_i`` (``count`` fits), of the
    releases ``forms`` names: ``"pure"``, ``ε_i`` in pure releases (``ρ = ε_i²/2``, at least
    any pure or Gaussian ledger of total ``ε_i``); ``"delta"``, its ``δ`` alone (``ρ = 0``);
    ``"rho_free"``, ``(ε_i, δ)`` without a ``ρ``."""
    ledgers = []
    for epsilon in request.epsilons:
        made = {"pure": (epsilon, 0.0, 0.5 * epsilon**2), "delta": (0.0, request.delta, 0.0),
                "rho_free": (epsilon, request.delta, None)}
        entries = tuple(LedgerEntry("requested fit", "requested", *made[form][:2],
                                    request.count, rho=made[form][2]) for form in forms)
        ledgers.append(PrivacyLedger(entries, request.neighbouring,
                                     requested_epsilon=epsilon * request.count,
                                     requested_delta=request.delta * request.count))
    return ledgers


def held_forms(request: Request, composition: str) -> tuple[str, ...]:
    """An open reservation's releases in :func:`request_ledgers`, bounding every ledger within
    its request under ``composition``: pure releases, and with ``δ > 0`` for the zCDP route
    a ``ρ``-free ``(ε_i, δ)`` beside them (its share of ``ε_i`` may be spent either way), for
    basic and advanced composition the ``ρ``-free release alone."""
    if request.delta == 0:
        return ("pure",)
    return ("pure", "rho_free") if composition == "zcdp" else ("rho_free",)


def _reopen(store: Any, name: str, tag: str) -> BudgetAccountant:
    return BudgetAccountant(store=store, name=name, tag=tag)


class Unaccounted:
    """No accountant: :func:`reserve`'s stand-in, whose commit records nothing."""

    def commit(self, spends: Sequence[tuple[PrivacyLedger, str]], method: str = "") -> None:
        """Nothing to record."""

    def __enter__(self) -> Unaccounted:
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> None:
        return None


def reserve(accountant: BudgetAccountant | None, epsilon: float | Sequence[float] | None,
            delta: float = 0.0, *, count: int = 1, neighbouring: str = "add_remove",
            label: str = "", method: str = "") -> Reservation | Unaccounted:
    """A fit's reservation (:meth:`BudgetAccountant.reserve`), or :class:`Unaccounted` when it
    has no accountant: ``with reserve(...) as reservation: ...; reservation.commit(...)``."""
    if accountant is None:
        return Unaccounted()
    return accountant.reserve(epsilon, delta, count=count, neighbouring=neighbouring,
                              label=label, method=method)

