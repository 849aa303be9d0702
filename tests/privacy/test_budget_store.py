"""A stored ``dpjax.BudgetAccountant`` (issue 53): a budget that outlives the process, shared
by concurrent processes (SQLite and PostgreSQL), crash-safe, with clear errors for bad stores."""

from __future__ import annotations

import copy
import math
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import dpjax
from dpjax.__main__ import main as cli
from dpjax.privacy import BudgetAccountant, BudgetExceededError, LedgerEntry, PrivacyLedger
from dpjax.privacy.budget_store import BudgetStoreError

SMALL = dict(method="random_trees", n_trees=2, depth=2)
WORKER = Path(__file__).with_name("budget_worker.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def postgres():
    """A PostgreSQL server of the embedded ``pgserver`` package: its URL, or the test is skipped
    with the reason it cannot start."""
    pgserver = pytest.importorskip("pgserver", reason="pgserver (an embedded PostgreSQL) is "
                                   "not installed")
    pytest.importorskip("psycopg", reason="psycopg (the PostgreSQL driver) is not installed")
    folder = tempfile.mkdtemp(prefix="dpjax-pg-")
    try:
        server = pgserver.get_server(folder, cleanup_mode="stop")
    except Exception as error:   # no server on this machine: say why
        pytest.skip(f"the embedded PostgreSQL server cannot start here: {error}")
    yield server.get_uri()
    server.cleanup()


def pure(epsilon: float) -> PrivacyLedger:
    return PrivacyLedger((LedgerEntry("counts", "discrete Laplace", epsilon),),
                         requested_epsilon=epsilon)


def test_a_stored_budget_is_every_opening_s_and_outlives_its_accountant(tmp_path, data):
    X, y = data
    path = tmp_path / "team.db"
    first = BudgetAccountant(2.0, store=path, tag="alice")
    model = dpjax.fit(X, y, epsilon=0.5, bounds=(0, 1), key=0, accountant=first, **SMALL)
    sweep = dpjax.sweep(X, y, epsilon=[0.1, 0.2], seeds=2, bounds=(0, 1), accountant=first,
                        **SMALL)
    del first
    again = BudgetAccountant(store=path)             # the stored terms, every spend
    assert (again.epsilon, again.delta, again.composition, again.neighbouring) == (
        2.0, 0.0, "basic", "add_remove")
    spends = again.spends
    assert len(spends) == 5 and again.reserved == ()
    assert spends[0].ledger == model.privacy and spends[0].tag == "alice"
    assert spends[0].method == "random_trees" and spends[0].time.endswith("+00:00")
    assert [s.ledger for s in spends[1:]] == [ledger for row in sweep.model_ledgers
                                              for ledger in row]
    assert again.total() == (pytest.approx(math.fsum(s.ledger.epsilon for s in spends)), 0.0)
    # one account: a copy is itself; a pickle (a search's worker process) reopens the store
    assert copy.deepcopy(again) is again
    clone = pickle.loads(pickle.dumps(again))
    clone.spend(pure(0.3), "from a worker")
    assert again.spends[-1].label == "from a worker" and again.spends[-1].tag == again.tag
    assert again.total()[0] == pytest.approx(spends_total(again))
    # a path given as sqlite:/// is the same store
    assert len(BudgetAccountant(store=f"sqlite:///{path}").spends) == 6


def spends_total(accountant: BudgetAccountant) -> float:
    return math.fsum(s.ledger.epsilon for s in accountant.spends)


def test_a_store_holds_named_budgets_whose_terms_are_fixed(tmp_path):
    path = tmp_path / "budgets.db"
    BudgetAccountant(3.0, 1e-6, composition="zcdp", store=path, name="census")
    BudgetAccountant(1.0, store=path, name="claims", neighbouring="replace_one")
    assert BudgetAccountant.budgets(path) == ["census", "claims"]
    BudgetAccountant(3.0, 1e-6, composition="zcdp", store=path, name="census")   # the same
    for asked, wrong in [(dict(epsilon=4.0), "epsilon 4.0"), (dict(delta=1e-5), "delta"),
                         (dict(composition="basic"), "composition"),
                         (dict(neighbouring="replace_one"), "neighbouring")]:
        with pytest.raises(BudgetStoreError, match=f"holds the budget 'census'.*{wrong}"):
            BudgetAccountant(store=path, name="census", **asked)
    with pytest.raises(BudgetStoreError, match="no budget named 'other': give epsilon"):
        BudgetAccountant(store=path, name="other")
    with pytest.raises(BudgetStoreError, match="no budget store at"):
        BudgetAccountant(store=tmp_path / "absent.db")
    assert not (tmp_path / "absent.db").exists()
    claims = BudgetAccountant(store=path, name="claims")
    with pytest.raises(ValueError, match="one neighbouring relation per accountant"):
        claims.spend(pure(0.1))                      # an add/remove fit on a replace-one budget


def test_bad_stores_get_clear_errors(tmp_path):
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(os.urandom(4096))
    with pytest.raises(BudgetStoreError, match="corrupt.db.*not a readable SQLite database"):
        BudgetAccountant(1.0, store=corrupt)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE patients (id INTEGER)")
    with pytest.raises(BudgetStoreError, match="other tables \\(patients\\), not a dpjax"):
        BudgetAccountant(1.0, store=other)
    broken = tmp_path / "broken.db"                  # a store whose layout was altered
    BudgetAccountant(1.0, store=broken)
    with sqlite3.connect(broken) as connection:
        connection.execute("ALTER TABLE dpjax_spends DROP COLUMN request")
    with pytest.raises(BudgetStoreError, match="another layout"):
        BudgetAccountant(store=broken).spend(pure(0.1))
    with pytest.raises(BudgetStoreError, match="cannot be written"):   # a folder nobody writes
        BudgetAccountant(1.0, store="/proc/dpjax-budget.db")
    with pytest.raises(BudgetStoreError, match="is a folder"):
        BudgetAccountant(1.0, store=tmp_path)
    with pytest.raises(ValueError, match="store must be a path or a URL"):
        BudgetAccountant(1.0, store=3)
    with pytest.raises(BudgetStoreError, match="no folder"):
        BudgetAccountant(1.0, store=tmp_path / "missing" / "budget.db")
    if os.geteuid() != 0:                            # root writes whatever the mode says
        readonly = tmp_path / "readonly.db"
        BudgetAccountant(1.0, store=readonly)
        readonly.chmod(0o444)
        with pytest.raises(BudgetStoreError, match="cannot be written"):
            BudgetAccountant(store=readonly).spend(pure(0.1))


def test_a_reservation_counts_at_its_request_until_it_closes_or_fails(tmp_path, data):
    X, y = data
    path = tmp_path / "budget.db"
    accountant = BudgetAccountant(1.0, store=path)
    reservation = accountant.reserve(0.6, label="a long fit", method="boosted")
    other = BudgetAccountant(store=path)             # another process's view
    assert other.reserved[0].label == "a long fit" and other.reserved[0].epsilon == 0.6
    assert other.remaining() == (pytest.approx(0.4), 0.0) and other.total() == (0.0, 0.0)
    with pytest.raises(BudgetExceededError, match="fits in progress reserve \\(0.6"):
        dpjax.fit(X, y, epsilon=0.5, bounds=(0, 1), accountant=other, **SMALL)
    reservation.commit([(pure(0.55), "the long fit")])
    assert accountant.reserved == () and accountant.total() == (0.55, 0.0)
    # a fit that fails gives its reservation back; so does a cancelled one
    with pytest.raises(ValueError, match="NaN"):
        dpjax.fit(X * np.nan, y, epsilon=0.4, bounds=(0, 1), accountant=accountant, **SMALL)
    accountant.reserve(0.3).cancel()
    assert accountant.reserved == () and len(accountant.spends) == 1
    # a reservation whose process died stays counted (its noise may have been drawn)
    accountant.reserve(0.2, label="died")
    reopened = BudgetAccountant(store=path)
    assert [r.label for r in reopened.reserved] == ["died"]
    assert reopened.remaining()[0] == pytest.approx(0.25)
    assert "died (reserved)" in str(reopened)


def test_budget_show_lists_every_spend_and_reservation(tmp_path, data, capsys):
    X, y = data
    path = tmp_path / "budget.db"
    accountant = BudgetAccountant(2.0, store=path, name="study", tag="job-17")
    dpjax.fit(X, y, epsilon=0.5, bounds=(0, 1), key=0, accountant=accountant, **SMALL)
    accountant.reserve(0.25, label="in flight")
    cli(["budget", "show", str(path), "--ledgers"])
    out = capsys.readouterr().out
    assert "budget 'study'" in out and "(epsilon, delta) = (2, 0)" in out
    assert "random_trees at epsilon 0.5" in out and "job-17" in out
    assert "in flight (reserved" in out and "Privacy ledger" in out
    assert "remaining (1.25" in out
    with pytest.raises(SystemExit) as exit_:
        cli(["budget", "show", str(tmp_path / "absent.db")])
    assert exit_.value.code == 2
    assert "no budget store at" in capsys.readouterr().err


def workers(store: str, name: str, epsilon: float, count: int,
            folder: Path) -> list[tuple[subprocess.Popen, Path]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
    started = []
    for index in range(count):
        log = folder / f"worker{index}.log"
        started.append((subprocess.Popen(
            [sys.executable, str(WORKER), store, name, f"worker {index}", str(epsilon),
             str(log)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), log))
    return started


def returned(log: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if line.startswith("returned"))


def check_load(store: str, tmp_path: Path) -> None:
    """8 processes spend ε = 0.25 per fit from one budget of ε = 3 until refused."""
    total, each = 3.0, 0.25
    BudgetAccountant(total, store=store, name="load")
    running = workers(store, "load", each, 8, tmp_path)
    for process, _ in running:
        assert process.wait(timeout=600) == 0, process.stderr.read().decode()[-2000:]
    accountant = BudgetAccountant(store=store, name="load")
    spends = accountant.spends
    assert accountant.total()[0] <= total                       # never past the budget
    assert math.fsum(s.ledger.epsilon for s in spends) <= total
    assert accountant.remaining()[0] < each                     # used up within one spend
    assert accountant.reserved == ()
    for index, (_, log) in enumerate(running):                  # every returned model recorded
        assert log.read_text().splitlines()[-1] == "refused"
        assert returned(log) == sum(1 for s in spends if s.tag == f"worker {index}")
    assert len({s.tag for s in spends}) > 1                     # they did run concurrently


@pytest.mark.slow
def test_eight_processes_never_pass_a_stored_sqlite_budget(tmp_path):
    check_load(str(tmp_path / "load.db"), tmp_path)


@pytest.mark.slow
def test_eight_processes_never_pass_a_postgres_budget(tmp_path, postgres):
    """On a database whose default isolation is repeatable read (a snapshot taken while
    waiting for the lock would read a stale total): the store's transactions set their own."""
    import psycopg

    with psycopg.connect(postgres, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS dpjax_load")
        admin.execute("CREATE DATABASE dpjax_load")
        admin.execute("ALTER DATABASE dpjax_load SET default_transaction_isolation = "
                      "'repeatable read'")
    check_load(postgres.replace("/postgres?", "/dpjax_load?"), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_process_killed_mid_run_loses_no_recorded_spend(tmp_path, kind, request):
    """SIGKILL while a worker spends: the store reopens, holds every returned model's spend
    (a spend committed just before the kill may have no log line yet) and stays usable."""
    store = (str(tmp_path / "fault.db") if kind == "sqlite"
             else request.getfixturevalue("postgres"))
    name = f"fault-{kind}"
    BudgetAccountant(100.0, store=store, name=name)
    (process, log), = workers(store, name, 0.01, 1, tmp_path)
    deadline = time.monotonic() + 300
    while (not log.exists() or returned(log) < 3) and time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode()[-2000:]
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    accountant = BudgetAccountant(store=store, name=name)
    if kind == "sqlite":
        with sqlite3.connect(store) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    recorded = [s for s in accountant.spends if s.tag == "worker 0"]
    assert returned(log) >= 3 and len(recorded) >= returned(log)
    assert len(recorded) + len(accountant.reserved) <= returned(log) + 1
    assert accountant.total()[0] == pytest.approx(math.fsum(s.ledger.epsilon
                                                            for s in recorded))
    accountant.spend(pure(0.5), "after the crash")              # the store is still usable
    assert accountant.spends[-1].label == "after the crash"


@pytest.mark.slow
def test_a_grid_search_s_worker_processes_spend_from_one_stored_budget(tmp_path, data):
    """``n_jobs=2``: each worker process unpickles the stored accountant as its store, so the
    search's 11 fits at ε = 0.5 spend from one budget of ε = 4 and the 9th is refused (joblib
    may stop the other worker then: its fit's reservation stays counted)."""
    from sklearn.model_selection import GridSearchCV

    from dpjax.sklearn import DPRandomTreesClassifier

    X, y = data
    path = tmp_path / "search.db"
    accountant = BudgetAccountant(4.0, store=path)
    search = GridSearchCV(
        DPRandomTreesClassifier(epsilon=0.5, n_trees=3, bounds=(0, 1), random_state=0,
                                accountant=accountant),
        {"depth": [2, 3]}, cv=5, error_score="raise", n_jobs=2)
    with pytest.raises(BudgetExceededError):
        search.fit(X, y)
    spends, reserved = BudgetAccountant(store=path).spends, accountant.reserved
    assert len(spends) + len(reserved) == 8 and len(spends) >= 7
    assert len({s.tag for s in spends}) == 1                    # the pickled tag
    assert accountant.total()[0] <= 4.0 and accountant.remaining()[0] < 0.5


@pytest.mark.parametrize(("composition", "delta"), [("basic", 1e-5), ("advanced", 1e-5),
                                                    ("zcdp", 1e-5)])
def test_stored_spends_compose_by_the_in_memory_routes(tmp_path, composition, delta):
    """The same spends give the same totals in memory and in a store, reopened after each."""
    ledgers = [pure(0.05)] * 20 + [PrivacyLedger(
        (LedgerEntry("sums", "Gaussian", 0.2, 1e-7, count=3, rho=0.004),),
        requested_epsilon=0.6, requested_delta=3e-7)] * 3
    memory = BudgetAccountant(10.0, delta, composition=composition)
    path = tmp_path / "routes.db"
    BudgetAccountant(10.0, delta, composition=composition, store=path)
    for ledger in ledgers:
        memory.spend(ledger)
        BudgetAccountant(store=path).spend(ledger)
    stored = BudgetAccountant(store=path)
    assert stored.total() == memory.total()
    assert [s.ledger for s in stored.spends] == [s.ledger for s in memory.spends]
    if composition == "zcdp":      # many small pure spends: zCDP composes them better
        assert stored.total()[0] < math.fsum(ledger.epsilon for ledger in ledgers)


def test_concurrent_reservations_close_within_their_requests(tmp_path):
    """A zCDP budget with many closed spends: A (pure) and B (δ > 0) reserve, then each closes
    with a ledger of exactly its request; neither is refused (the reservations compose as
    their requests, not by basic composition on top of a route's total δ)."""
    accountant = BudgetAccountant(8.0, 1e-5, composition="zcdp", store=tmp_path / "z.db")
    for _ in range(100):
        accountant.spend(pure(0.1))
    first = accountant.reserve(0.3)
    second = accountant.reserve(0.1, 1e-8)
    first.commit([(pure(0.3), "A")])
    second.commit([(PrivacyLedger((LedgerEntry("sums", "Laplace", 0.1, 1e-8),),
                                  requested_epsilon=0.1, requested_delta=1e-8), "B")])
    assert [s.label for s in accountant.spends[-2:]] == ["A", "B"]
    assert accountant.reserved == () and accountant.total()[0] <= 8.0


def test_a_commit_past_the_budget_keeps_its_reservation(tmp_path):
    """A ledger beyond what its reservation's check allowed for is refused, and the
    reservation stays counted (the fit's noise was drawn)."""
    accountant = BudgetAccountant(1.0, store=tmp_path / "b.db")
    reservation = accountant.reserve(0.5)
    with pytest.raises(BudgetExceededError, match="stays counted"):
        reservation.commit([(pure(1.5), "too much")])
    assert accountant.spends == () and accountant.reserved[0].epsilon == 0.5


def test_a_failed_or_cancelled_fit_fixes_no_neighbouring_relation(data):
    X, y = data
    accountant = BudgetAccountant(10.0)
    with pytest.raises(ValueError, match="NaN"):
        dpjax.fit(X * np.nan, y, epsilon=1.0, bounds=(0, 1), neighbouring="replace_one",
                  accountant=accountant, **SMALL)
    accountant.reserve(1.0, neighbouring="replace_one").cancel()
    assert accountant.neighbouring is None
    dpjax.fit(X, y, epsilon=1.0, bounds=(0, 1), key=0, accountant=accountant, **SMALL)
    assert accountant.neighbouring == "add_remove"
    with pytest.raises(ValueError, match="one neighbouring relation"):
        accountant.reserve(1.0, neighbouring="replace_one")


def test_a_relative_store_path_is_the_same_file_after_a_chdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    accountant = BudgetAccountant(1.0, store="budget.db")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    pickle.loads(pickle.dumps(accountant)).spend(pure(0.25))
    accountant.spend(pure(0.25))
    assert accountant.total()[0] == 0.5 and not (tmp_path / "elsewhere" / "budget.db").exists()


def test_reopening_with_epsilon_compares_every_term_and_inspection_writes_nothing(tmp_path):
    path = tmp_path / "terms.db"
    BudgetAccountant(1.0, 1e-6, composition="zcdp", store=path)
    with pytest.raises(BudgetStoreError, match="delta 0.0 \\(stored: 1e-06\\)"):
        BudgetAccountant(1.0, store=path)            # delta left out: its default, 0
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    seen = BudgetAccountant(store=path, read_only=True)
    assert (seen.epsilon, seen.delta, seen.composition) == (1.0, 1e-6, "zcdp")
    assert seen.spends == () and BudgetAccountant.budgets(path) == ["default"]
    with pytest.raises(BudgetStoreError, match="cannot be written"):
        seen.spend(pure(0.1))
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()
            if p.name in before} == before
    with pytest.raises(BudgetStoreError, match="holds no budget named 'other'$"):
        BudgetAccountant(store=path, name="other", read_only=True)


def test_a_postgres_url_s_password_is_never_shown():
    from dpjax.privacy.budget_store import describe

    assert describe("postgresql://alice:s3cret@db.example/budgets?sslmode=require"
                    "&password=hunter2") == ("postgresql://alice@db.example/budgets?"
                                             "sslmode=require&password=%2A%2A%2A")
