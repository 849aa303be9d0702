"""Boosting past 2**23 rows (issue 30, item 4): time and peak memory against the memory floor.

    python -m benchmarks.bench_large_rows                      # 1.2e7 x 10 and 1e8 x 20
    python -m benchmarks.bench_large_rows --sizes 2e6x10,4e6x10
    python -m benchmarks.bench_large_rows --sizes 9e6x10 --modes oblivious,regression
    python -m benchmarks.bench_large_rows --sizes 1.2e7x10 --modes malpha

Each size runs in a fresh interpreter, so that its peak resident memory (``VmHWM``) is its own:

1. synthetic data (:func:`benchmarks.suite_common.synthetic` as uint8: values 0..9, a noisy
   linear label) of the size plus 100,000 held-out rows, declared bounds ``[0, 9]``,
   ``n_bins=10`` (so the codes are the values);
2. the memory floor: numpy reading the codes once (``codes.sum(dtype=uint64)``, median of 3),
   times the ``n_trees x depth`` levels a fit reads them;
3. ``boosted`` with 20 trees x depth 6, ε = 1 (pure), fitted twice: the first fit (compile
   and run) and a warm one (key 1); the warm model's held-out accuracy (regression: RMSE,
   against the majority's accuracy or the mean's RMSE). ``--modes``: ``random`` (the
   default, ``shape="random"``), ``oblivious`` (``shape="oblivious"``: one permute-and-flip
   over every split per level) and ``regression`` (``shape="random"``, the 0/1 label as a
   target in ``[0, 1]``) and ``malpha`` (``method="malpha"``, 10 trees x depth 4, its other
   defaults: greedy splits by permute-and-flip on the Mα criterion, O.C) and ``rule_list``
   (``method="rule_list"``, 4 rules, 4 bins per feature: every literal pair scored at each
   rule; its floor counts one read of the codes per rule).

Past 2**23 rows the rounds' cell sums, the level utilities, the regression prior's sum and Mα's
split histograms and leaf sums are wide (:mod:`dpjax.privacy.fixed_point`); past 2**24 rows
a rule list's Gini-weighted counts are (:func:`dpjax.rules.candidates.wide_gini_count`). Writes
``benchmarks/results/bench_large_rows_<device>.{md,csv}`` (with ``--modes``,
``bench_large_rows_<modes>_<device>``).
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
MODES = {"random": {}, "oblivious": {"shape": "oblivious"},
         "regression": {"task": "regression", "y_bounds": (0.0, 1.0)},
         "malpha": {"method": "malpha", "shape": None, "n_trees": 10, "depth": 4},
         "rule_list": {"method": "rule_list", "shape": None, "n_trees": None, "depth": None,
                       "max_rules": 4, "n_bins": 4}}
"""Each mode's changes to :data:`FIT` (``None``: dropped)."""


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


def child(m: int, n: int, mode: str) -> dict[str, Any]:
    """One size and mode, in this (fresh) interpreter."""
    import jax

    import dpjax

    fit = {k: v for k, v in {**FIT, **MODES[mode]}.items() if v is not None}
    regression = mode == "regression"
    X, y = synthetic(m + HELD_OUT, n, dtype=np.uint8)
    if regression:
        y = y.astype(np.float32)
    X, y, X_test, y_test = X[:m], y[:m], X[m:], y[m:]
    out: dict[str, Any] = {"mode": mode, "rows": m, "features": n, "code_mb": X.nbytes / 1e6,
                           "backend": jax.default_backend(), "rss_data_mb": max_rss_mb()}
    read = floor_seconds(X)
    out["floor_read_s"] = read
    out["levels"] = fit.get("max_rules") or fit["n_trees"] * fit["depth"]
    out["floor_fit_s"] = read * out["levels"]
    start = time.perf_counter()
    first = dpjax.fit(X, y, key=0, **fit)
    out.update(first_wall_s=time.perf_counter() - start, compile_s=first.timings.compile_s,
               first_run_s=first.timings.run_s, rss_first_mb=max_rss_mb())
    start = time.perf_counter()
    warm = dpjax.fit(X, y, key=1, **fit)
    predicted = warm.predict(X_test)
    if regression:
        score = float(np.sqrt(np.mean((predicted - y_test) ** 2)))
        baseline = float(np.std(y_test))
    else:
        score = float(np.mean(predicted == y_test))
        baseline = float(max(np.mean(y_test), 1 - np.mean(y_test)))
    out.update(warm_wall_s=time.perf_counter() - start, warm_run_s=warm.timings.run_s,
               rss_warm_mb=max_rss_mb(), epsilon=warm.privacy.epsilon, score=score,
               baseline=baseline)
    out["run_over_floor"] = out["warm_run_s"] / out["floor_fit_s"]
    return out


def run_size(m: int, n: int, mode: str, timeout: float) -> dict[str, Any]:
    harness.log(f"{mode} {m:,} x {n}: fresh interpreter")
    try:
        done = subprocess.run([sys.executable, "-m", "benchmarks.bench_large_rows", "--child",
                               f"{m}x{n}", "--modes", mode], capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"mode": mode, "rows": m, "features": n,
                "error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"mode": mode, "rows": m, "features": n,
                "error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


NOTE = (
    "floor = numpy reading the uint8 codes once (median of 3) x the fit's levels "
    "(trees x depth: 120 for boosted, 40 for malpha; rules: 4 for rule_list). Peak = "
    "the interpreter's resident high-water mark (VmHWM): after generating the data "
    "(the codes, labels and held-out rows), then after the two fits. Compile s: the "
    "first fit's, with the machine's persistent compilation cache as it was. Modes: "
    "random = `shape='random'`, oblivious = `shape='oblivious'`, regression = "
    "`shape='random'` on the 0/1 label as a target (RMSE against the mean's), malpha "
    "= `method='malpha'` (its defaults otherwise), rule_list = `method='rule_list'` "
    "with 4 bins per feature. Past 2**23 rows the sums are wide (two int32 limbs; a "
    "rule list's scores past 2**24). `python -m benchmarks.bench_large_rows`"
)
"""The note under the table."""


def markdown(records: list[dict[str, Any]]) -> str:
    rows = []
    for r in records:
        if "error" in r:
            rows.append((r["mode"], f"{r['rows']:,} x {r['features']}", r["error"]) + ("",) * 8)
            continue
        metric = "RMSE" if r["mode"] == "regression" else "accuracy"
        rows.append((r["mode"], f"{r['rows']:,} x {r['features']}", f"{r['code_mb']:,.0f}",
                     f"{r['floor_fit_s']:.1f} ({r['levels']})", f"{r['compile_s']:.1f}",
                     f"{r['warm_run_s']:.1f}", f"{r['run_over_floor']:.2f}x",
                     f"{r['rss_data_mb'] / 1e3:.2f}", f"{r['rss_warm_mb'] / 1e3:.2f}",
                     f"{metric} {r['score']:.3f} ({r['baseline']:.3f})", f"{r['epsilon']:.4g}"))
    table = harness.md_table(
        ("mode", "rows x features", "codes MB", "floor s (reads)", "compile s",
         "warm run s", "run / floor", "peak GB after the data", "peak GB after the fits",
         "held-out score (majority / mean)", "ledger ε"), rows)
    return ("# Past 2**23 rows (boosted: 20 trees x depth 6; malpha: 10 trees x depth 4; "
            "rule_list: 4 rules; ε = 1)\n\n" + table + "\n\n" + NOTE + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--modes", default="random",
                        help="comma-separated: " + ", ".join(MODES))
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--stem", default=None,
                        help="output name (default: bench_large_rows[_modes]_<device>)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*parse_size(args.child), args.modes)), flush=True)
        return
    modes = args.modes.split(",")
    records = [run_size(*parse_size(size), mode, args.timeout)
               for mode in modes for size in args.sizes.split(",")]
    text = markdown(records)
    print(text)
    stem = "bench_large_rows" + ("" if modes == ["random"] else "_" + "_".join(modes))
    save_results(args.stem or f"{stem}_{harness.device_slug()}", tidy=pd.DataFrame(records),
                 markdown=text, directory=harness.RESULTS)


if __name__ == "__main__":
    main()
