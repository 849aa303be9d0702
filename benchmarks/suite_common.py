"""Shared pieces of the one-command suite (``python -m benchmarks``, see
``benchmarks/__main__.py``), on top of ``benchmarks/harness.py``:

* :class:`Settings` (sizes and repeats of a run: full or ``--quick``) and :class:`Section` (what a
  section hands back: its markdown, its CSV records and anything the plot needs);
* the a9a data (:func:`load_a9a`, :data:`A9A_FIT`: the declared bounds, classes and bins);
* :func:`synthetic` (uint8-valued float32 features, a noisy linear label) and
  :func:`memory_estimate` (bytes a synthetic fit is expected to hold, to skip sizes that cannot
  fit);
* :func:`run_child` (a task of ``benchmarks/suite_child.py`` in a fresh interpreter, with its own
  environment and a timeout: for cold compiles and per-size peak memory) and :func:`max_rss_mb`.

Only the suite imports this module; it imports ``jax`` / ``dpjax`` lazily where it can, so that
``benchmarks/__main__.py`` can set the compilation-cache environment first.
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TRAIN, TEST = "adult_a9a_train", "adult_a9a_test"
A9A_FEATURES = 123
A9A_FIT: dict[str, Any] = dict(bounds=([0] * A9A_FEATURES, [1] * A9A_FEATURES), classes=(0, 1),
                               n_bins=2)
"""The public a9a schema as dpjax takes it: 123 binary indicators in [0, 1], two bins each."""
SYNTHETIC_CODES = 10
"""Synthetic features take the integer values ``0..9`` (``n_bins=10`` codes them one-to-one)."""


@dataclasses.dataclass
class Settings:
    """Sizes and repeats of one run (``--quick`` shrinks every one of them)."""

    quick: bool
    max_rows: int
    data_dir: Path
    # 1. learners
    learner_repeats: int = 5
    learners: tuple[str, ...] | None = None   # the learners section's methods (None: all)
    peer_repeats: int = 3
    # 2. sweep
    sweep_epsilons: int = 10
    sweep_seeds: int = 10
    sweep_repeats: int = 2
    loop_repeats: int = 1
    # 3. histogram
    hist_rows: int = 1_000_000
    hist_features: int = 20
    hist_nodes: tuple[int, ...] = (1, 8, 32)
    hist_rounds: int = 7
    # 4. scale
    scale_rows: tuple[int, ...] = (10**3, 10**4, 10**5, 10**6, 10**7)
    scale_features: tuple[int, ...] = (20, 100)
    floor_rows: int = 1_000_000
    depth_rows: int = 100_000
    malpha_depths: tuple[int, ...] = (2, 4, 6, 8)
    forest_depths: tuple[int, ...] = (2, 5, 10)
    child_timeout_s: float = 600.0
    big_child_timeout_s: float = 900.0

    @classmethod
    def make(cls, quick: bool, max_rows: int, data_dir: Path) -> Settings:
        settings = cls(quick=quick, max_rows=max_rows, data_dir=data_dir)
        if quick:
            settings.learner_repeats, settings.peer_repeats = 2, 1
            settings.sweep_epsilons, settings.sweep_seeds = 3, 2
            settings.sweep_repeats, settings.loop_repeats = 1, 1
            settings.hist_rows, settings.hist_nodes, settings.hist_rounds = 100_000, (1, 8), 3
            settings.scale_rows, settings.scale_features = (10**3, 10**4), (20,)
            settings.floor_rows = settings.depth_rows = 10**4
            settings.malpha_depths, settings.forest_depths = (2,), (2, 5)
            settings.child_timeout_s = settings.big_child_timeout_s = 180.0
        return settings

    def warm_repeats(self, rows: int) -> int:
        """Warm fits per synthetic size: fewer where one fit takes long."""
        if self.quick:
            return 2
        return 5 if rows <= 10**5 else 3 if rows <= 10**6 else 1


@dataclasses.dataclass
class Section:
    """What a section hands back: markdown (its tables and notes), tidy CSV records (one dict
    per table row, ``section`` set) and anything else the report needs (``extra``)."""

    name: str
    markdown: str
    records: list[dict[str, Any]]
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


def load_a9a(directory: Path, test: bool = True) -> tuple[Any, ...]:
    """``(X, y)`` of a9a train, then ``(Xt, yt)`` of a9a test if ``test`` (DataFrames)."""
    import dpjax

    X, y = dpjax.load_dataset(TRAIN, directory)
    if not test:
        return X, y
    Xt, yt = dpjax.load_dataset(TEST, directory)
    return X, y, Xt, yt


def synthetic(m: int, n: int, seed: int = 0, chunk: int = 1_000_000,
              dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """``X`` ``[m, n]`` (float32, or ``dtype``) with integer values ``0..9`` and ``y`` int32
    ``[m]`` in {0, 1} from a noisy linear rule on the first (up to) 10 features (about 75%
    separable; the rule is drawn from ``seed``), generated chunk by chunk so that no int64 /
    float64 copy of the full table is ever made."""
    rng = np.random.default_rng(seed)
    X = np.empty((m, n), dtype)
    y = np.empty(m, np.int32)
    weights = rng.normal(size=min(n, 10)).astype(np.float32)
    noise = float(np.linalg.norm(weights)) * 2.0
    for start in range(0, m, chunk):
        stop = min(m, start + chunk)
        block = rng.integers(0, SYNTHETIC_CODES, (stop - start, n), dtype=np.uint8)
        X[start:stop] = block
        signal = (block[:, :len(weights)] - np.float32(4.5)) @ weights
        y[start:stop] = signal + rng.normal(0.0, noise, stop - start) > 0
    return X, y


def synthetic_codes(m: int, n: int, seed: int = 0) -> np.ndarray:
    """uint8 codes ``[m, n]`` in ``0..9`` (the histogram benchmark's and the floors' input)."""
    return np.random.default_rng(seed).integers(0, SYNTHETIC_CODES, (m, n), dtype=np.uint8)


# --------------------------------------------------------------------------------------------
# memory
# --------------------------------------------------------------------------------------------


def max_rss_mb() -> float:
    """Peak resident memory of this process so far, MB: ``VmHWM`` of ``/proc/self/status``
    (Linux), else ``ru_maxrss``.

    Not ``ru_maxrss`` first: Linux carries it across ``fork`` / ``exec``, so a child started by
    a large parent (this suite, after its a9a sections) reports at least the parent's resident
    size. ``VmHWM`` is the high-water mark of the process's own address space."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return ru_maxrss_mb()


def device_memory_mb() -> tuple[float | None, float | None]:
    """``(peak bytes in use, bytes the allocator may hold)`` of the first JAX device, in MB, from
    its allocator's ``memory_stats()`` (GPUs and TPUs keep them; ``(None, None)`` where the
    backend keeps none, as on CPU). The peak is the process's high-water mark so far."""
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    peak, limit = stats.get("peak_bytes_in_use"), stats.get("bytes_limit")
    return (None if peak is None else peak / 2**20, None if limit is None else limit / 2**20)


def ru_maxrss_mb() -> float:
    """``getrusage(RUSAGE_SELF).ru_maxrss`` in MB (kB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def available_bytes() -> float:
    """``MemAvailable`` of ``/proc/meminfo`` (else the physical memory)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


BASELINE_BYTES = 0.6 * 2**30
"""A fresh interpreter with jax, dpjax and pandas imported, roughly."""


def memory_estimate(method: str, params: dict[str, Any], m: int, n: int
                    ) -> tuple[float, str | None]:
    """``(bytes, refusal)``: what a child fitting ``method`` on :func:`synthetic` ``m x n``
    should peak at (the float32 table, the uint8 codes on the host and on the device, per-column
    encoding temporaries, the learner's own ``footprint`` and the interpreter), and dpjax's own
    refusal message if its limit check (``dpjax._preparation.check_limits``) would refuse the
    fit, else ``None``."""
    from dpjax._preparation import check_limits
    from dpjax.learners import get_learner

    config = get_learner(method, params)
    footprint = config.footprint(m, n, SYNTHETIC_CODES, 2)
    need = BASELINE_BYTES + 6.0 * m * n + 32.0 * m + footprint
    try:
        check_limits(config, (m, n), SYNTHETIC_CODES, 2, 1, private=True)
    except ValueError as error:
        return need, str(error)
    return need, None


# --------------------------------------------------------------------------------------------
# child processes
# --------------------------------------------------------------------------------------------


def run_child(task: dict[str, Any], timeout_s: float,
              env: dict[str, str | None] | None = None) -> dict[str, Any]:
    """Run ``task`` with ``benchmarks/suite_child.py`` in a fresh interpreter (``env`` added to
    this process's environment, ``None`` values removed from it; its progress goes to stderr)
    and return its JSON result; on a crash or a timeout, ``{"error": "..."}`` (with what the
    child wrote so far, if anything: ``task["result_path"]`` names its result file)."""
    with tempfile.TemporaryDirectory(prefix="dpjax-suite-task-") as folder:
        spec, out = Path(folder) / "task.json", Path(folder) / "result.json"
        spec.write_text(json.dumps({**task, "result_path": str(out)}))
        child_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
        child_env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
        try:
            completed = subprocess.run(
                [sys.executable, "-m", "benchmarks.suite_child", str(spec), str(out)],
                cwd=REPO, env=child_env, timeout=timeout_s, stdout=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            partial = json.loads(out.read_text()) if out.exists() else {}
            return {**partial, "error": f"timed out after {timeout_s:.0f} s"}
        if out.exists():
            return json.loads(out.read_text())
        return {"error": f"child exited with status {completed.returncode} and no result"}


def cache_env(cache: str) -> dict[str, str | None]:
    """A child environment whose compilation cache is ``cache`` (a directory, or ``off``); a
    cache directory configured for JAX itself is dropped (dpjax would keep it)."""
    return {"DPJAX_COMPILATION_CACHE": cache, "JAX_COMPILATION_CACHE_DIR": None}


def directory_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


# --------------------------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------------------------


def fmt_ratio(value: float | None) -> str:
    if value is None or not np.isfinite(value):
        return "-"
    return f"{value:.0f}x" if value >= 100 else f"{value:.1f}x" if value >= 1 else \
        f"{value:.2g}x"


def fmt_mb(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def fmt_rows(m: int) -> str:
    return f"1e{int(round(np.log10(m)))}" if m >= 1000 and 10 ** round(np.log10(m)) == m \
        else f"{m:,}"


def params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "defaults"


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def median_or_none(values: Sequence[float]) -> float | None:
    return float(np.median(values)) if len(values) else None
