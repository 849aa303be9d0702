"""One task of the suite in a fresh interpreter (``benchmarks/__main__.py``): the first
``dpjax.fit`` of a process (cold or with a warm persistent compilation cache, set by the
parent through ``DPJAX_COMPILATION_CACHE``), and fits whose peak memory must be the process's
own (peak resident memory, ``VmHWM``).

    python -m benchmarks.suite_child TASK.json RESULT.json

Tasks (``"task"`` in the JSON):

* ``a9a_fit``: ``method``, ``params``, ``repeats``, ``data_dir``: load a9a, time the first
  ``dpjax.fit`` (key 0), then ``repeats`` warm fits (keys 1..repeats), each scored on a9a test.
* ``synthetic_fit``: ``rows``, ``features``, ``repeats`` and ``fits`` (a list of
  ``{"method", "params"}``): generate :func:`benchmarks.suite_common.synthetic` data once, then
  for each fit its first (compiling) call and ``repeats`` warm calls.
* ``size_series``: ``method``, ``params``, ``features`` and ``sizes`` (a list of
  ``{"rows", "repeats"}``, rows ascending): generate the largest synthetic table once, then fit
  its first ``rows`` rows at each size (a first, compiling call and ``repeats`` warm calls),
  with the device's peak memory after each size (``benchmarks/device_check.py``); the result
  file is written after each size, so a timeout keeps the sizes done.

The result holds seconds (wall and ``Model.timings``), accuracies and the peak resident memory
(MB, :func:`benchmarks.suite_common.max_rss_mb`: ``VmHWM``; and ``ru_maxrss``, which on Linux
also counts the parent's resident size at the fork) at the points named in it, and the device's
peak allocation where the backend reports one. Called only by
:func:`benchmarks.suite_common.run_child`.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

_START = time.perf_counter()

import dpjax  # noqa: E402  (import time is part of a fresh process's first call)
from benchmarks import harness, suite_common  # noqa: E402

IMPORT_S = time.perf_counter() - _START


def log(message: str) -> None:
    harness.log(f"  (child) {message}")


def fit_series(X: Any, y: Any, fit_kwargs: dict[str, Any], repeats: int,
               test: tuple[Any, Any] | None = None) -> dict[str, Any]:
    """The first ``dpjax.fit`` (key 0), then ``repeats`` warm fits (keys 1..repeats)."""
    first, first_wall = harness.timed(lambda: dpjax.fit(X, y, key=0, **fit_kwargs))
    out: dict[str, Any] = {
        "first_wall_s": first_wall, "compile_s": first.timings.compile_s,
        "first_run_s": first.timings.run_s, "rss_after_first_mb": suite_common.max_rss_mb(),
        "privacy": (f"ε={first.privacy.epsilon:.4g}, δ={first.privacy.delta:g}"
                    if first.privacy.private else "not private"),
        "warm_wall_s": [], "warm_run_s": [], "warm_compile_s": [], "accuracy": [],
    }
    log(f"first fit {first_wall:.2f}s (compile {first.timings.compile_s:.2f}s, "
        f"run {first.timings.run_s:.3f}s)")
    if test is not None and repeats:
        first.score(*test)  # compiles the prediction program outside the timed fits
    for r in range(1, repeats + 1):
        model, wall = harness.timed(lambda r=r: dpjax.fit(X, y, key=r, **fit_kwargs))
        out["warm_wall_s"].append(wall)
        out["warm_run_s"].append(model.timings.run_s)
        out["warm_compile_s"].append(model.timings.compile_s)
        if test is not None:
            out["accuracy"].append(model.score(*test))
    if repeats:
        log(f"warm fit {harness.median(out['warm_wall_s']):.3f}s "
            f"(run {harness.median(out['warm_run_s']):.3f}s) over {repeats}")
    out["device_peak_mb"], out["device_limit_mb"] = suite_common.device_memory_mb()
    return out


def a9a_fit(task: dict[str, Any]) -> dict[str, Any]:
    repeats = int(task["repeats"])
    loaded, load_s = harness.timed(lambda: suite_common.load_a9a(Path(task["data_dir"]),
                                                                 test=repeats > 0))
    X, y = loaded[:2]
    test = loaded[2:] if repeats > 0 else None
    fit_kwargs = {"method": task["method"], "epsilon": 1.0, **suite_common.A9A_FIT,
                  **task["params"]}
    log(f"a9a {task['method']} {suite_common.params_text(task['params'])}: "
        f"cache {dpjax.compilation_cache.directory()}")
    result = fit_series(X, y, fit_kwargs, repeats, test)
    return {**result, "load_s": load_s, "cache_dir": str(dpjax.compilation_cache.directory())}


def synthetic_kwargs(method: str, params: dict[str, Any], n: int) -> dict[str, Any]:
    """``dpjax.fit`` arguments for :func:`benchmarks.suite_common.synthetic` data: ε = 1, the
    declared bounds ``[0, 9]``, classes and one bin per value."""
    return {"method": method, "epsilon": 1.0,
            "bounds": ([0] * n, [suite_common.SYNTHETIC_CODES - 1] * n), "classes": (0, 1),
            "n_bins": suite_common.SYNTHETIC_CODES, **params}


def synthetic_data(m: int, n: int) -> tuple[Any, Any, dict[str, Any]]:
    (X, y), gen_s = harness.timed(lambda: suite_common.synthetic(m, n))
    out: dict[str, Any] = {"gen_s": gen_s, "rss_after_data_mb": suite_common.max_rss_mb()}
    log(f"synthetic {m} x {n} in {gen_s:.1f}s, rss {out['rss_after_data_mb']:.0f} MB")
    return X, y, out


def synthetic_fit(task: dict[str, Any]) -> dict[str, Any]:
    n = int(task["features"])
    X, y, out = synthetic_data(int(task["rows"]), n)
    out["fits"] = []
    for fit in task["fits"]:
        log(f"{fit['method']} {suite_common.params_text(fit['params'])}")
        out["fits"].append(fit_series(X, y, synthetic_kwargs(fit["method"], fit["params"], n),
                                      int(task["repeats"])))
    return out


def size_series(task: dict[str, Any]) -> dict[str, Any]:
    n, sizes = int(task["features"]), task["sizes"]
    X, y, out = synthetic_data(max(int(size["rows"]) for size in sizes), n)
    fit_kwargs = synthetic_kwargs(task["method"], task["params"], n)
    out["sizes"] = []
    for size in sizes:
        m = int(size["rows"])
        log(f"{task['method']} at {m} rows")
        out["sizes"].append({"rows": m, **fit_series(X[:m], y[:m], fit_kwargs,
                                                     int(size["repeats"]))})
        # the sizes done so far, kept should a later size outlast the parent's timeout
        Path(task["result_path"]).write_text(json.dumps(out))
    return out


TASKS = {"a9a_fit": a9a_fit, "synthetic_fit": synthetic_fit, "size_series": size_series}


def main(argv: list[str]) -> int:
    spec, out = Path(argv[0]), Path(argv[1])
    task = json.loads(spec.read_text())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = TASKS[task["task"]](task)
    except Exception as error:  # reported as the row's status by the parent
        traceback.print_exc(file=sys.stderr)
        partial = json.loads(out.read_text()) if out.exists() else {}  # a series' sizes done
        result = {**partial, "error": f"{type(error).__name__}: {error}"}
    result.update(import_s=IMPORT_S, max_rss_mb=suite_common.max_rss_mb(),
                  ru_maxrss_mb=suite_common.ru_maxrss_mb(),
                  child_wall_s=time.perf_counter() - _START)
    out.write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
