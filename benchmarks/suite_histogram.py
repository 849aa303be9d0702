"""Section ``histogram``: one tree level's histogram against the memory floor.

Input: ``m x n`` uint8 codes (1e6 x 20, 10 codes each; ``--quick``: 1e5 rows), a node per row
(int32, uniform over the level's nodes) and int32 statistics ``[m, 2]``; levels of 1, 8 and 32
nodes. Programs, jitted and timed interleaved (:func:`harness.interleaved_seconds`, median of
the rounds):

* ``node_histogram`` (``dpjax.trees.histogram``): packs the codes, then scatters (what a fit
  without hoisting would pay per level);
* ``packed_histogram`` on codes packed once outside (``pack_codes`` with
  ``group = min(group_size(n_codes, n_nodes), n_features)``): the per-level cost inside a fit,
  where the packing is loop-invariant; ``pack_codes`` alone is its own row;
* ``jnp.sum`` of the codes: XLA reading them once.

The floors: numpy reading the codes once (``codes.sum(dtype=np.uint64)``, median of >= 5, the
host's), and ``jnp.sum`` reading them once on the device (on an accelerator, the floor that
counts); every row gives its ratio to both, in the same run. The packed and unpacked histograms are
checked equal (integer sums are exact).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import harness
from benchmarks.suite_common import Section, Settings, fmt_rows, synthetic_codes

N_CODES = 10
DEVICE_READ = "jnp.sum(codes): XLA reads the codes once"
FLOOR_REPEATS = 7


def numpy_floor(codes: np.ndarray, repeats: int = FLOOR_REPEATS) -> float:
    """Median seconds of numpy reading ``codes`` once (a uint64 sum)."""
    codes.sum(dtype=np.uint64)
    return harness.median([harness.timed(lambda: codes.sum(dtype=np.uint64))[1]
                           for _ in range(repeats)])


def run(settings: Settings) -> Section:
    from dpjax.trees import histogram

    m, n = settings.hist_rows, settings.hist_features
    rng = np.random.default_rng(1)
    codes_np = synthetic_codes(m, n)
    codes = jnp.asarray(codes_np)
    stats = jnp.asarray(rng.integers(0, 100, (m, 2), dtype=np.int32))
    harness.log(f"histogram: {m} x {n} codes, numpy floor")
    floor = numpy_floor(codes_np)

    programs = {DEVICE_READ:
                (lambda c: jnp.sum(c, dtype=jnp.uint32), (codes,))}
    shapes: dict[str, tuple[int, int]] = {}
    missing = [name for name in ("node_histogram", "packed_histogram", "pack_codes",
                                 "group_size") if not hasattr(histogram, name)]
    if missing:
        raise RuntimeError(f"dpjax.trees.histogram lacks {missing}")
    for n_nodes in settings.hist_nodes:
        node = jnp.asarray(rng.integers(0, n_nodes, m, dtype=np.int32))
        group = min(histogram.group_size(N_CODES, n_nodes), n)
        packed = jax.block_until_ready(jax.jit(functools.partial(
            histogram.pack_codes, n_codes=N_CODES, group=group))(codes))
        shapes[f"pack_codes (group={group})"] = (group, 0)
        programs[f"pack_codes (group={group})"] = (
            functools.partial(histogram.pack_codes, n_codes=N_CODES, group=group), (codes,))
        programs[f"node_histogram, {n_nodes} node(s) (packs inside)"] = (
            functools.partial(histogram.node_histogram, n_nodes=n_nodes, n_codes=N_CODES),
            (codes, node, stats))
        programs[f"packed_histogram, {n_nodes} node(s) (group={group})"] = (
            functools.partial(histogram.packed_histogram, n_nodes=n_nodes, n_codes=N_CODES,
                              group=group, n_features=n), (packed, node, stats))
        shapes[f"packed_histogram, {n_nodes} node(s) (group={group})"] = (group, n_nodes)
        shapes[f"node_histogram, {n_nodes} node(s) (packs inside)"] = (group, n_nodes)
    outputs: dict[str, jax.Array] = {}
    seconds = harness.interleaved_seconds(programs, settings.hist_rounds, outputs)

    agree = {}
    for n_nodes in settings.hist_nodes:
        pair = [outputs[name] for name in outputs if f", {n_nodes} node(s) " in name]
        agree[n_nodes] = bool(np.array_equal(np.asarray(pair[0]), np.asarray(pair[1])))
    device_read = seconds[DEVICE_READ]
    records = [{"section": "histogram", "program": "numpy codes.sum(dtype=uint64): the floor",
                "rows": m, "features": n, "nodes": None, "ms": 1e3 * floor, "ratio_to_floor": 1.0,
                "ratio_to_device_read": floor / device_read,
                "gb_per_s": codes_np.nbytes / floor / 1e9}]
    for name, value in seconds.items():
        group, n_nodes = shapes.get(name, (None, None))
        records.append({"section": "histogram", "program": name, "rows": m, "features": n,
                        "nodes": n_nodes or None, "group": group, "ms": 1e3 * value,
                        "ratio_to_floor": value / floor,
                        "ratio_to_device_read": value / device_read,
                        "gb_per_s": codes_np.nbytes / value / 1e9,
                        "agrees": agree.get(n_nodes) if n_nodes else None})
    rows = [(r["program"], f"{r['ms']:.2f}", f"{r['ratio_to_floor']:.1f}x",
             f"{r['ratio_to_device_read']:.1f}x", f"{r['gb_per_s']:.2f}",
             "-" if r.get("agrees") is None else str(r["agrees"])) for r in records]
    text = [f"## histogram: one level, {fmt_rows(m)} x {n} uint8 codes ({N_CODES} codes each), "
            "int32 stats [m, 2]", "",
            harness.md_table(("program", "ms (median)", "x numpy floor", "x jnp.sum",
                              "GB/s of codes", "packed == unpacked"), rows), "",
            f"floor = numpy reading the {codes_np.nbytes / 1e6:.0f} MB of codes once, median "
            f"of {FLOOR_REPEATS}; jitted programs: median of {settings.hist_rounds} "
            "interleaved rounds, compile excluded; x jnp.sum = the ratio to XLA reading the "
            "codes once on the device (the floor on an accelerator). GB/s = code bytes / time "
            "(what reading the codes alone would need)."]
    return Section("histogram", "\n".join(text), records)


MODELS = 16
"""Models of the formulations' level (:func:`formulations`)."""


def formulations(settings: Settings, models: int = MODELS, cells: int = 4) -> Section:
    """One level's histograms of ``models`` models, each with its own cells (an oblivious
    tree's level: ``cells`` left cells of a record's model), by each formulation: one model
    after another (``lax.map`` of ``packed_histogram``), every model's rows in one scatter
    (``vmap``: the ids offset, ``dpjax.privacy.fixed_point.segment_sum``'s rule), and the
    models' cells side by side (``dpjax.trees.histogram.window_histograms``, 16 lanes a
    scatter); against XLA reading the codes once. All three agree (exact integers)."""
    from dpjax.trees import histogram

    m, n = settings.hist_rows, settings.hist_features
    rng = np.random.default_rng(2)
    codes = jnp.asarray(synthetic_codes(m, n))
    group = min(histogram.group_size(N_CODES, 1), n)
    packed = jax.block_until_ready(jax.jit(functools.partial(
        histogram.pack_codes, n_codes=N_CODES, group=group))(codes))
    lane = jnp.asarray(rng.integers(0, cells, (models, m), dtype=np.int32))
    stats = jnp.asarray(rng.integers(-256, 257, (models, m), dtype=np.int32))

    def one(node: jax.Array, stat: jax.Array) -> jax.Array:
        return histogram.packed_histogram(packed, node, stat[:, None], cells, N_CODES, group,
                                          n)[..., 0]

    programs = {
        DEVICE_READ: (lambda c: jnp.sum(c, dtype=jnp.uint32), (codes,)),
        "one model after another (lax.map)": (
            lambda a, b: jax.lax.map(lambda x: one(*x), (a, b)), (lane, stats)),
        "every model's rows in one scatter (vmap, ids offset)": (jax.vmap(one), (lane, stats)),
        "the models' cells side by side (window_histograms)": (
            functools.partial(histogram.window_histograms, packed, lanes=cells,
                              n_codes=N_CODES, group=group, n_features=n), (lane, stats)),
    }
    outputs: dict[str, jax.Array] = {}
    seconds = harness.interleaved_seconds(programs, settings.hist_rounds, outputs)
    reference = np.asarray(outputs["one model after another (lax.map)"])
    device_read = seconds[DEVICE_READ]
    records = []
    for name, value in seconds.items():
        per_model = value if name == DEVICE_READ else value / models
        records.append({"section": "histogram", "program": name, "rows": m, "features": n,
                        "models": None if name == DEVICE_READ else models, "cells": cells,
                        "ms": 1e3 * value, "ms_per_model": 1e3 * per_model,
                        "ratio_to_device_read": per_model / device_read,
                        "agrees": None if name == DEVICE_READ else bool(
                            np.array_equal(np.asarray(outputs[name]), reference))})
    rows = [(r["program"], f"{r['ms']:.2f}", f"{r['ms_per_model']:.3f}",
             f"{r['ratio_to_device_read']:.1f}x",
             "-" if r["agrees"] is None else str(r["agrees"])) for r in records]
    text = [f"## histogram formulations: one level of {models} models ({cells} cells each), "
            f"{fmt_rows(m)} x {n} uint8 codes", "",
            harness.md_table(("program", "ms (median)", "ms per model", "per model x jnp.sum",
                              "agrees"), rows), "",
            f"median of {settings.hist_rounds} interleaved rounds, compile excluded; per model "
            "x jnp.sum: a model's share of the program against XLA reading the codes once."]
    return Section("histogram", "\n".join(text), records)
