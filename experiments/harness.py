"""Shared experiment runner for the dpjax paper reproductions (DESIGN.md: "experiments/: one
script per paper table, shared runner, results/ (CSV + markdown + PNG)").

The pieces, smallest first:

* :func:`data_dir` / :func:`load` -- a registered dataset as :class:`Data`: the raw table, the
  0/1 labels and the uint8 codes under the dataset's *public* schema (bounds and categories of
  the full published file, ``dpjax.data.public_bounds``; missing values get their own code).
* :class:`Split` and split protocols (``(y, seed) -> Split``), e.g. :func:`holdout`;
  :func:`stratified_kfold` -- the splits of a k-fold cross-validation.
* :class:`Method` -- a name and an ``evaluate(data, split, seed) -> rows`` function. One call
  may return many rows (one per setting, e.g. every ``(k, h)`` of a grid computed in one jitted
  program). :func:`fit_grid` wraps plain ``dpjax.fit`` calls into a Method.
* :func:`run` -- every method on every seed of one dataset: a tidy DataFrame, one row per
  dataset x method x setting x run, holding error *counts* (``val_wrong``/``val_n``,
  ``test_wrong``/``test_n``) and the derived error rates.
* :class:`CompiledPrograms` -- jitted programs compiled once per shape, with compile and run
  seconds kept apart.
* :func:`select_best`, :func:`binomial_summary`, :func:`mean_ci`, :func:`paired_t_test` -- model
  selection, aggregation and comparison; :func:`markdown_table`, :func:`paper_comparison`,
  :func:`sort_rows`, :func:`pyplot` -- reports;
  :func:`save_results` -- CSV + markdown + PNG (+ extra tables and a JSON of run facts) under
  ``experiments/results/``, :func:`read_results` / :func:`read_meta` to report from them
  without refitting; :func:`source_digest` -- which dpjax version produced the numbers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd

import dpjax
from dpjax._progress import progress
from dpjax.data import FeatureSpec, encode, make_feature_spec, missing_columns, public_bounds
from dpjax.data.splits import stratified_folds, stratified_split

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "experiments" / "results"
Z95 = 1.959963984540054


def data_dir(path: str | os.PathLike | None = None) -> Path:
    """Dataset directory: ``path``, else ``$DPJAX_DATA``, else ``<repo>/../shared/datasets``."""
    if path is not None:
        return Path(path)
    if os.environ.get("DPJAX_DATA"):
        return Path(os.environ["DPJAX_DATA"])
    return REPO.parent / "shared" / "datasets"


def dataset_available(name: str, directory: str | os.PathLike | None = None) -> bool:
    """Whether ``load_dataset(name)`` can find the dataset's file."""
    try:
        dpjax.data.dataset_path(name, data_dir(directory))
    except (FileNotFoundError, ValueError):
        return False
    return True


@dataclasses.dataclass(frozen=True)
class Data:
    """A loaded dataset: raw table ``X``, labels ``y`` (int32 0/1), uint8 ``codes [n, m]``
    under the public ``spec``, and the public ``bounds`` / ``missing`` declarations used."""

    name: str
    X: pd.DataFrame
    y: np.ndarray
    codes: np.ndarray
    spec: FeatureSpec
    bounds: dict[str, Any]
    missing: list[str]

    @property
    def n(self) -> int:
        return len(self.y)


def load(name: str, directory: str | os.PathLike | None = None, *, n_bins: int = 255) -> Data:
    """Load ``name`` and code it under its public schema (the full file's bounds and
    categories; columns with missing values get a missing code; numeric columns ``n_bins``
    equal-width bins)."""
    directory = data_dir(directory)
    X, y = dpjax.load_dataset(name, directory)
    bounds, missing = public_bounds(name, directory), missing_columns(name, directory)
    spec = make_feature_spec(X, bounds, n_bins=n_bins, missing=missing, private=True)
    return Data(name, X, np.asarray(y), encode(spec, X), spec, bounds, missing)


@dataclasses.dataclass(frozen=True)
class Split:
    """Row indices of one run: ``train`` (fit), ``test`` (report) and optional ``val``
    (model selection)."""

    train: np.ndarray
    test: np.ndarray
    val: np.ndarray | None = None


SplitProtocol = Callable[[np.ndarray, int], Split]


def holdout(test_fraction: float, val_fraction: float = 0.0) -> SplitProtocol:
    """Stratified protocol: ``test_fraction`` of the rows to test, then ``val_fraction`` of the
    rest to validation; both shuffles seeded by the run's seed."""

    def split(y: np.ndarray, seed: int) -> Split:
        rest, test = stratified_split(y, test_fraction, seed)
        if val_fraction <= 0.0:
            return Split(rest, test)
        inner_train, inner_val = stratified_split(y[rest], val_fraction, seed)
        return Split(rest[inner_train], test, rest[inner_val])

    return split


def stratified_kfold(y: np.ndarray, n_folds: int, seed: int = 0, *,
                     common_train_size: bool = False) -> list[Split]:
    """The ``(train, test)`` splits of a stratified ``n_folds``-fold cross-validation (fold
    shuffle seeded by ``seed``). ``common_train_size``: every training part cut -- at random,
    one seeded generator drawing fold after fold, indices kept sorted -- to the smallest training
    size, so that all folds share the shapes of one compiled program (at most a few rows are
    dropped per fold)."""
    folds = stratified_folds(y, n_folds, seed)
    size = len(y) - max(len(f) for f in folds)
    rng = np.random.default_rng(seed)
    splits = []
    for test in folds:
        train = np.setdiff1d(np.arange(len(y)), test)
        if common_train_size:
            train = np.sort(rng.permutation(train)[:size])
        splits.append(Split(train, test))
    return splits


Row = dict[str, Any]
Evaluate = Callable[[Data, Split, int], Iterable[Row]]


@dataclasses.dataclass(frozen=True)
class Method:
    """A method of the grid. ``evaluate(data, split, seed)`` returns rows holding setting
    columns (e.g. ``k``, ``h``) and error counts ``val_wrong``/``test_wrong``. A row without a
    ``method`` key gets ``name``; a row with one lets one evaluator report several variants
    that share a computation."""

    name: str
    evaluate: Evaluate


def fit_grid(
    name: str,
    grid: Sequence[Mapping[str, Any]],
    *,
    epsilon: float | Callable[[Data, Split], float] | None,
    **fit_kwargs: Any,
) -> Method:
    """A :class:`Method` fitting ``dpjax.fit`` once per grid point on ``split.train`` (key =
    the run's seed; ``method="random_trees"`` unless ``fit_kwargs`` or the grid point names
    another), with the dataset's public bounds and missing declaration, and counting
    errors on ``split.val`` and ``split.test``. ``epsilon`` may depend on the data and split
    (e.g. ``1000 / n_train``). Fine for small grids; vectorise large ones in the script."""

    def evaluate(data: Data, split: Split, seed: int) -> list[Row]:
        eps = epsilon(data, split) if callable(epsilon) else epsilon
        rows = []
        for setting in grid:
            kwargs = {"method": "random_trees", "bounds": data.bounds, "missing": data.missing,
                      "n_bins": data.spec.n_bins, **fit_kwargs, **setting}
            model = dpjax.fit(data.X.iloc[split.train], data.y[split.train], epsilon=eps,
                              key=seed, **kwargs)
            row: Row = {**setting, "epsilon": eps}
            for part in ("val", "test"):
                rows_idx = getattr(split, part)
                if rows_idx is not None:
                    pred = model.predict(data.X.iloc[rows_idx], key=seed)
                    row[f"{part}_wrong"] = int(np.sum(pred != data.y[rows_idx]))
            rows.append(row)
        return rows

    return Method(name, evaluate)


def majority_class() -> Method:
    """Baseline: predict the training part's majority class (a sanity column)."""

    def evaluate(data: Data, split: Split, seed: int) -> list[Row]:
        del seed
        label = int(np.mean(data.y[split.train]) > 0.5)
        row: Row = {}
        for part in ("val", "test"):
            idx = getattr(split, part)
            if idx is not None:
                row[f"{part}_wrong"] = int(np.sum(data.y[idx] != label))
        return [row]

    return Method("majority class", evaluate)


def sklearn_method(name: str, make_estimator: Callable[[], Any],
                   fit_parts: Sequence[str] = ("train", "val")) -> Method:
    """A non-private reference learner (scikit-learn style ``fit`` / ``predict``) fitted on the
    codes of ``fit_parts`` (default: train + validation, as it needs no model selection) and
    scored on validation and test. Row setting: none."""

    def evaluate(data: Data, split: Split, seed: int) -> list[Row]:
        del seed
        rows_fit = np.concatenate([getattr(split, p) for p in fit_parts
                                   if getattr(split, p) is not None])
        model = make_estimator().fit(data.codes[rows_fit], data.y[rows_fit])
        row: Row = {}
        for part in ("val", "test"):
            idx = getattr(split, part)
            if idx is not None:
                row[f"{part}_wrong"] = int(np.sum(model.predict(data.codes[idx]) != data.y[idx]))
        return [row]

    return Method(name, evaluate)


def run(
    dataset: str | Data,
    split: SplitProtocol,
    methods: Sequence[Method],
    seeds: Iterable[int],
    *,
    directory: str | os.PathLike | None = None,
    n_bins: int = 255,
    verbose: bool = True,
) -> pd.DataFrame:
    """Evaluate every method on every seed's split of one dataset.

    Returns a tidy DataFrame: columns ``dataset, run, method``, the methods' setting columns,
    ``n_train, n_val, n_test``, the error counts and ``val_error`` / ``test_error`` (fractions),
    and ``seconds`` (wall time of the method's evaluate call for that run, shared by its rows).
    """
    data = dataset if isinstance(dataset, Data) else load(dataset, directory, n_bins=n_bins)
    frames, integer_columns = [], {}
    seeds = list(seeds)
    for seed in progress(seeds, f"{data.name} runs", unit="run"):
        parts = split(data.y, seed)
        sizes = {"n_train": len(parts.train), "n_test": len(parts.test),
                 "n_val": 0 if parts.val is None else len(parts.val)}
        for method in methods:
            start = time.perf_counter()
            rows = [{"method": method.name, **r} for r in method.evaluate(data, parts, seed)]
            seconds = time.perf_counter() - start
            for row in rows:
                for column, value in row.items():
                    is_int = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
                    integer_columns[column] = integer_columns.get(column, True) and is_int
            frame = pd.DataFrame(rows).assign(dataset=data.name, run=seed, **sizes,
                                              seconds=seconds)
            frames.append(frame)
            if verbose:
                print(f"  {data.name} run {seed} {method.name}: {len(rows)} rows, "
                      f"{seconds:.1f}s", flush=True)
    df = pd.concat(frames, ignore_index=True)
    # integer settings (not the counts) stay integers where other methods leave them empty
    counts = {"run", "val_wrong", "test_wrong"}
    df = add_error_rates(df.astype({c: "Int64" for c, is_int in integer_columns.items()
                                    if is_int and c not in counts and df[c].isna().any()}))
    first = ["dataset", "run", "method"]
    return df[first + [c for c in df.columns if c not in first]]


def add_error_rates(df: pd.DataFrame) -> pd.DataFrame:
    """``val_error`` / ``test_error`` (fractions) from the error counts, in place: exactly the
    rates :func:`run` computed, also for rows read back from a CSV (:func:`read_results`)."""
    for part in ("val", "test"):
        if f"{part}_wrong" in df:
            df[f"{part}_error"] = df[f"{part}_wrong"] / df[f"n_{part}"].replace(0, np.nan)
    return df


class CompiledPrograms:
    """Jitted programs compiled ahead once per ``key`` (``program.lower(*args).compile()``) and
    run to completion; ``compile_s`` / ``run_s`` add up the seconds spent in each. Reuse one
    instance across calls whose arguments share shapes (e.g. the folds of a cross-validation
    cut to a common training size) to compile each program once."""

    def __init__(self) -> None:
        self.compiled: dict[Any, Any] = {}
        self.compile_s = 0.0
        self.run_s = 0.0

    def __call__(self, key: Any, program: Any, *args: Any) -> Any:
        """``program(*args)`` through the executable compiled for ``key``, waited for."""
        start = time.perf_counter()
        if key not in self.compiled:
            self.compiled[key] = program.lower(*args).compile()
        middle = time.perf_counter()
        out = jax.block_until_ready(self.compiled[key](*args))
        self.compile_s += middle - start
        self.run_s += time.perf_counter() - middle
        return out


def select_best(
    df: pd.DataFrame,
    by: Sequence[str] = ("dataset", "method", "run"),
    score: str = "val_error",
    order: Sequence[str] = (),
    tie_break: str = "first",
) -> pd.DataFrame:
    """One row per ``by`` group: the row with the smallest ``score``. Ties go to the first
    (``tie_break="first"``) or last (``"last"``) row in ``order`` (sorted ascending), i.e. a
    loop that keeps the first strict improvement (or the last non-strict one)."""
    if tie_break not in ("first", "last"):
        raise ValueError(f"tie_break must be 'first' or 'last', got {tie_break!r}")
    ranked = df.sort_values([*by, score, *order], kind="stable",
                            ascending=[True] * (len(by) + 1)
                            + [tie_break == "first"] * len(order))
    return ranked.groupby(list(by), sort=True).head(1).reset_index(drop=True)


def binomial_ci(p: np.ndarray | float, n: np.ndarray | float, z: float = Z95) -> np.ndarray:
    """Half-width of the symmetric binomial (Wald) interval ``z * sqrt(p (1 - p) / n)``."""
    p = np.asarray(p, float)
    return z * np.sqrt(p * (1.0 - p) / np.asarray(n, float))


def binomial_summary(
    df: pd.DataFrame, by: Sequence[str] = ("dataset", "method"), part: str = "test"
) -> pd.DataFrame:
    """Pooled error over runs: ``error = sum(wrong) / N`` with ``N = sum(n)`` the test points of
    all runs (the mean of the runs' errors when the test sets have equal size), its binomial
    95% half-width ``ci``, the run-to-run ``std`` and the number of ``runs``. In %."""
    grouped = df.groupby(list(by), sort=False)
    out = grouped.agg(wrong=(f"{part}_wrong", "sum"), N=(f"n_{part}", "sum"),
                      runs=("run", "nunique"), std=(f"{part}_error", "std"))
    p = out["wrong"] / out["N"]
    out["error"] = 100 * p
    out["ci"] = 100 * binomial_ci(p, out["N"])
    out["std"] = 100 * out["std"]
    return out.reset_index()


def mean_ci(
    df: pd.DataFrame, value: str, by: Sequence[str] = ("dataset", "method"), z: float = Z95
) -> pd.DataFrame:
    """Mean of ``value`` over the rows of each group with the normal-approximation 95%
    half-width ``z * std / sqrt(count)`` (e.g. over runs)."""
    out = df.groupby(list(by), sort=False)[value].agg(["mean", "std", "count"])
    out["ci"] = z * out["std"] / np.sqrt(out["count"])
    return out.reset_index()


def paired_t_test(a: np.ndarray, b: np.ndarray, level: float = 0.01
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paired two-sided t-tests of ``a`` vs ``b`` (``[comparisons, runs]``, e.g. the folds'
    errors of two methods): the p-values, whether each is significant (``p < level``; a NaN p,
    e.g. from identical errors, is not) and whether ``a`` is significantly lower."""
    from scipy import stats

    a, b = np.asarray(a), np.asarray(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = stats.ttest_rel(a, b, axis=1).pvalue
    significant = np.nan_to_num(p, nan=1.0) < level
    return p, significant, significant & (a.mean(1) < b.mean(1))


def mode_setting(df: pd.DataFrame, columns: Sequence[str],
                 by: Sequence[str] = ("dataset", "method")) -> pd.DataFrame:
    """The most frequent setting (tuple of ``columns``) per group, as a string like
    ``(3,11)``, with how many runs chose it (``mode_count``); ties go to the smallest."""

    def modal(group: pd.DataFrame) -> pd.Series:
        counts = group.groupby(list(columns)).size()
        best = counts[counts == counts.max()].index[0]
        best = best if isinstance(best, tuple) else (best,)
        text = "(" + ",".join(str(int(v)) for v in best) + ")"
        return pd.Series({"mode": text, "mode_count": int(counts.max())})

    return (df.groupby(list(by), sort=False)[list(columns)]
            .apply(modal).reset_index())


def markdown_table(df: pd.DataFrame, floatfmt: str = ".2f") -> str:
    """A GitHub-flavoured markdown table of ``df`` (no extra dependency)."""

    def cell(value: Any) -> str:
        if isinstance(value, (float, np.floating)):
            return "" if np.isnan(value) else format(value, floatfmt)
        return str(value).replace("|", "\\|")

    header = "| " + " | ".join(str(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |"
            for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def paper_comparison(
    ours: pd.DataFrame,
    paper: pd.DataFrame,
    keys: Sequence[str] = ("dataset", "method"),
    tolerance: float = 2.0,
) -> pd.DataFrame:
    """Our numbers beside the paper's, one row per ``keys``.

    ``ours`` needs ``error``, ``ci`` (and optionally ``setting``); ``paper`` the same columns
    (rows it lacks show as not in paper). Adds ``diff`` (ours - paper, points), ``within`` (|diff|
    <= ``tolerance``) and ``z`` = diff / sqrt(se_ours^2 + se_paper^2), the two CIs turned back into
    standard errors. Missing values mean "not available" on that side.
    """
    merged = ours.merge(paper, on=list(keys), how="outer", suffixes=("", "_paper"))
    merged["diff"] = merged["error"] - merged["error_paper"]
    merged["within"] = pd.Series(np.where(merged["diff"].isna(), None,
                                          merged["diff"].abs() <= tolerance), dtype=object)
    se = np.sqrt((merged["ci"] / Z95) ** 2 + (merged["ci_paper"] / Z95) ** 2)
    merged["z"] = merged["diff"] / se
    return merged


def sort_rows(df: pd.DataFrame, orders: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """``df`` sorted by the position of each column's value in its ``orders`` list (first
    column first), e.g. datasets and methods in a paper's order; a fresh index."""
    keys = {f"_order_{column}": df[column].map({v: i for i, v in enumerate(order)})
            for column, order in orders.items()}
    return (df.assign(**keys).sort_values(list(keys)).drop(columns=list(keys))
            .reset_index(drop=True))


def format_error(error: float, ci: float, setting: str | float | None = None) -> str:
    """``12.34 ± 1.23 (k,h)``, or ``n/a``."""
    if error is None or (isinstance(error, float) and np.isnan(error)):
        return "n/a"
    text = f"{error:.2f} ± {ci:.2f}"
    if isinstance(setting, str) and setting:
        text += f" {setting}"
    return text


def diffprivlib_wanted(wanted: bool) -> bool:
    """``wanted``, unless diffprivlib is not installed (then say so and run dpjax only)."""
    if not wanted:
        return False
    try:
        import diffprivlib  # noqa: F401
    except ImportError:
        print("diffprivlib not installed (pip install '.[peers]'): running dpjax only")
        return False
    return True


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend (reports write PNGs only)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def take_rows(features: Any, rows: np.ndarray) -> Any:
    """``rows`` of a DataFrame (by position) or of an array."""
    return features.iloc[rows] if isinstance(features, pd.DataFrame) else features[rows]


def figure_by_dataset(df: pd.DataFrame, datasets: Sequence[str], metric: str, ylabel: str,
                      methods: Sequence[str] | None = None, log_y: bool = False) -> Any:
    """One panel per dataset: ``metric``'s mean against ``ε`` (log), one line per method (in
    ``methods``' order where given)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.4 * len(datasets), 3.6))
    means = df.groupby(["dataset", "method", "epsilon"])[metric].mean()
    for ax, name in zip(np.atleast_1d(axes), datasets, strict=True):
        present = list(means.loc[name].index.get_level_values(0).unique())
        for method in [m for m in (methods or present) if m in present]:
            series = means.loc[(name, method)]
            ax.plot(series.index, series.values, marker="o", label=method)
        ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("ε")
        ax.set_ylabel(ylabel)
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def splits_main(doc: str, stem: str, run: Callable[[int, int, bool], pd.DataFrame],
                report: Callable[[pd.DataFrame, dict], str],
                figure: Callable[[pd.DataFrame], Any], argv: list[str] | None = None) -> None:
    """The command line of an experiment over ``--splits`` splits with ``--seeds`` dpjax fits
    per split and the peers unless ``--no-peers``: run, print the report, save the results
    (tidy CSV, markdown, figure, meta) under ``stem``."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-peers", action="store_true")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    df = run(args.splits, args.seeds, not args.no_peers)
    meta = {"splits": args.splits, "seeds": args.seeds, "source_digest": source_digest(),
            "wall_s": time.perf_counter() - start}
    text = report(df, meta)
    print(text)
    save_results(stem, tidy=df, markdown=text, figure=figure(df), meta=meta)


def save_results(
    stem: str,
    *,
    tidy: pd.DataFrame | None = None,
    markdown: str | None = None,
    figure: Any = None,
    directory: Path = RESULTS_DIR,
    tables: Mapping[str, pd.DataFrame] | None = None,
    meta: Mapping[str, Any] | None = None,
    suffix: str = ".csv",
    float_format: str = "%.6g",
) -> list[Path]:
    """Write ``<stem>.csv`` (tidy rows; ``suffix`` e.g. ``".csv.gz"`` compresses it),
    ``<stem>.md`` and ``<stem>.png`` (a matplotlib figure) under ``directory``; each of
    ``tables`` as ``<stem>_<name>`` (the name carries the extension, e.g. ``grid.csv.gz``) and
    ``meta`` (facts of the run: settings, wall time, :func:`source_digest`) as ``<stem>.json``.
    Floats are written with ``float_format``. Returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    frames = {f"{stem}{suffix}": tidy,
              **{f"{stem}_{name}": df for name, df in (tables or {}).items()}}
    for name, df in frames.items():
        if df is not None:
            df.to_csv(directory / name, index=False, float_format=float_format)
            written.append(directory / name)
    if meta is not None:
        path = directory / f"{stem}.json"
        path.write_text(json.dumps(meta, indent=1) + "\n")
        written.append(path)
    if markdown is not None:
        path = directory / f"{stem}.md"
        path.write_text(markdown if markdown.endswith("\n") else markdown + "\n")
        written.append(path)
    if figure is not None:
        path = directory / f"{stem}.png"
        figure.savefig(path, dpi=120, bbox_inches="tight")
        written.append(path)
    return written


def read_results(stem: str, name: str | None = None, directory: Path = RESULTS_DIR, *,
                 suffix: str = ".csv", rates: bool = True) -> pd.DataFrame:
    """A table written by :func:`save_results` (``name=None``: the tidy ``<stem><suffix>``),
    error rates recomputed from the counts (:func:`add_error_rates`), so that reports built from
    the files equal those built in memory. ``rates=False`` keeps the rates as stored (rounded to
    the written precision), for reports that were computed from the stored values."""
    path = directory / (f"{stem}{suffix}" if name is None else f"{stem}_{name}")
    df = pd.read_csv(path)
    return add_error_rates(df) if rates else df


def read_meta(stem: str, directory: Path = RESULTS_DIR) -> dict[str, Any]:
    """The ``meta`` of :func:`save_results`."""
    return json.loads((directory / f"{stem}.json").read_text())


def source_digest() -> str:
    """Short sha256 of the dpjax sources (the library is developed alongside the experiments;
    the digest says which version produced the numbers)."""
    package = Path(dpjax.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
