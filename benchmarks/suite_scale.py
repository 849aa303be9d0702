"""Section ``scale``: fit time and peak memory against rows, features and depth.

Synthetic data (:func:`benchmarks.suite_common.synthetic`: float32 features with values 0..9, a
noisy linear label; bounds ``[0, 9]``, ``n_bins=10``, ε = 1) at rows 1e3 .. 1e7 x features 20
and 100, for ``random_trees`` (defaults) and ``malpha`` (20 trees, depth 6). Every size runs in
a fresh interpreter (``benchmarks/suite_child.py``, with a timeout, the persistent compilation
cache off so that every compile is one): the first (compiling) fit, then warm fits (5 up to
1e5 rows, 3 at 1e6, 1 at 1e7): compile s, warm wall, ``Model.timings.run_s``, and the
interpreter's own peak resident memory (``VmHWM``; ``ru_maxrss``, also in the CSV, is at least
this suite's size, as Linux carries it over from the parent at the fork). A size is skipped (a
row says why) when ``--max-rows`` excludes it, when dpjax's own footprint check would refuse
it, or when the estimated memory (:func:`benchmarks.suite_common.memory_estimate`) exceeds
what the machine has available.

Also: the log-log slope of the warm run time against rows over the sizes >= 1e5
(``np.polyfit`` on the logs; 1 = linear); at 1e6 x 20, the memory floor of Mα-boost 20 x depth 6
(numpy reading the uint8 codes 20 trees x 6 levels = 120 times) and the warm run's ratio to it;
and fit time against depth at 1e5 x 20 (malpha 20 trees, depth 2, 4, 6, 8; random_trees depth 2,
5, 10), one interpreter per learner. The figure: warm run (and compile) seconds and peak memory
against rows, log-log.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks import harness
from benchmarks.suite_common import (
    Section,
    Settings,
    available_bytes,
    cache_env,
    fmt_mb,
    fmt_rows,
    median_or_none,
    memory_estimate,
    run_child,
    synthetic_codes,
)

LEARNERS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("random_trees", "random_trees", {}),
    ("malpha 20 x depth 6", "malpha", {"n_trees": 20, "depth": 6}),
)
MEMORY_HEADROOM = 0.9
"""A size runs only if its estimate is within this share of the available memory."""
SLOPE_FROM = 10**5


def skip_reason(method: str, params: dict[str, Any], m: int, n: int, settings: Settings
                ) -> tuple[str | None, float]:
    """``(why it is skipped or None, estimated bytes)``."""
    need, refusal = memory_estimate(method, params, m, n)
    if m > settings.max_rows:
        return f"skipped: --max-rows {settings.max_rows:,}", need
    if refusal is not None:
        return f"skipped: dpjax refuses ({refusal.split(' needs ')[-1].split(':')[0]})", need
    have = available_bytes()
    if need > MEMORY_HEADROOM * have:
        return (f"skipped: needs about {need / 2**30:.1f} GiB, {have / 2**30:.1f} GiB "
                "available"), need
    return None, need


def fit_record(base: dict[str, Any], fit: dict[str, Any]) -> dict[str, Any]:
    warm_wall = median_or_none(fit["warm_wall_s"])
    warm_run = median_or_none(fit["warm_run_s"])
    return {**base, "status": "ok", "compile_s": fit["compile_s"],
            "first_wall_s": fit["first_wall_s"], "first_run_s": fit["first_run_s"],
            "warm_wall_s": warm_wall, "run_s": warm_run,
            "host_s": None if warm_wall is None else warm_wall - warm_run,
            "repeats": len(fit["warm_wall_s"])}


def bench_sizes(settings: Settings) -> list[dict[str, Any]]:
    records = []
    for m in settings.scale_rows:
        for n in settings.scale_features:
            for label, method, params in LEARNERS:
                base = {"section": "scale", "learner": label, "rows": m, "features": n}
                reason, need = skip_reason(method, params, m, n, settings)
                base["estimate_mb"] = need / 2**20
                if reason is not None:
                    harness.log(f"scale: {label} {m} x {n}: {reason}")
                    records.append({**base, "status": reason})
                    continue
                repeats = settings.warm_repeats(m)
                timeout = (settings.big_child_timeout_s if m >= 10**7
                           else settings.child_timeout_s)
                harness.log(f"scale: {label} {m} x {n}: child (timeout {timeout:.0f}s, "
                            f"estimate {need / 2**30:.2f} GiB)")
                result = run_child({"task": "synthetic_fit", "rows": m, "features": n,
                                    "repeats": repeats,
                                    "fits": [{"method": method, "params": params}]}, timeout,
                                   cache_env("off"))
                if "error" in result or not result.get("fits"):
                    records.append({**base, "status": f"failed: {result.get('error')}",
                                    "peak_rss_mb": result.get("max_rss_mb")})
                    continue
                records.append({**fit_record(base, result["fits"][0]),
                                "gen_s": result["gen_s"],
                                "rss_before_fit_mb": result["rss_after_data_mb"],
                                "peak_rss_mb": result["max_rss_mb"],
                                "ru_maxrss_mb": result.get("ru_maxrss_mb")})
    return records


def slopes(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Log-log slope of the warm run (and warm wall) against rows, sizes >= SLOPE_FROM."""
    out = []
    keys = sorted({(r["learner"], r["features"]) for r in records})
    for learner, n in keys:
        points = [r for r in records if (r["learner"], r["features"]) == (learner, n)
                  and r["status"] == "ok" and r["rows"] >= SLOPE_FROM and r["run_s"]]
        record = {"section": "scale slope", "learner": learner, "features": n,
                  "rows": ", ".join(fmt_rows(p["rows"]) for p in points) or "-"}
        if len(points) >= 2:
            rows = np.log([p["rows"] for p in points])
            record["slope_run"] = float(np.polyfit(rows, np.log([p["run_s"] for p in points]),
                                                   1)[0])
            record["slope_wall"] = float(np.polyfit(
                rows, np.log([p["warm_wall_s"] for p in points]), 1)[0])
        out.append(record)
    return out


def memory_floor(records: list[dict[str, Any]], settings: Settings) -> dict[str, Any]:
    """numpy reading the ``floor_rows x 20`` codes ``n_trees x depth`` times, against the warm
    run of malpha 20 x depth 6 at that size."""
    label, _, params = LEARNERS[1]
    reads = params["n_trees"] * params["depth"]
    m, n = settings.floor_rows, 20
    codes = synthetic_codes(m, n)
    codes.sum(dtype=np.uint64)

    def read_all() -> None:
        for _ in range(reads):
            codes.sum(dtype=np.uint64)

    floor = harness.median([harness.timed(read_all)[1] for _ in range(3)])
    run = next((r["run_s"] for r in records if r["learner"] == label and r["rows"] == m
                and r["features"] == n and r["status"] == "ok"), None)
    return {"section": "scale floor", "learner": label, "rows": m, "features": n,
            "reads": reads, "floor_s": floor, "run_s": run,
            "ratio_to_floor": None if run is None else run / floor}


def bench_depths(settings: Settings) -> list[dict[str, Any]]:
    m, n = settings.depth_rows, 20
    plans = (("malpha", {"n_trees": 20}, settings.malpha_depths),
             ("random_trees", {}, settings.forest_depths))
    records = []
    for method, params, depths in plans:
        fits = [{"method": method, "params": {**params, "depth": d}} for d in depths]
        harness.log(f"scale: {method} depths {depths} at {m} x {n}")
        result = run_child({"task": "synthetic_fit", "rows": m, "features": n,
                            "repeats": settings.warm_repeats(m), "fits": fits},
                           settings.child_timeout_s, cache_env("off"))
        for index, depth in enumerate(depths):
            base = {"section": "scale depth", "learner": method,
                    "params": ", ".join([*(f"{k}={v}" for k, v in params.items()),
                                         "others default"]),
                    "depth": depth, "rows": m, "features": n}
            fit = result.get("fits", [])[index] if index < len(result.get("fits", [])) else None
            records.append(fit_record(base, fit) if fit else
                           {**base, "status": f"failed: {result.get('error', 'no result')}"})
    return records


def figure(records: list[dict[str, Any]]) -> Any:
    """Two log-log panels: seconds (warm run solid, compile dotted) and memory (peak solid,
    after generating the data and before the fit dotted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    groups = sorted({(r["learner"], r["features"]) for r in records})
    for index, (learner, n) in enumerate(groups):
        points = sorted((r for r in records if (r["learner"], r["features"]) == (learner, n)
                         and r["status"] == "ok"), key=lambda r: r["rows"])
        if not points:
            continue
        rows = [p["rows"] for p in points]
        color = f"C{index}"
        label = f"{learner}, {n} features"
        left.plot(rows, [p["run_s"] for p in points], "o-", color=color,
                  label=f"{label}: warm run")
        left.plot(rows, [p["compile_s"] for p in points], "x:", color=color,
                  label=f"{label}: compile")
        right.plot(rows, [p["peak_rss_mb"] for p in points], "o-", color=color,
                   label=f"{label}: peak")
        right.plot(rows, [p["rss_before_fit_mb"] for p in points], "x:", color=color,
                   label=f"{label}: before the fit (data)")
    for axis, ylabel, title in (
            (left, "seconds", "dpjax.fit time vs rows (warm run = Model.timings.run_s)"),
            (right, "peak RSS of the process, MB", "peak memory vs rows (fresh process)")):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("rows")
        axis.set_ylabel(ylabel)
        axis.set_title(title, fontsize=10)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7)
    fig.tight_layout()
    return fig


def run(settings: Settings) -> Section:
    records = bench_sizes(settings)
    slope_records = slopes(records)
    harness.log("scale: memory floor (numpy reads)")
    floor = memory_floor(records, settings)
    depth_records = bench_depths(settings)
    fmt = harness.fmt_s
    size_rows = [(r["learner"], str(r["features"]), fmt_rows(r["rows"]),
                  fmt(r.get("gen_s"), 2), fmt(r.get("compile_s"), 2),
                  fmt(r.get("first_wall_s"), 2), fmt(r.get("warm_wall_s")), fmt(r.get("run_s")),
                  fmt(r.get("host_s")), fmt_mb(r.get("rss_before_fit_mb")),
                  fmt_mb(r.get("peak_rss_mb")), fmt_mb(r.get("estimate_mb")),
                  str(r.get("repeats", "-")), r["status"]) for r in records]
    slope_rows = [(r["learner"], str(r["features"]), r["rows"],
                   "-" if r.get("slope_run") is None else f"{r['slope_run']:.2f}",
                   "-" if r.get("slope_wall") is None else f"{r['slope_wall']:.2f}")
                  for r in slope_records]
    depth_rows = [(r["learner"], r["params"], str(r["depth"]), fmt(r.get("compile_s"), 2),
                   fmt(r.get("warm_wall_s")), fmt(r.get("run_s")), r["status"])
                  for r in depth_records]
    floor_ratio = floor["ratio_to_floor"]
    floor_text = (f"{floor['learner']} at {fmt_rows(floor['rows'])} x {floor['features']}: warm "
                  f"run {fmt(floor['run_s'])} s; numpy reading the "
                  f"{floor['rows'] * floor['features'] / 1e6:.3g} MB of uint8 codes "
                  f"{floor['reads']} times (20 trees x 6 levels) {fmt(floor['floor_s'])} s; "
                  f"warm run / floor {'-' if floor_ratio is None else f'{floor_ratio:.1f}x'}")
    text = [
        "## scale: synthetic data, ε = 1, bounds [0, 9], n_bins=10", "",
        harness.md_table(("learner", "features", "rows", "data gen s", "compile s",
                          "1st fit s", "warm fit s (wall)", "run_s", "host s (wall - run)",
                          "RSS before fit MB", "peak RSS MB", "estimate MB", "warm repeats",
                          "status"), size_rows), "",
        "Each size in a fresh interpreter: compile = Model.timings.compile_s of its first "
        "fit; warm = median over the warm repeats (keys 1..); host = warm wall - run_s "
        "(dpjax's host-side preparation: feature spec, encoding to uint8, copies); peak RSS = "
        "VmHWM of that interpreter (data included; RSS before fit = after generating the "
        "float32 table); estimate = what the suite expected (table + codes + dpjax's "
        "footprint + interpreter).", "",
        f"### log-log slope of time vs rows (sizes >= {fmt_rows(SLOPE_FROM)})", "",
        harness.md_table(("learner", "features", "sizes", "slope of run_s",
                          "slope of warm wall"), slope_rows), "",
        f"### memory floor: {floor_text}", "",
        f"### time vs depth at {fmt_rows(settings.depth_rows)} x 20", "",
        harness.md_table(("learner", "params", "depth", "compile s", "warm fit s (wall)",
                          "run_s", "status"), depth_rows),
    ]
    return Section("scale", "\n".join(text), records + slope_records + [floor] + depth_records,
                   extra={"figure_records": records})
