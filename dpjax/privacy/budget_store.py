"""Where a :class:`~dpjax.privacy.BudgetAccountant` keeps its budget and spends: a SQL database
that every process opening it shares (issue 53).

* **In memory** (``store=None``): an SQLite database in the process's memory, one per
  accountant; it ends with the process, as diffprivlib's accountant does.
* **An SQLite file** (``store="budget.db"`` or ``"sqlite:///path"``): the standard library's
  ``sqlite3`` in WAL mode with ``synchronous=FULL``, so a committed spend survives a killed
  process (and a power cut). Every check-and-spend is one ``BEGIN IMMEDIATE`` transaction: the
  database's write lock is taken before the spent total is read, so two processes can never
  pass the budget together; they wait for each other (up to :data:`BUSY_TIMEOUT` seconds).
* **PostgreSQL** (``store="postgresql://..."``): a budget shared across machines, through the
  maintained ``psycopg`` driver (``pip install "dpjax[postgres]"``). A transaction takes the
  budget's advisory lock (``pg_advisory_xact_lock``) before it reads, the same serial order.

The layout: ``dpjax_store`` (the format and its version), ``dpjax_budgets`` (one row per named
budget: its totals, composition and neighbouring relation, fixed when it is created, and the
spent total of its closed spends) and ``dpjax_spends`` (one row per spend: the time, the label,
the method, the caller's tag, the ledger as JSON; an *open* row is a reservation, a fit in
progress, counted at its requested budget until it closes). Rows are never updated: a
reservation is deleted when its fit's spends are inserted, in the same transaction.

This module holds the SQL only; what a spend may take is :mod:`dpjax.privacy.accountant`'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from dpjax.privacy.ledger import LedgerEntry, PrivacyLedger

FORMAT = "dpjax-budget"
VERSION = 1
BUSY_TIMEOUT = 120.0
"""Seconds a transaction waits for another process's write lock before it fails."""
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
CACHED_LEDGERS = 1_000_000
"""Decoded ledgers a process keeps (the oldest go first: they are read again if needed)."""


class BudgetStoreError(ValueError):
    """A store that cannot hold this budget: not a dpjax budget store, corrupt, not writable,
    or holding another budget under the same name."""


@dataclasses.dataclass(frozen=True)
class Terms:
    """A budget's fixed terms: its totals, composition and neighbouring relation (``None``
    until the first spend of an in-memory accountant fixes it)."""

    epsilon: float
    delta: float
    composition: str
    neighbouring: str | None
    created: str = ""


@dataclasses.dataclass(frozen=True)
class Request:
    """A reservation's request: ``count`` fits at each of ``epsilons``, each with ``delta``,
    under ``neighbouring``."""

    epsilons: tuple[float, ...]
    delta: float
    count: int
    neighbouring: str

    @property
    def total(self) -> tuple[float, float]:
        """Its ``(ε, δ)`` by basic composition."""
        return (math.fsum(self.epsilons) * self.count,
                self.delta * len(self.epsilons) * self.count)


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of ``dpjax_spends``: a closed spend (``ledger`` set) or an open reservation
    (``request`` set; ``epsilon``, ``delta`` its total by basic composition)."""

    id: int
    time: str
    label: str
    method: str
    tag: str
    epsilon: float
    delta: float
    ledger: PrivacyLedger | None
    request: Request | None = None

    @property
    def open(self) -> bool:
        return self.ledger is None


@dataclasses.dataclass(frozen=True)
class State:
    """What a transaction reads: the budget's terms, the spent total of its closed spends and
    every row, in order."""

    terms: Terms
    spent: tuple[float, float]
    rows: tuple[Row, ...]


def ledger_json(ledger: PrivacyLedger) -> str:
    """A ledger as JSON text (Python's ``Infinity`` for an infinite ``ε``)."""
    fields = dataclasses.asdict(ledger)
    return json.dumps(fields, sort_keys=True)


def ledger_from_json(text: str) -> PrivacyLedger:
    fields = json.loads(text)
    entries = tuple(LedgerEntry(**entry) for entry in fields.pop("entries"))
    return PrivacyLedger(entries, **fields)


def describe(store: Any) -> str:
    """The store as a user named it, a URL's password left out (``user:password@`` and a
    ``password=`` parameter)."""
    text = os.fspath(store) if isinstance(store, os.PathLike) else str(store)
    if not text.startswith(POSTGRES_SCHEMES):
        return text
    parts = urllib.parse.urlsplit(text)
    netloc = parts.netloc
    if "@" in netloc:
        credentials, host = netloc.rsplit("@", 1)
        netloc = f"{credentials.split(':')[0]}@{host}"
    query = urllib.parse.urlencode([(k, "***" if k.lower() == "password" else v) for k, v in
                                    urllib.parse.parse_qsl(parts.query, keep_blank_values=True)],
                                   safe="/")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class SQLStore:
    """A budget store over one DB-API connection per process (:func:`open_store`)."""

    placeholder = "?"
    id_column = "INTEGER PRIMARY KEY AUTOINCREMENT"
    real = "REAL"
    returning = ""
    elsewhere = ": name a new file"

    def __init__(self, where: str) -> None:
        self.where = where
        self.target = where        # what reopens the same store in another process
        self._connection: Any = None
        self._pid = -1
        self._lock = threading.Lock()
        self._ledgers: dict[int, PrivacyLedger] = {}

    # --- the dialect ------------------------------------------------------------------------

    def connect(self) -> Any:
        raise NotImplementedError

    def begin(self, cursor: Any, write: bool) -> None:
        """Open a transaction: a write one holds the store's write lock before any read; a
        read one sees one consistent state and takes no lock."""
        raise NotImplementedError

    def usable(self, connection: Any) -> bool:
        """Whether a kept connection can start a transaction (not closed, none left open)."""
        return True

    def translate(self, error: Exception) -> Exception | None:
        """The user's error for a driver error, or ``None`` to let it through."""
        return None

    # --- the transaction --------------------------------------------------------------------

    def _sql(self, text: str) -> str:
        return text.replace("?", self.placeholder)

    @property
    def connection(self) -> Any:
        stale = self._connection is not None and (
            (self.shared and self._pid != os.getpid()) or not self.usable(self._connection))
        if stale and self._pid == os.getpid():
            with contextlib.suppress(Exception):
                self._connection.close()
        if self._connection is None or stale:   # a forked child's own, or a dropped session's
            self._connection, self._pid = self.connect(), os.getpid()
        return self._connection

    @property
    def shared(self) -> bool:
        """Whether other processes open the same database (a forked child then connects
        anew; an in-memory database stays the child's copy, as a Python object would)."""
        return True

    @contextlib.contextmanager
    def transaction(self, write: bool = True) -> Iterator[Any]:
        """One transaction on the store, committed when the block ends and rolled back when
        it (or its start) raises; a write transaction is exclusive of every other process's
        writes."""
        with self._lock:
            cursor = None
            try:
                cursor = self.connection.cursor()
                self.begin(cursor, write)
                yield cursor
                cursor.execute("COMMIT")
            except BaseException as error:
                if cursor is not None:
                    with contextlib.suppress(Exception):
                        cursor.execute("ROLLBACK")
                if isinstance(error, Exception):
                    raise (self.translate(error) or error) from error
                raise

    def execute(self, cursor: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        try:
            cursor.execute(self._sql(sql), tuple(params))
        except Exception as error:
            raise (self.translate(error) or error) from error
        return cursor

    # --- the layout -------------------------------------------------------------------------

    def ensure_layout(self, cursor: Any, create: bool = True) -> None:
        """Create the tables of an empty database (where ``create``); refuse another
        database's."""
        tables = self.tables(cursor)
        if "dpjax_store" not in tables:
            if tables or not create:
                held = (f"a database of other tables ({', '.join(sorted(tables)[:5])})"
                        if tables else "an empty database")
                raise BudgetStoreError(f"store {self.where!r} is {held}, not a dpjax budget "
                                       f"store{self.elsewhere}")
            self.execute(cursor, "CREATE TABLE dpjax_store (key TEXT PRIMARY KEY, value TEXT)")
            self.execute(cursor, "INSERT INTO dpjax_store VALUES ('format', ?), ('version', ?)",
                         (FORMAT, str(VERSION)))
            self.execute(cursor, f"""CREATE TABLE dpjax_budgets (
                name TEXT PRIMARY KEY, epsilon {self.real} NOT NULL, delta {self.real} NOT NULL,
                composition TEXT NOT NULL, neighbouring TEXT, created TEXT NOT NULL,
                spent_epsilon {self.real} NOT NULL, spent_delta {self.real} NOT NULL)""")
            self.execute(cursor, f"""CREATE TABLE dpjax_spends (
                id {self.id_column}, budget TEXT NOT NULL REFERENCES dpjax_budgets(name),
                time TEXT NOT NULL, label TEXT NOT NULL, method TEXT NOT NULL,
                tag TEXT NOT NULL, epsilon {self.real} NOT NULL, delta {self.real} NOT NULL,
                ledger TEXT, request TEXT)""")
            self.execute(cursor, "CREATE INDEX dpjax_spends_budget ON dpjax_spends (budget, id)")
            return
        found = dict(self.execute(cursor, "SELECT key, value FROM dpjax_store").fetchall())
        if found.get("format") != FORMAT:
            raise BudgetStoreError(f"store {self.where!r} is not a dpjax budget store")
        if found.get("version") != str(VERSION):
            raise BudgetStoreError(f"store {self.where!r} has budget store version "
                                   f"{found.get('version')!r}; this dpjax reads {VERSION}")

    def tables(self, cursor: Any) -> set[str]:
        raise NotImplementedError

    # --- reads and writes inside a transaction ----------------------------------------------

    def terms(self, cursor: Any, name: str) -> tuple[Terms, tuple[float, float]] | None:
        found = self.execute(cursor, "SELECT epsilon, delta, composition, neighbouring, "
                             "created, spent_epsilon, spent_delta FROM dpjax_budgets "
                             "WHERE name = ?", (name,)).fetchone()
        if found is None:
            return None
        epsilon, delta, composition, neighbouring, created, spent_e, spent_d = found
        return (Terms(float(epsilon), float(delta), composition, neighbouring, created),
                (float(spent_e), float(spent_d)))

    def names(self, cursor: Any) -> list[str]:
        """The store's budgets, in order of name."""
        return [row[0] for row in self.execute(
            cursor, "SELECT name FROM dpjax_budgets ORDER BY name").fetchall()]

    @property
    def exists(self) -> bool:
        """Whether the store may hold a budget already (a file that is not there does not)."""
        return True

    def create(self, cursor: Any, name: str, terms: Terms) -> None:
        self.execute(cursor, "INSERT INTO dpjax_budgets VALUES (?, ?, ?, ?, ?, ?, 0.0, 0.0)",
                     (name, terms.epsilon, terms.delta, terms.composition, terms.neighbouring,
                      terms.created))

    def state(self, cursor: Any, name: str) -> State:
        found = self.terms(cursor, name)
        if found is None:
            raise BudgetStoreError(f"store {self.where!r} holds no budget named {name!r}")
        # a closed spend's ledger text is read once per process (rows are never updated)
        rows = self.execute(cursor, "SELECT id, time, label, method, tag, epsilon, delta, "
                            "CASE WHEN ledger IS NULL THEN NULL ELSE '' END, request FROM "
                            "dpjax_spends WHERE budget = ? ORDER BY id", (name,)).fetchall()
        unread = [row[0] for row in rows if row[7] is not None and row[0] not in self._ledgers]
        texts: dict[int, str] = {}
        if unread:
            texts = dict(self.execute(
                cursor, "SELECT id, ledger FROM dpjax_spends WHERE budget = ? AND id >= ? AND "
                "ledger IS NOT NULL", (name, min(unread))).fetchall())
        return State(found[0], found[1], tuple(
            self._row(*row[:7], texts.get(row[0], row[7]), row[8]) for row in rows))

    def _row(self, id: int, time: str, label: str, method: str, tag: str, epsilon: float,
             delta: float, ledger: str | None, request: str | None) -> Row:
        """A row, its ledger decoded once per process (rows are never updated)."""
        decoded, asked = None, None
        try:
            if ledger is not None:
                decoded = self._ledgers.get(id)
                if decoded is None:
                    decoded = self._ledgers[id] = ledger_from_json(ledger)
                    if len(self._ledgers) > CACHED_LEDGERS:
                        self._ledgers.pop(next(iter(self._ledgers)))
            elif request is not None:
                fields = json.loads(request)
                asked = Request(tuple(float(e) for e in fields["epsilons"]),
                                float(fields["delta"]), int(fields["count"]),
                                str(fields["neighbouring"]))
            else:
                raise ValueError("neither a ledger nor a request")
        except (ValueError, TypeError, KeyError) as error:
            raise BudgetStoreError(f"store {self.where!r} holds an unreadable spend ({id}): "
                                   f"{error}") from error
        return Row(int(id), time, label, method, tag, float(epsilon), float(delta), decoded,
                   asked)

    def insert(self, cursor: Any, name: str, time: str, label: str, method: str, tag: str,
               spent: PrivacyLedger | Request) -> int:
        """A closed spend (a ledger) or an open reservation (a request)."""
        if isinstance(spent, Request):
            (epsilon, delta), ledger = spent.total, None
            request = json.dumps(dataclasses.asdict(spent))
        else:
            epsilon, delta, ledger, request = (spent.epsilon, spent.delta, ledger_json(spent),
                                               None)
        self.execute(cursor, "INSERT INTO dpjax_spends (budget, time, label, method, tag, "
                     "epsilon, delta, ledger, request) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                     + self.returning, (name, time, label, method, tag, epsilon, delta, ledger,
                                        request))
        return int(cursor.fetchone()[0] if self.returning else cursor.lastrowid)

    def delete(self, cursor: Any, ids: Sequence[int]) -> None:
        for row in ids:
            self.execute(cursor, "DELETE FROM dpjax_spends WHERE id = ?", (row,))

    def set_spent(self, cursor: Any, name: str, spent: tuple[float, float]) -> None:
        self.execute(cursor, "UPDATE dpjax_budgets SET spent_epsilon = ?, spent_delta = ? "
                     "WHERE name = ?", (spent[0], spent[1], name))

    def set_neighbouring(self, cursor: Any, name: str, neighbouring: str) -> None:
        self.execute(cursor, "UPDATE dpjax_budgets SET neighbouring = ? WHERE name = ?",
                     (neighbouring, name))


class SQLiteStore(SQLStore):
    """An SQLite file (or ``":memory:"``, one accountant's private database)."""

    def __init__(self, path: str, read_only: bool = False) -> None:
        super().__init__(path)
        self.path = self.target = path if path == ":memory:" else os.path.abspath(path)
        self.read_only = read_only

    @property
    def memory(self) -> bool:
        return self.path == ":memory:"

    @property
    def exists(self) -> bool:
        return not self.memory and os.path.exists(self.path)

    @property
    def shared(self) -> bool:
        return not self.memory

    def connect(self) -> Any:
        if not self.memory:
            folder = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(folder):
                raise BudgetStoreError(f"store {self.where!r}: no folder {folder!r}")
        try:
            if self.read_only:    # inspection: a store the user may read but not write
                connection = sqlite3.connect(f"{Path(self.path).as_uri()}?mode=ro", uri=True,
                                             timeout=BUSY_TIMEOUT, isolation_level=None,
                                             check_same_thread=False)
                connection.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
                return connection
            connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None,
                                         check_same_thread=False)
            if not self.memory:
                mode = connection.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise BudgetStoreError(f"store {self.where!r} cannot use SQLite's WAL "
                                           f"journal (got {mode!r})")
                connection.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as error:
            raise (self.translate(error) or error) from error
        return connection

    def begin(self, cursor: Any, write: bool) -> None:
        cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def usable(self, connection: Any) -> bool:
        return not connection.in_transaction

    def tables(self, cursor: Any) -> set[str]:
        found = self.execute(cursor, "SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row[0] for row in found.fetchall()} - {"sqlite_sequence"}

    def translate(self, error: Exception) -> Exception | None:
        if isinstance(error, BudgetStoreError):
            return error
        if not isinstance(error, sqlite3.Error):
            return None
        text = str(error)
        if isinstance(error, sqlite3.DatabaseError) and ("not a database" in text
                                                        or "malformed" in text):
            return BudgetStoreError(f"store {self.where!r} is not a readable SQLite database "
                                    f"({text}): a corrupt file, or another kind of file")
        if "readonly" in text or "unable to open" in text or "read-only" in text:
            return BudgetStoreError(f"store {self.where!r} cannot be written ({text}): a "
                                    "budget store needs a writable file in a writable folder "
                                    "(SQLite adds its -wal and -shm files beside it)")
        if "no such column" in text or "no such table" in text:
            return BudgetStoreError(f"store {self.where!r} has another layout than a dpjax "
                                    f"budget store of version {VERSION} ({text})")
        if "locked" in text or "busy" in text:
            return BudgetStoreError(f"store {self.where!r} stayed locked by another process "
                                    f"for {BUSY_TIMEOUT:g} s ({text})")
        return None


class PostgresStore(SQLStore):
    """A PostgreSQL database (``psycopg``, version 3)."""

    placeholder = "%s"
    id_column = "BIGSERIAL PRIMARY KEY"
    real = "DOUBLE PRECISION"
    returning = " RETURNING id"
    elsewhere = (": use a database of its own, or a schema of its own "
                 "(postgresql://.../db?options=-csearch_path%3Ddpjax after CREATE SCHEMA dpjax)")

    def __init__(self, url: str) -> None:
        super().__init__(describe(url))
        self.url = self.target = url

    def connect(self) -> Any:
        try:
            import psycopg
        except ImportError as error:
            raise BudgetStoreError(f"store {self.where!r} is a PostgreSQL URL: install the "
                                   'driver with pip install "dpjax[postgres]" '
                                   "(psycopg)") from error
        try:
            return psycopg.connect(self.url, autocommit=True)
        except psycopg.Error as error:
            raise BudgetStoreError(f"store {self.where!r}: cannot connect ({error})") from error

    def begin(self, cursor: Any, write: bool) -> None:
        if not write:      # one snapshot, no lock
            cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            return
        # read committed whatever the server's default: each read after the lock sees every
        # transaction committed before it (a snapshot taken while waiting would not)
        cursor.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        # the store's lock, taken before any read (the layout's creation included): every
        # write on the store's budgets runs in one serial order, as BEGIN IMMEDIATE's
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext('dpjax-budget-store'))")

    def usable(self, connection: Any) -> bool:
        from psycopg.pq import TransactionStatus

        return (not connection.closed and not connection.broken
                and connection.info.transaction_status == TransactionStatus.IDLE)

    def tables(self, cursor: Any) -> set[str]:
        found = self.execute(cursor, "SELECT tablename FROM pg_tables WHERE schemaname = "
                             "current_schema()")
        return {row[0] for row in found.fetchall()}

    def translate(self, error: Exception) -> Exception | None:
        if isinstance(error, BudgetStoreError):
            return error
        try:
            import psycopg
        except ImportError:
            return None
        if isinstance(error, (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedTable)):
            return BudgetStoreError(f"store {self.where!r} has another layout than a dpjax "
                                    f"budget store of version {VERSION} ({error})")
        if isinstance(error, psycopg.errors.InsufficientPrivilege):
            return BudgetStoreError(f"store {self.where!r} cannot be written ({error})")
        if isinstance(error, psycopg.OperationalError):
            return BudgetStoreError(f"store {self.where!r}: {error}")
        return None


def open_store(store: Any, read_only: bool = False) -> SQLStore:
    """The store a user named: ``None`` (this accountant's memory), a PostgreSQL URL, an
    ``sqlite:///`` URL or a path (made absolute: a worker process in another folder opens
    the same file); ``read_only``: an SQLite file opened for reading only."""
    if store is None:
        return SQLiteStore(":memory:")
    if not isinstance(store, (str, os.PathLike)):
        raise ValueError(f"store must be a path or a URL (sqlite:///... or postgresql://...), "
                         f"got a {type(store).__name__}")
    text = os.fspath(store)
    if text.startswith(POSTGRES_SCHEMES):
        return PostgresStore(text)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///"):]
    if not text or text == ":memory:" or "://" in text:
        raise ValueError(f"store must be a file path, sqlite:///path or postgresql://..., "
                         f"got {text!r}")
    if os.path.isdir(text):
        raise BudgetStoreError(f"store {text!r} is a folder: name a file in it")
    return SQLiteStore(text, read_only)


def same_number(a: float, b: float) -> bool:
    """Totals as stored (``inf`` included) equal the asked ones."""
    return a == b or (math.isinf(a) and math.isinf(b)) or math.isclose(a, b, rel_tol=1e-12)
