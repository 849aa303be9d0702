"""Rows binned where they are (issue 50, item 3): a warm ``dpjax.fit`` of ``boosted`` (defaults)
on synthetic numeric rows given as a numpy array (binned on the host) and as a ``jax.Array``
(binned on its device, ``dpjax.data.device``), on the machine it runs on.

    python -m benchmarks.bench_device_rows                 # 1e6 x 20
    python -m benchmarks.bench_device_rows --rows 100000   # smaller

For each input: one compiling fit, then ``--repeats`` warm fits interleaved with the other
input's: the median wall, the median of the fit's compiled calls (``Model.timings.run_s``: the
device binning, where the rows were given on a device, and the fit's programs; the host's
binning is outside it) and their ratio, the share of the wall outside any compiled call; and
the binning alone (``dpjax.data.encode`` on the host, the device encoder's compiled call),
median of as many repeats. The two fits are checked bit for bit the same model. Writes
``benchmarks/results/bench_device_rows_<device>.md``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import dpjax
from benchmarks import harness
from benchmarks.suite_child import synthetic_kwargs
from benchmarks.suite_common import synthetic

FEATURES = 20


def measure(rows: int, repeats: int) -> tuple[str, list[dict]]:
    """The report's table and its records: for each input, one compiling fit, then
    ``repeats`` warm fits interleaved with the other input's; the binning alone."""
    from dpjax.data import encode, make_feature_spec
    from dpjax.data.device import encoder

    X, y = synthetic(rows, FEATURES)
    X, y = np.asarray(X, np.float32), np.asarray(y, np.int32)
    inputs = {"numpy array (host binning)": (X, y),
              "jax.Array (binned on its device)": (jnp.asarray(X), jnp.asarray(y))}
    kwargs = synthetic_kwargs("boosted", {}, FEATURES)
    compiles, walls, runs, models = {}, {k: [] for k in inputs}, {k: [] for k in inputs}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (a, b) in inputs.items():
            harness.log(f"{name}: compiling fit")
            models[name] = dpjax.fit(a, b, key=0, **kwargs)
            compiles[name] = models[name].timings.compile_s
        for repeat in range(repeats):
            for name, (a, b) in inputs.items():
                start = time.perf_counter()
                model = dpjax.fit(a, b, key=repeat + 1, **kwargs)
                walls[name].append(time.perf_counter() - start)
                runs[name].append(model.timings.run_s)
    same = all(np.array_equal(np.asarray(p), np.asarray(q)) for p, q in zip(
        *(jax.tree.leaves(m.params) for m in models.values()), strict=True))
    spec = make_feature_spec(X, bounds=kwargs["bounds"], n_bins=kwargs["n_bins"])
    device_X = inputs["jax.Array (binned on its device)"][0]
    device_encode = jax.jit(encoder(spec, "float32", rows))
    jax.block_until_ready(device_encode(device_X))
    host_s, device_s = [], []
    for _ in range(repeats):
        host_s.append(harness.timed(lambda: encode(spec, X))[1])
        device_s.append(harness.timed(lambda: jax.block_until_ready(
            device_encode(device_X)))[1])
    binning = dict(zip(inputs, (harness.median(host_s), harness.median(device_s)),
                       strict=True))
    hard = hard_values_agree()
    records, table = [], []
    for name in inputs:
        wall, run_s = harness.median(walls[name]), harness.median(runs[name])
        records.append({"input": name, "rows": rows, "compile_s": compiles[name],
                        "warm_wall_s": wall, "run_s": run_s, "ratio": wall / run_s,
                        "binning_s": binning[name], "same_model": same,
                        "hard_values_agree": hard})
        table.append((name, f"{compiles[name]:.2f}", f"{wall:.3f}", f"{run_s:.3f}",
                      f"{wall / run_s:.2f}x", f"{binning[name]:.3f}"))
    lines = [f"## boosted on {rows:,} x {FEATURES} numeric rows: binned on the host or on "
             "the device", "",
             f"Synthetic rows (values 0..9, declared bounds, {kwargs['n_bins']} bins), "
             f"`boosted` defaults at ε = 1; warm: median of {repeats}, the two inputs "
             f"interleaved. Same model bit for bit: {same}. Every edge, its float32 "
             f"neighbours, subnormal numbers and signed zeros binned as on the host: {hard}.",
             "",
             harness.md_table(("X and y given as", "compile s", "warm wall s",
                               "compiled calls s (run_s)", "wall / compiled calls",
                               "binning alone s"), table), "",
             "compiled calls = `Model.timings.run_s`: the device binning's program (jax.Array "
             "input) and the fit's schedule and rounds; the host binning (numpy input) is "
             "outside it. Binning alone: `dpjax.data.encode` on the host, the device "
             "encoder's compiled call."]
    return "\n".join(lines), records


def hard_values_agree() -> bool:
    """Whether this device bins every edge, its float32 neighbours, subnormal numbers, signed
    zeros and infinities of symmetric bounds (an edge at 0) as the host does (a device may
    flush subnormal numbers to zero: the device binning compares order keys)."""
    from dpjax.data import encode, make_feature_spec
    from dpjax.data.device import encode_on_device

    edges = np.linspace(-3.0, 3.0, 33).astype(np.float32)
    values = np.concatenate([edges, np.nextafter(edges, np.float32(-np.inf)),
                             np.nextafter(edges, np.float32(np.inf)),
                             np.asarray([0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1.2e-38,
                                         -1.2e-38, np.inf, -np.inf], np.float32)])
    X = np.stack([values, values[::-1]], 1)
    spec = make_feature_spec(X, bounds=(-3.0, 3.0), n_bins=32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            host = encode(spec, X)
        except ValueError:     # infinite values are refused: compare without them
            X = X[np.isfinite(X).all(1)]
            host = encode(spec, X)
        device = np.asarray(encode_on_device(spec, jnp.asarray(X)))
    return bool(np.array_equal(host, device))


def run(rows: int, repeats: int) -> str:
    load_at_start = harness.load_average()
    markdown, _ = measure(rows, repeats)
    lines = [f"# boosted on {rows:,} x {FEATURES} numeric rows: binned on the host or on the "
             "device", "", f"`python -m benchmarks.bench_device_rows --rows {rows}`", "",
             markdown.split("\n", 2)[2], "", "| environment | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in harness.environment_rows(load_at_start)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    report = run(args.rows, args.repeats)
    print(report)
    harness.write_report("bench_device_rows", report)


if __name__ == "__main__":
    main()
