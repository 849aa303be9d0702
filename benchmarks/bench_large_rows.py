"""Boosting past 2**23 rows (issue 30, item 4): time and peak memory against the memory floor.

    python -m benchmarks.bench_large_rows                      # 1.2e7 x 10 and 1e8 x 20
    python -m benchmarks.bench_large_rows --sizes 2e6x10,4e6x10

Each size runs in a fresh interpreter, so that its peak resident memory (``VmHWM``) is its own:

1. synthetic data (:func:`benchmarks.suite_common.synthetic` as uint8: values 0..9, a noisy
   linear label) of the size plus 100,000 held-out rows, declared bounds ``[0, 9]``,
   ``n_bins=10`` (so the codes are the values);
2. the memory floor: numpy reading the codes once (``codes.sum(dtype=uint64)``, median of 3),
   times the ``n_trees x depth`` levels a fit reads them;
3. ``boosted`` with ``shape="random"``, 20 trees x depth 6, ε = 1 (pure), fitted twice: the
   first fit (compile and run) and a warm one (key 1); held-out accuracy of the warm model.

Past 2**23 rows the rounds' cell sums are wide (:func:`dpjax.privacy.fixed_point.
exact_segment_sum`). Writes ``benchmarks/results/bench_large_rows_<device>.{md,csv}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

from benchmarks import harness
from benchmarks.suite_common import max_rss_mb, synthetic
from experiments.harness import save_results

DEFAULT_SIZES = "1.2e7x10,1e8x20"
HELD_OUT = 100_000
FIT = {"method": "boosted", "shape": "random", "n_trees": 20, "depth": 6, "epsilon": 1.0,
       "bounds": (0.0, 9.0), "n_bins": 10}


def parse_size(text: str) -> tuple[int, int]:
    rows, features = text.lower().split("x")
    return int(float(rows)), int(features)


def floor_seconds(codes: np.ndarray, repeats: int = 3) -> float:
    """Median seconds of numpy reading ``codes`` once."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        codes.sum(dtype=np.uint64)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def child(m: int, n: int) -> dict[str, Any]:
    """One size, in this (fresh) interpreter."""
    import jax

    import dpjax

    X, y = synthetic(m + HELD_OUT, n, dtype=np.uint8)
    X, y, X_test, y_test = X[:m], y[:m], X[m:], y[m:]
    out: dict[str, Any] = {"rows": m, "features": n, "code_mb": X.nbytes / 1e6,
                           "backend": jax.default_backend(), "rss_data_mb": max_rss_mb()}
    read = floor_seconds(X)
    out["floor_read_s"] = read
    out["floor_fit_s"] = read * FIT["n_trees"] * FIT["depth"]
    start = time.perf_counter()
    first = dpjax.fit(X, y, key=0, **FIT)
    out.update(first_wall_s=time.perf_counter() - start, compile_s=first.timings.compile_s,
               first_run_s=first.timings.run_s, rss_first_mb=max_rss_mb())
    start = time.perf_counter()
    warm = dpjax.fit(X, y, key=1, **FIT)
    out.update(warm_wall_s=time.perf_counter() - start, warm_run_s=warm.timings.run_s,
               rss_warm_mb=max_rss_mb(), epsilon=warm.privacy.epsilon,
               accuracy=float(np.mean(warm.predict(X_test) == y_test)),
               majority=float(max(np.mean(y_test), 1 - np.mean(y_test))))
    out["run_over_floor"] = out["warm_run_s"] / out["floor_fit_s"]
    return out


def run_size(m: int, n: int, timeout: float) -> dict[str, Any]:
    harness.log(f"{m:,} x {n}: fresh interpreter")
    try:
        done = subprocess.run([sys.executable, "-m", "benchmarks.bench_large_rows", "--child",
                               f"{m}x{n}"], capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"rows": m, "features": n, "error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"rows": m, "features": n,
                "error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def markdown(records: list[dict[str, Any]]) -> str:
    rows = []
    for r in records:
        if "error" in r:
            rows.append((f"{r['rows']:,} x {r['features']}", r["error"]) + ("",) * 8)
            continue
        rows.append((f"{r['rows']:,} x {r['features']}", f"{r['code_mb']:,.0f}",
                     f"{r['floor_fit_s']:.1f}", f"{r['compile_s']:.1f}",
                     f"{r['warm_run_s']:.1f}", f"{r['run_over_floor']:.2f}x",
                     f"{r['rss_data_mb'] / 1e3:.2f}", f"{r['rss_warm_mb'] / 1e3:.2f}",
                     f"{r['accuracy']:.3f} ({r['majority']:.3f})", f"{r['epsilon']:.4g}"))
    table = harness.md_table(
        ("rows x features", "codes MB", "floor s (120 reads)", "compile s", "warm run s",
         "run / floor", "peak GB after the data", "peak GB after the fits",
         "held-out accuracy (majority)", "ledger ε"), rows)
    return ("# boosted past 2**23 rows (random shape, 20 trees x depth 6, ε = 1)\n\n" + table
            + "\n\nfloor = numpy reading the uint8 codes once (median of 3) x 120 (20 trees x 6 "
            "levels). Peak = the interpreter's resident high-water mark (VmHWM): after "
            "generating the data (the codes, labels and held-out rows), then after the two "
            "fits. Compile s: the first fit's, with the machine's persistent compilation "
            "cache as it was. Past 2**23 rows the cell sums are wide (two int32 limbs). "
            "`python -m benchmarks.bench_large_rows`\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*parse_size(args.child))), flush=True)
        return
    records = [run_size(*parse_size(size), args.timeout) for size in args.sizes.split(",")]
    text = markdown(records)
    print(text)
    save_results(f"bench_large_rows_{harness.device_slug()}", tidy=pd.DataFrame(records),
                 markdown=text, directory=harness.RESULTS)


if __name__ == "__main__":
    main()
