"""Table 1 of Bojarski et al.: run the protocol (:mod:`table1_protocol`) and write the tidy
results that :mod:`table1_report` turns into the report, under ``--out``:

* ``<stem>.csv`` -- one row per dataset x method x run: the selected forests (k, h) and the
  reference learners, with error counts and rates;
* ``<stem>_grid.csv.gz`` -- every (run, k, h) of the grid;
* ``<stem>_fallback.csv`` -- shares of the private forests' votes from U[0,1] fallback leaves;
* ``<stem>_birads.csv`` / ``<stem>_replicate.csv`` -- the selected forests of the Mammographic
  data-version check and of a second, disjoint set of runs (when run);
* ``<stem>.json`` -- the settings, wall time and dpjax source digest of the run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import harness
import numpy as np
import pandas as pd
from table1_protocol import (
    METHODS,
    PAPER_NAMES,
    SPLIT,
    check_against_fit,
    fallback_share,
    mammographic_birads_fixed,
    paper_setting,
    parse_setting,
    random_trees_grid,
    reference_methods,
    select,
    summarise,
)


def fallback_table(datas: dict[str, harness.Data], table: pd.DataFrame, runs: int,
                   ks: tuple[int, ...], hs: tuple[int, ...]) -> pd.DataFrame:
    """Mean over runs of :func:`table1_protocol.fallback_share` at the paper's and at our modal
    (k, h) of the private MV and TA, per available dataset."""
    rows = []
    for name, data in datas.items():
        paper_name = PAPER_NAMES[name]
        settings: dict[tuple[int, int], list[str]] = {}
        for method in ("dpRFMV", "dpRFTA"):
            settings.setdefault(paper_setting(paper_name, method), []).append(
                f"paper {method}")
            mode = table[(table["dataset"] == paper_name)
                         & (table["method"] == method)]["setting"].iloc[0]
            settings.setdefault(parse_setting(mode), []).append(f"ours {method}")
        for (k, h), labels in settings.items():
            if k not in ks or h not in hs:
                continue
            shares = np.array([fallback_share(data, run, k, h, ks) for run in range(runs)])
            rows.append({"dataset": paper_name, "(k,h)": f"({k},{h})",
                         "selected by": ", ".join(labels),
                         "votes from U[0,1] leaves %": 100 * shares[:, 0].mean(),
                         "… from occupied leaves %": 100 * shares[:, 1].mean()})
    return pd.DataFrame(rows)


def run_grid(data: harness.Data, method: harness.Method, runs: range) -> pd.DataFrame:
    """The grid rows of ``method`` on ``runs`` of the protocol's splits of ``data``."""
    grid = harness.run(data, SPLIT, [method], runs, verbose=False)
    return grid.astype({"k": int, "h": int})


def run(args: argparse.Namespace) -> list[Path]:
    """Evaluate the grid and the references on every available dataset of ``args.datasets``,
    then the diagnostics; write the tidy tables and the run's facts under ``args.out``."""
    start = time.perf_counter()
    grid_method = random_trees_grid(args.ks, args.hs)
    methods = [grid_method, harness.majority_class(), *reference_methods()]
    frames, datas = [], {}
    for name in args.datasets:
        if not harness.dataset_available(name, args.data_dir):
            print(f"{name}: not available", flush=True)
            continue
        data = harness.load(name, args.data_dir, n_bins=255)
        if args.quick:  # the grid's composition of the library's stages must agree with fit
            check_against_fit(data, 0, args.hs[0], args.ks)
        t0 = time.perf_counter()
        frames.append(harness.run(data, SPLIT, methods, range(args.runs), verbose=False))
        datas[name] = data
        print(f"{name}: n={data.n}, {time.perf_counter() - t0:.1f}s", flush=True)
    df = pd.concat(frames, ignore_index=True)
    is_grid = df["method"].isin(METHODS)
    grid = df[is_grid].astype({"k": int, "h": int})
    references = df[~is_grid].drop(columns=["k", "h", "epsilon"])
    selected = select(grid)
    table = summarise(selected, references)
    tables = {"grid.csv.gz": grid,
              "fallback.csv": fallback_table(datas, table, args.runs, args.ks, args.hs)}
    if "mammographic" in datas:
        birads = run_grid(mammographic_birads_fixed(args.data_dir), grid_method,
                          range(args.runs))
        tables["birads.csv"] = select(birads).drop(columns="n_ties")
        print("mammographic BI-RADS check done", flush=True)
    if args.replicate:
        second = pd.concat([run_grid(data, grid_method, range(args.runs, 2 * args.runs))
                            for data in datas.values()], ignore_index=True)
        tables["replicate.csv"] = select(second).drop(columns="n_ties")
        print("replicate runs done", flush=True)
    wall = time.perf_counter() - start
    tidy = pd.concat([selected.drop(columns="n_ties"), references],
                     ignore_index=True).astype({"k": "Int64", "h": "Int64"})
    meta = {"quick": args.quick, "runs": args.runs, "hs": list(args.hs), "ks": list(args.ks),
            "datasets": args.datasets, "available": [PAPER_NAMES[name] for name in datas],
            "wall_s": wall, "dpjax_digest": harness.source_digest()}
    return harness.save_results(args.stem, tidy=tidy, tables=tables, meta=meta,
                                directory=args.out)

