"""Row buckets (issue 30, item 6): what padding the rows to their bucket saves when a fit's row
count is new but its bucket is not.

    python -m benchmarks.bench_row_buckets      # five learners (the forests alike: one)
    python -m benchmarks.bench_row_buckets --learners boosted --repeats 5

Two scenarios, each with the buckets on (the default) and off (``BUCKET_MAX_ROWS = 0``: every
row count its own program, as before buckets), in fresh interpreters:

* **refresh**: one process fits the first ``n₁`` rows (a fixed shuffle of the dataset) and
  predicts them, which fills a new persistent compilation cache; a second process, with that
  cache, fits and predicts the first ``n₂`` rows (the same study, a refreshed extract): the
  second process's first fit and prediction, and the programs XLA compiled in it.
* **curve**: one process fits a learning curve, 10%, 20%, ..., 100% of the rows, with an empty
  cache, and predicts each fit's rows: the programs compiled and the seconds spent, summed.

Medians over the repeats. Writes ``benchmarks/results/bench_row_buckets_<device>.{md,csv}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

DEFAULT_LEARNERS = ("random_trees", "boosted", "malpha", "rule_list", "smooth_boost")
CACHE_EVENTS = {"/jax/compilation_cache/cache_misses": "programs",
                "/jax/compilation_cache/cache_hits": "loaded"}
FRACTIONS = tuple(np.arange(1, 11) / 10)


def _data(dataset: str, data_dir: str | None) -> tuple[Any, Any, Any, tuple]:
    from dpjax.data import load_dataset, public_bounds
    X, y = load_dataset(dataset, data_dir)
    order = np.random.default_rng(0).permutation(len(y))
    X = X.iloc[order] if hasattr(X, "iloc") else X[order]
    return X, np.asarray(y)[order], public_bounds(dataset, data_dir), tuple(np.unique(y).tolist())


def child(scenario: str, method: str, rows: list[int], buckets: bool, dataset: str,
          data_dir: str | None) -> dict[str, Any]:
    """One process of a scenario: fits of the first ``rows`` rows, one after the other."""
    import jax

    import dpjax
    from dpjax import _buckets
    if not buckets:
        _buckets.BUCKET_MAX_ROWS = 0
    X, y, bounds, classes = _data(dataset, data_dir)
    out: dict[str, Any] = dict.fromkeys(("fit_s", "compile_s", "run_s", "predict_s",
                                         *CACHE_EVENTS.values()), 0.0)

    def listen(event: str, **_: Any) -> None:
        if event in CACHE_EVENTS:
            out[CACHE_EVENTS[event]] += 1

    jax.monitoring.register_event_listener(listen)
    start = time.perf_counter()
    for n in rows:
        model = dpjax.fit(X[:n], y[:n], method=method, epsilon=1.0, bounds=bounds,
                          classes=classes, key=0)
        out["compile_s"] += model.timings.compile_s
        out["run_s"] += model.timings.run_s
        out["fit_s"] += time.perf_counter() - start
        start = time.perf_counter()
        model.predict_proba(X[:n])
        out["predict_s"] += time.perf_counter() - start
        start = time.perf_counter()
    return out


def run_child(cache: str, args: list[str], timeout: float) -> dict[str, Any]:
    from benchmarks.suite_common import cache_env
    env = {**os.environ, **cache_env(cache)}
    done = subprocess.run([sys.executable, "-m", "benchmarks.bench_row_buckets", "--child",
                           json.dumps(args)], capture_output=True, text=True, timeout=timeout,
                          check=False, env={k: v for k, v in env.items() if v is not None})
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError((done.stderr.strip().splitlines() or ["no output"])[-1])
    return json.loads(lines[-1])


def scenario(name: str, method: str, total: int, buckets: bool, dataset: str,
             data_dir: str | None, timeout: float) -> dict[str, Any]:
    """One repeat of scenario ``name`` with a new cache directory."""
    common = [method, buckets, dataset, data_dir]
    with tempfile.TemporaryDirectory(prefix="dpjax-buckets-") as cache:
        if name == "refresh":
            first, second = total - total // 20, total
            run_child(cache, ["refresh", [first], *common], timeout)
            record = run_child(cache, ["refresh", [second], *common], timeout)
            record["rows"] = f"{first} then {second}"
        else:
            sizes = [max(int(f * total), 50) for f in FRACTIONS]
            record = run_child(cache, ["curve", sizes, *common], timeout)
            record["rows"] = f"{sizes[0]}, ..., {sizes[-1]} ({len(sizes)} fits)"
    return {"scenario": name, "method": method, "buckets": "on" if buckets else "off",
            **record}


def markdown(table: Any, dataset: str, repeats: int) -> str:
    from benchmarks import harness
    headers = ["scenario", "learner", "rows", "buckets", "programs compiled",
               "programs loaded", "fit s (wall)", "compile s", "run s", "predict s"]
    rows = [[r.scenario, r.method, r.rows, r.buckets, f"{r.programs:.0f}", f"{r.loaded:.0f}",
             f"{r.fit_s:.2f}", f"{r.compile_s:.2f}", f"{r.run_s:.3f}", f"{r.predict_s:.2f}"]
            for r in table.itertuples()]
    return (f"# Row buckets: a new row count in a known bucket ({dataset}, defaults, ε = 1)\n\n"
            + harness.md_table(headers, rows)
            + f"\n\nMedians of {repeats} repeats, each in fresh interpreters with a new "
            "compilation cache. refresh: a first process fits the first n₁ rows (a fixed "
            "shuffle), a second process with that cache fits the first n₂ (its numbers). curve: "
            "one process fits 10%, ..., 100% of the rows from an empty cache (sums). programs "
            "compiled and loaded = the persistent cache's misses and hits; compile s = the "
            "fits' `timings.compile_s` (tracing and lowering, then XLA's compile or the "
            "program's load); run s = their runs; fit s = the wall clock of the fits; predict "
            "s = that of each model's `predict_proba` on its training rows (its program "
            "compiled or loaded the first time). "
            "buckets off = every row count its own program (as before buckets). "
            "`python -m benchmarks.bench_row_buckets`\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", default=",".join(DEFAULT_LEARNERS))
    parser.add_argument("--dataset", default="banknote")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--stem", default=None, help="output name (default by device)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        name, rows, method, buckets, dataset, data_dir = json.loads(args.child)
        print(json.dumps(child(name, method, rows, buckets, dataset, data_dir)), flush=True)
        return
    import pandas as pd

    from benchmarks import harness
    from dpjax.data import load_dataset
    from experiments.harness import save_results
    total = len(load_dataset(args.dataset, args.data_dir)[1])
    records = []
    for repeat in range(args.repeats):
        for method in args.learners.split(","):
            for name in ("refresh", "curve"):
                for buckets in (True, False):
                    record = scenario(name, method, total, buckets, args.dataset,
                                      args.data_dir, args.timeout)
                    harness.log(f"{name} {method} buckets {record['buckets']} #{repeat}: "
                                f"{record['programs']} programs, {record['fit_s']:.2f} s")
                    records.append(record)
    frame = pd.DataFrame(records)
    table = (frame.groupby(["scenario", "method", "rows", "buckets"], sort=False)
             .median(numeric_only=True).reset_index())
    text = markdown(table, args.dataset, args.repeats)
    print(text)
    save_results(args.stem or f"bench_row_buckets_{harness.device_slug()}", tidy=table,
                 markdown=text, directory=harness.RESULTS)


if __name__ == "__main__":
    main()
