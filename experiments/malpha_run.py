"""Nock & Henecka's Mα-boost tables: run the protocol (:mod:`malpha_protocol`) and write one tidy
table per domain, which :mod:`malpha_report` turns into the report:

* ``<out>/malpha_grid/<domain>.csv.gz`` -- one row per (fold, method, setting): the boosted grid
  (both leaf mechanisms and the non-private runs), RF-L / RF-E at every depth and ε, and the
  majority class, with test error counts and rates and the domain's timing;
* ``<out>/malpha_grid/<domain>.json`` -- the settings, timing and dpjax source digest of it.

A domain whose table exists is skipped unless forced; ``forests_only`` recomputes only its
forest and majority rows.
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import harness
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from malpha_protocol import (
    DEPTHS,
    EPSILONS,
    N_FOLDS,
    PROGRAMS,
    RF_DEPTHS,
    RF_METHODS,
    RF_TREES,
    V_Q,
    VARIANTS,
    alpha_label,
    boosted_grid_program,
    boosted_points,
    folds,
    traced_points,
)

import dpjax

TIMING = ["seconds", "compile_s", "run_s"]


def run_boosted(data: harness.Data, fold: int, split: harness.Split, padded: int, depths,
                programs: harness.CompiledPrograms) -> list[dict]:
    """All boosted rows of one fold. ``programs`` keeps the domain's compiled programs (and
    their compile / run seconds) across its folds, which share shapes."""
    train, test = split.train, split.test
    test_codes = np.zeros((padded, data.codes.shape[1]), np.uint8)
    test_codes[:len(test)] = data.codes[test]
    test_y = np.zeros(padded, np.int32)
    test_y[:len(test)] = data.y[test]
    mask = np.arange(padded) < len(test)
    args = (jax.random.key(fold), jnp.asarray(data.codes[train]), jnp.asarray(data.y[train]),
            jnp.asarray(test_codes), jnp.asarray(test_y), jnp.asarray(mask))
    n_codes = tuple(int(c) for c in data.spec.n_codes)
    rows = []
    for depth in depths:
        for private, variant in PROGRAMS:
            points = boosted_points(private)
            program = boosted_grid_program(depth, n_codes, private, variant)
            wrong = np.asarray(programs((depth, private, variant), program, *args,
                                        *traced_points(points)))
            for point, errors in zip(points, wrong, strict=True):
                rows.append({"method": variant, "depth": depth, **point,
                             "alpha": alpha_label(point["alpha"]), "test_wrong": int(errors)})
    return rows


def run_forests(data: harness.Data, fold: int,
                split: harness.Split) -> tuple[list[dict], float, float]:
    """RF-L and RF-E at every depth and ε of one fold (one ``dpjax.sweep`` per method and
    depth), then the majority class; returns the rows and the compile / run seconds."""
    common = {"bounds": data.bounds, "missing": data.missing, "n_bins": V_Q}
    X_train, y_train = data.X.iloc[split.train], data.y[split.train]
    rows, compile_s, run_s = [], 0.0, 0.0
    for method, depth in itertools.product(RF_METHODS, RF_DEPTHS):
        forest = dpjax.sweep(X_train, y_train, method=method, epsilon=list(EPSILONS),
                             seeds=[fold], n_trees=RF_TREES, depth=depth, budget="paper",
                             **common)
        compile_s, run_s = compile_s + forest.timings.compile_s, run_s + forest.timings.run_s
        wrong = (forest.predict(data.X.iloc[split.test]) != data.y[split.test]).sum(-1)[:, 0]
        rows += [{"method": method, "n_trees": RF_TREES, "depth": depth, **point,
                  "test_wrong": int(errors)}
                 for point, errors in zip(forest.grid, wrong, strict=True)]
    majority = harness.majority_class().evaluate(data, split, fold)
    rows += [{"method": "majority", **row} for row in majority]
    return rows, compile_s, run_s


def run_domain(name: str, n_folds: int = N_FOLDS, depths=DEPTHS, boosted: bool = True,
               data_dir: str | None = None) -> pd.DataFrame:
    """Every setting of the grid on every fold of one domain: one row per (fold, method,
    setting) with the test error counts (``boosted=False``: the forests and the majority class
    only) and the domain's ``seconds`` (wall), ``compile_s`` and ``run_s``."""
    data = harness.load(name, data_dir, n_bins=V_Q)
    splits = folds(data.y, n_folds)
    padded = max(len(split.test) for split in splits)
    rows, programs = [], harness.CompiledPrograms()
    start = time.perf_counter()
    compile_s = run_s = 0.0
    for fold, split in enumerate(splits):
        base = {"dataset": name, "fold": fold, "n_test": len(split.test)}
        if boosted:
            rows += [{**base, **row}
                     for row in run_boosted(data, fold, split, padded, depths, programs)]
        forest_rows, c, r = run_forests(data, fold, split)
        compile_s, run_s = compile_s + c, run_s + r
        rows += [{**base, **row} for row in forest_rows]
    compile_s, run_s = compile_s + programs.compile_s, run_s + programs.run_s
    df = pd.DataFrame(rows)
    df["test_error"] = df["test_wrong"] / df["n_test"]
    seconds = time.perf_counter() - start
    print(f"{name}: {len(df)} rows, {seconds:.1f}s (compile {compile_s:.1f}s, fits "
          f"{run_s:.1f}s; m={data.n}, n={data.X.shape[1]})", flush=True)
    boosted_grid_program.cache_clear()
    jax.clear_caches()
    return df.assign(seconds=seconds, compile_s=compile_s, run_s=run_s)


def grid_path(grid_dir: Path, name: str) -> Path:
    return grid_dir / f"{name}.csv.gz"


def read_grid(grid_dir: Path, name: str) -> pd.DataFrame:
    """A domain's table as written, its error rates as stored (the report's numbers were
    computed from the stored, 6-digit rates)."""
    return harness.read_results(name, directory=grid_dir, suffix=".csv.gz", rates=False)


def save_grid(grid_dir: Path, name: str, df: pd.DataFrame, meta: dict) -> list[Path]:
    return harness.save_results(name, tidy=df, meta=meta, directory=grid_dir, suffix=".csv.gz")


def rerun_forests(grid_dir: Path, name: str, args: argparse.Namespace) -> list[Path]:
    """Recompute the forest and majority rows of a cached domain, keeping its boosted rows
    and their timing."""
    cached = read_grid(grid_dir, name)
    kept = cached[cached["method"].isin(list(VARIANTS))]
    forests = run_domain(name, n_folds=args.folds, boosted=False,
                         data_dir=args.data_dir).drop(columns=TIMING)
    merged = pd.concat([kept, forests], ignore_index=True)
    for column in TIMING:  # the boosted run's timing
        merged[column] = cached[column].iloc[0]
    meta_path = grid_dir / f"{name}.json"
    meta = harness.read_meta(name, grid_dir) if meta_path.exists() else {"dpjax_digest": None}
    meta["forests_dpjax_digest"] = harness.source_digest()
    return save_grid(grid_dir, name, merged, meta)


def run(args: argparse.Namespace) -> list[Path]:
    """Every domain of ``args.domains`` under ``args.grid_dir`` (cached per domain)."""
    written = []
    for name in args.domains:
        path = grid_path(args.grid_dir, name)
        if args.forests_only and path.exists():
            written += rerun_forests(args.grid_dir, name, args)
            continue
        if path.exists() and not args.force:
            print(f"{name}: cached ({path})")
            continue
        df = run_domain(name, n_folds=args.folds, depths=args.depths, data_dir=args.data_dir)
        digest = harness.source_digest()
        meta = {"domain": name, "quick": args.quick, "folds": args.folds,
                "depths": list(args.depths),
                **{column: float(df[column].iloc[0]) for column in TIMING},
                "dpjax_digest": digest, "forests_dpjax_digest": digest}
        written += save_grid(args.grid_dir, name, df, meta)
    return written
