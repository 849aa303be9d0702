"""The default ``boosted`` warm fit against DP-EBM on adult, in one process (issue 27).

    python benchmarks/bench_boosted_vs_dpebm.py     # needs the peers extra (interpret-core)

adult's 20,000-row sample of ``experiments/private_boosting.py``, its first 70/30 split, ε = 1:
``dpjax.fit(method="boosted")`` with its defaults (pure ε; and ``delta=1e-6``) after one
compiling fit, against InterpretML's ``DPExplainableBoostingClassifier`` (δ = 1e-6, public
bounds) on the native frame and on the one-hot matrix. Median wall clock of ``--repeats`` fits
each; compile time reported apart. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import private_boosting as pb  # noqa: E402

import dpjax  # noqa: E402
from dpjax.data.splits import stratified_split  # noqa: E402

EPSILON = 1.0


def timed(fn, repeats: int) -> tuple[float, float]:
    """(first call, median of the next ``repeats``) wall clock in seconds."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return first, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from interpret.privacy import DPExplainableBoostingClassifier

    data = pb.load("adult_train")
    train, _ = stratified_split(data.y, pb.TEST_FRACTION, 0)
    X, y = data.X.iloc[train], data.y[train]
    native, types, bounds = pb.native_ebm_frame(data)
    matrix = pb.numeric_matrix(data)
    onehot = pd.DataFrame(matrix[train], columns=[f"c{j}" for j in range(matrix.shape[1])])
    runs = {
        "dpjax boosted, defaults (δ = 0)": lambda: dpjax.fit(
            X, y, method="boosted", epsilon=EPSILON, key=0, bounds=data.bounds,
            missing=data.missing),
        "dpjax boosted, defaults, δ = 1e-6": lambda: dpjax.fit(
            X, y, method="boosted", epsilon=EPSILON, key=0, bounds=data.bounds,
            missing=data.missing, delta=1e-6),
        "DP-EBM native (δ = 1e-6)": lambda: DPExplainableBoostingClassifier(
            epsilon=EPSILON, delta=1e-6, feature_types=types, privacy_bounds=bounds,
            random_state=0).fit(native.iloc[train], y),
        "DP-EBM one-hot (δ = 1e-6)": lambda: DPExplainableBoostingClassifier(
            epsilon=EPSILON, delta=1e-6, feature_types=["continuous"] * matrix.shape[1],
            privacy_bounds={j: (0.0, 1.0) for j in range(matrix.shape[1])},
            random_state=0).fit(onehot, y),
    }
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, run in runs.items():
            repeats = args.repeats if name.startswith("dpjax") else max(1, args.repeats // 2)
            results[name] = timed(run, repeats)
    ebm = min(results["DP-EBM native (δ = 1e-6)"][1], results["DP-EBM one-hot (δ = 1e-6)"][1])
    print(f"adult, {len(y)} training rows, ε = {EPSILON:g}\n")
    print("| method | first call (s, with compile) | warm fit (s, median) | vs faster DP-EBM |")
    print("|---|---|---|---|")
    for name, (first, warm) in results.items():
        print(f"| {name} | {first:.3f} | {warm:.3f} | {ebm / warm:.1f}x |")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
