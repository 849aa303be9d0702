"""Shared pieces of the dpjax speed benchmarks (``benchmarks/bench_*.py``).

Every benchmark reports compile time and warm run time separately, on the machine it ran on,
beside peer libraries fitted in the same run. The pieces, smallest first:

* progress and timing: :func:`log` (stderr, seconds since start), :func:`timed`,
  :func:`median`, and :func:`interleaved_seconds` (warm seconds of compiled programs, timed
  round by round so that load changes hit them alike);
* formatting: :func:`fmt_s`, :func:`fmt_acc`, :func:`md_table` (a padded pipe table that also
  reads well in a terminal);
* the machine: :func:`device_slug`, :func:`version_of`, :func:`cpu_cores`,
  :func:`load_average`, and :func:`environment_rows` (the common lines of a report's
  environment table);
* models and peers: :class:`Row` (one line of a model table, :data:`MODEL_HEADERS`),
  :class:`Peer` and :func:`bench_peers` (scikit-learn-style estimators timed alike),
  :func:`forest_peers` (diffprivlib's DP random forest and scikit-learn's forests), and
  :func:`import_diffprivlib` (with its scikit-learn >= 1.9 shim);
* the public API, timed: :func:`bench_sweep` (one ``dpjax.sweep`` over epsilons x seeds) and
  :func:`bench_loop` (the same models as sequential ``dpjax.fit`` calls), :func:`same_models`
  and :func:`same_tree`;
* results: :func:`write_report` (``benchmarks/results/<name>_<device>.md``).

The data directory (:func:`data_dir`) and the results writer (``save_results``) are the
experiments' own (``experiments/harness.py``), imported rather than copied.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import platform
import re
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import jax
import numpy as np

import dpjax

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # experiments/ is a plain folder beside the package
    sys.path.insert(0, str(REPO))
from experiments.harness import data_dir as data_dir  # noqa: E402  (re-exported)
from experiments.harness import save_results  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
T = TypeVar("T")
_START = time.perf_counter()


# --------------------------------------------------------------------------------------------
# progress and timing
# --------------------------------------------------------------------------------------------


def elapsed() -> float:
    """Seconds since the harness was imported (the benchmark's start)."""
    return time.perf_counter() - _START


def log(message: str) -> None:
    """Progress to stderr (the report itself goes to stdout)."""
    print(f"[{elapsed():7.1f}s] {message}", file=sys.stderr, flush=True)


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()`` and its wall-clock seconds."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def interleaved_seconds(
    programs: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]], rounds: int,
    outputs: dict[str, Any] | None = None,
) -> dict[str, float]:
    """Median warm seconds of each ``jax.jit(fn)(*args)``.

    Every program is compiled ahead and run once (its result goes to ``outputs``, if given);
    then the timed calls are interleaved round by round, so that a change in machine load hits
    all programs alike and ratios stay meaningful.
    """
    compiled = {}
    for name, (fn, args) in programs.items():
        log(f"  compiling {name}")
        compiled[name] = (jax.jit(fn).lower(*args).compile(), args)
        result = jax.block_until_ready(compiled[name][0](*args))
        if outputs is not None:
            outputs[name] = result
    times: dict[str, list[float]] = {name: [] for name in programs}
    for _ in range(rounds):
        for name, (executable, args) in compiled.items():
            _, seconds = timed(lambda e=executable, a=args: jax.block_until_ready(e(*a)))
            times[name].append(seconds)
    return {name: median(values) for name, values in times.items()}


# --------------------------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------------------------


def fmt_s(seconds: float | None, digits: int = 3) -> str:
    return "-" if seconds is None else f"{seconds:.{digits}f}"


def fmt_acc(values: Sequence[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.4f}"
    return f"{np.mean(values):.4f} ± {np.std(values):.4f}"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A pipe table of ready-made string cells, padded so it also reads well in a terminal
    (``experiments/harness.py``'s ``markdown_table`` renders a DataFrame, unpadded)."""
    cells = [list(headers), *[list(r) for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), rule, *[line(r) for r in cells[1:]]])


# --------------------------------------------------------------------------------------------
# the machine
# --------------------------------------------------------------------------------------------


def device_slug() -> str:
    """``cpu``, or e.g. ``gpu-nvidia-h100-80gb-hbm3``: names the results file."""
    device = jax.devices()[0]
    kind = re.sub(r"[^a-z0-9]+", "-", str(device.device_kind).lower()).strip("-")
    return device.platform if kind in ("", device.platform) else f"{device.platform}-{kind}"


def version_of(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def cpu_cores() -> str:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return f"{os.cpu_count()} (usable by this process: {usable})"


def load_average() -> str:
    try:
        return ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def environment_rows(load_at_start: str) -> list[tuple[str, str]]:
    """The machine and software lines of a report's environment table (the load average at
    the start, :func:`load_average`, and now)."""
    device = jax.devices()[0]
    return [
        ("jax.devices()", str(jax.devices())),
        ("device kind", f"{device.platform} / {device.device_kind}"),
        ("jax / jaxlib", f"{jax.__version__} / {version_of('jaxlib')}"),
        ("dpjax", dpjax.__version__),
        ("numpy / pandas / scikit-learn / diffprivlib",
         f"{np.__version__} / {version_of('pandas')} / {version_of('scikit-learn')} / "
         f"{version_of('diffprivlib')}"),
        ("python / platform", f"{platform.python_version()} / {platform.platform()}"),
        ("CPU cores", cpu_cores()),
        ("load average (1/5/15 min) at start / end", f"{load_at_start} / {load_average()}"),
    ]


def write_report(name: str, report: str) -> Path:
    """``benchmarks/results/<name>_<device>.md`` (through the experiments' ``save_results``)."""
    (path,) = save_results(f"{name}_{device_slug()}", markdown=report, directory=RESULTS)
    log(f"wrote {path}")
    return path


# --------------------------------------------------------------------------------------------
# models and peers
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Row:
    """One line of the model table."""

    name: str
    epsilon: str
    compile_s: float | None
    first_call_s: float | None
    fit_wall_s: float | None
    fit_device_s: float | None
    predict_s: float | None
    accuracy: list[float]
    privacy: str

    def cells(self) -> list[str]:
        return [self.name, self.epsilon, fmt_s(self.compile_s, 2), fmt_s(self.first_call_s, 2),
                fmt_s(self.fit_wall_s), fmt_s(self.fit_device_s), fmt_s(self.predict_s),
                fmt_acc(self.accuracy), self.privacy]


MODEL_HEADERS = ("model", "epsilon", "compile s", "1st call s", "warm fit s (wall)",
                 "of which compiled call s", "predict s (test)", "test accuracy",
                 "privacy spent")


@dataclasses.dataclass(frozen=True)
class Peer:
    """A peer model: ``make(seed)`` builds an unfitted scikit-learn-style estimator,
    ``privacy(fitted)`` says what it spent. ``make=None``: skipped (a row saying so)."""

    name: str
    epsilon: str
    make: Callable[[int], Any] | None
    privacy: Callable[[Any], str] = lambda model: "none (non-private)"


def import_diffprivlib() -> tuple[Any, str]:
    """``(diffprivlib module or None, note)``.

    diffprivlib 0.6.6 (the newest release) imports ``DOUBLE`` and ``DTYPE`` from
    ``sklearn.tree._tree``, which scikit-learn 1.9 removed. When they are missing we restore them
    with their former values (``np.float64`` and ``np.float32``) and say so in the report.
    """
    note = ""
    try:
        import sklearn.tree._tree as sk_tree
    except ImportError as error:
        return None, f"scikit-learn missing ({error})"
    shimmed = [name for name in ("DOUBLE", "DTYPE") if not hasattr(sk_tree, name)]
    if version_of("diffprivlib") == "not installed":
        return None, "diffprivlib not installed (pip install diffprivlib)"
    if shimmed:
        sk_tree.DOUBLE = getattr(sk_tree, "DOUBLE", np.float64)
        sk_tree.DTYPE = getattr(sk_tree, "DTYPE", np.float32)
        note = (f"shim: scikit-learn {version_of('scikit-learn')} lacks sklearn.tree._tree."
                f"{'/'.join(shimmed)}, which diffprivlib {version_of('diffprivlib')} imports; "
                "restored as np.float64/np.float32 (their values up to scikit-learn 1.8)")
    try:
        module = importlib.import_module("diffprivlib")
        importlib.import_module("diffprivlib.models")
    except Exception as error:  # any import failure means "skip this peer"
        return None, (f"diffprivlib installed but cannot be imported: "
                      f"{type(error).__name__}: {error}")
    return module, note


def bench_sklearn_like(peer: Peer, Xn: np.ndarray, y: np.ndarray, Xtn: np.ndarray,
                       yt: np.ndarray, repeats: int) -> Row:
    """``repeats`` fits (seeds ``0..repeats-1``), each scored on the test set."""
    assert peer.make is not None
    walls, predicts, accs = [], [], []
    model = None
    for r in range(repeats):
        model = peer.make(r)
        _, wall = timed(lambda model=model: model.fit(Xn, y))
        acc, predict = timed(lambda model=model: float(model.score(Xtn, yt)))
        walls.append(wall)
        predicts.append(predict)
        accs.append(acc)
    log(f"  {peer.name}: fit {median(walls):.3f}s, acc {np.mean(accs):.4f}")
    return Row(peer.name, peer.epsilon, None, None, median(walls), None, median(predicts), accs,
               peer.privacy(model))


def bench_peers(peers: Sequence[Peer], Xn: np.ndarray, y: np.ndarray, Xtn: np.ndarray,
                yt: np.ndarray, repeats: int) -> tuple[list[Row], list[str]]:
    """A :class:`Row` per peer (warnings silenced); a peer that fails becomes a note, never an
    error of the benchmark."""
    rows: list[Row] = []
    notes: list[str] = []
    for peer in peers:
        if peer.make is None:
            rows.append(Row(peer.name, peer.epsilon, None, None, None, None, None, [],
                            "skipped (see notes)"))
            continue
        log(f"peer: {peer.name}")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows.append(bench_sklearn_like(peer, Xn, y, Xtn, yt, repeats))
        except Exception as error:  # a broken peer must not stop the benchmark
            notes.append(f"{peer.name} fit failed: {type(error).__name__}: {error}")
    return rows, notes


def forest_peers(n_features: int, classes: Sequence[Any], n_trees: int, depth: int,
                 epsilon: float, n_jobs: int) -> tuple[list[Peer], list[str]]:
    """IBM diffprivlib's ``RandomForestClassifier`` (``epsilon``, bounds ``[0, 1]`` per feature
    and ``classes`` given, a fresh accountant per fit) and scikit-learn's non-private
    ``RandomForestClassifier`` and ``ExtraTreesClassifier``; missing ones are notes."""
    peers: list[Peer] = []
    notes: list[str] = []
    diffprivlib, note = import_diffprivlib()
    if note:
        notes.append(f"diffprivlib: {note}")
    if diffprivlib is not None:
        from diffprivlib.accountant import BudgetAccountant
        from diffprivlib.models import RandomForestClassifier as DPRandomForest

        def make_dp(seed: int) -> Any:
            return DPRandomForest(n_estimators=n_trees, max_depth=depth, epsilon=epsilon,
                                  bounds=(np.zeros(n_features), np.ones(n_features)),
                                  classes=list(classes), random_state=seed, n_jobs=n_jobs,
                                  accountant=BudgetAccountant())

        def dp_privacy(model: Any) -> str:
            spent_eps, spent_delta = model.accountant.total()
            return f"ε={spent_eps:g}, δ={spent_delta:g}"

        peers.append(Peer(f"diffprivlib {version_of('diffprivlib')} RandomForestClassifier",
                          f"{epsilon:g}", make_dp, dp_privacy))
    else:
        peers.append(Peer("diffprivlib RandomForestClassifier", f"{epsilon:g}", None))
    try:
        from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
    except ImportError as error:
        notes.append(f"scikit-learn peers skipped: {error}")
        return peers, notes
    for cls in (RandomForestClassifier, ExtraTreesClassifier):
        peers.append(Peer(
            f"scikit-learn {version_of('scikit-learn')} {cls.__name__}", "- (non-private)",
            lambda seed, cls=cls: cls(n_estimators=n_trees, max_depth=depth,
                                      random_state=seed, n_jobs=n_jobs)))
    return peers, notes


# --------------------------------------------------------------------------------------------
# dpjax.sweep against a loop of dpjax.fit calls
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class SweepResult:
    compile_s: float
    first_call_s: float
    warm_wall: list[float]
    warm_run: list[float]
    sweep: dpjax.Sweep


def bench_sweep(
    X: Any, y: np.ndarray, fit_kwargs: dict[str, Any], epsilons: np.ndarray, seeds: int,
    repeats: int,
) -> SweepResult:
    """A first (compiling) ``dpjax.sweep`` over ``epsilons`` x ``seeds``, then ``repeats``
    warm ones."""
    log(f"dpjax.sweep {len(epsilons)} eps x {seeds} seeds: first call (compiles)")
    first, first_wall = timed(lambda: dpjax.sweep(X, y, epsilon=epsilons, seeds=seeds,
                                                  **fit_kwargs))
    walls, runs = [], []
    for _ in range(repeats):
        sweep, wall = timed(lambda: dpjax.sweep(X, y, epsilon=epsilons, seeds=seeds,
                                                **fit_kwargs))
        walls.append(wall)
        runs.append(sweep.timings.run_s)
    log(f"  compile {first.timings.compile_s:.2f}s, warm {median(walls):.3f}s")
    return SweepResult(first.timings.compile_s, first_wall, walls, runs, first)


@dataclasses.dataclass
class LoopResult:
    totals: list[float]
    per_fit_wall: list[float]
    per_fit_run: list[float]
    recompiled: int
    models: list[dpjax.Model]


def bench_loop(
    X: Any, y: np.ndarray, fit_kwargs: dict[str, Any], epsilons: np.ndarray, seeds: int,
    repeats: int,
) -> LoopResult:
    """``repeats`` passes of ``len(epsilons) * seeds`` sequential public ``dpjax.fit`` calls
    (epsilon-major, keys ``0..seeds-1``: the order of a sweep's models)."""
    totals, walls, runs, recompiled = [], [], [], 0
    models: list[dpjax.Model] = []
    for rep in range(repeats):
        log(f"loop of {len(epsilons) * seeds} dpjax.fit calls, pass {rep + 1}/{repeats}")
        models = []
        start = time.perf_counter()
        for eps in epsilons:
            for seed in range(seeds):
                model, wall = timed(lambda eps=eps, seed=seed: dpjax.fit(
                    X, y, epsilon=float(eps), key=seed, **fit_kwargs))
                walls.append(wall)
                runs.append(model.timings.run_s)
                recompiled += model.timings.compile_s > 0
                models.append(model)
        totals.append(time.perf_counter() - start)
        log(f"  total {totals[-1]:.2f}s")
    return LoopResult(totals, walls, runs, recompiled, models)


def same_models(sweep: dpjax.Sweep, models: list[dpjax.Model], seeds: int) -> str:
    """Whether the loop's models equal the sweep's (same keys and epsilons): integer arrays
    (tree structures) exactly, float arrays (leaf values) up to the largest difference."""
    worst, structure_equal = 0.0, True
    for index, model in enumerate(models):
        other = sweep.model(*divmod(index, seeds)).params
        for mine, theirs in zip(jax.tree.leaves(model.params), jax.tree.leaves(other),
                                strict=True):
            mine, theirs = np.asarray(mine), np.asarray(theirs)
            if np.issubdtype(mine.dtype, np.inexact):
                worst = max(worst, float(np.max(np.abs(mine - theirs), initial=0.0)))
            else:
                structure_equal &= bool(np.array_equal(mine, theirs))
    return (f"identical tree structures: {structure_equal}; "
            f"max |leaf value difference| = {worst:.2g}")


def same_tree(a: Any, b: Any) -> bool:
    """Whether two pytrees (e.g. fitted params) are equal, leaf by leaf and bit for bit."""
    return all(np.array_equal(u, v) for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b),
                                                      strict=True))
