"""Plans settled before the vectorised program (``docs/design.md``, "Plan, then step").

A planned learner (:attr:`~dpjax.learner.Learner.planned`) is fitted in two programs: its
*schedule* (the releases a plan reads, such as a released size, and the public schedule read
off them; a small program that reads the labels alone), then, once the host has read each
model's static plan off its released schedule, the *growth* under that plan (its shape, noise
and round count fixed: no ``lax.cond`` over a plan runs inside it). A sweep runs every model's
schedule in one program, groups the models by plan and runs each group as one vectorised
program: a model's work is its own plan's, never every plan's masked.

Within a group the models are laid out as seeds x grid points: the grid points of one seed
share its data-independent structure key (:func:`dpjax._keys.grid_keys`), so what depends on
the structure alone (random trees' routing of the rows, a cyclic round's feature) is computed
once per seed by ``vmap`` and read by every grid point of it, and statistics of the same cells
are one segment sum with the models on its last axis. A group whose seeds hold different grid
points is padded with copies of a model of the same seed (computed and dropped).

Generic over the registry: no learner is named here.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Hashable
from typing import Any

import jax
import numpy as np

from dpjax._keys import grid_keys
from dpjax._preparation import (
    Prepared,
    affordable_models,
    compile_cached,
    compiler_options,
    run_timed,
)
from dpjax._sharding import to_local


@dataclasses.dataclass(frozen=True)
class Run:
    """A fit's or a sweep's outputs with the seconds spent compiling and running them."""

    params: Any
    costs: Any
    compile_s: float
    run_s: float
    plans: Any = None
    """A planned learner's plan (a fit's; a sweep's ``[seeds][points]``), else ``None``."""


def fit_planned(prepared: Prepared, private: bool, args: tuple, options: dict[str, Any],
                run: Callable[..., Any]) -> Run:
    """One planned fit (``args``: the pure fit's ``(key, codes, y, epsilon, traced, size,
    structure_key, *weights)``): its schedule's program, the plan read on the host, then the
    growth under that plan. ``run(compiled, *args) -> (outputs, seconds)`` runs a compiled
    program (a multi-process fit's outputs made local)."""
    key, codes, y, epsilon, traced, size, structure_key, *weights = args
    schedule_fn, schedule_key = prepared.schedule_fn(private)
    schedule_args = (key, y, epsilon, traced, size, *weights)
    compiled, schedule_compile = compile_cached(schedule_fn, schedule_key, *schedule_args,
                                                options=schedule_options(schedule_args))
    (released, schedule_costs), schedule_run = run_timed(compiled, *schedule_args)
    plan = prepared.config.plan(jax.device_get(to_local(released)),
                                prepared.planning_context(private), private)
    grow_fn, grow_key = prepared.grow_fn(private, plan)
    grow_args = (key, codes, y, epsilon, traced, size, structure_key, released, *weights)
    compiled, grow_compile = compile_cached(grow_fn, grow_key, *grow_args, options=options)
    (params, costs), grow_run = run(compiled, *grow_args)
    return Run(params, _merged(to_local(schedule_costs), costs),
               schedule_compile + grow_compile, schedule_run + grow_run, plan)


def schedule_options(args: tuple) -> dict[str, Any]:
    """XLA options of a schedule's program: on CPU the quick ones
    (:data:`dpjax._preparation.QUICK_COMPILE`), whatever the data (a schedule reads the labels
    alone: its run is short, its compile the most of its time), unless
    ``$DPJAX_QUICK_COMPILE`` is ``off``."""
    return compiler_options(0.0, args, "quick")


def _merged(first: Any, then: Any) -> Any:
    """The costs of a fit's two programs, the schedule's first."""
    merged = collections.OrderedDict(first or {})
    merged.update(then or {})
    return merged


@dataclasses.dataclass(frozen=True)
class Group:
    """The models of one plan, laid out as ``seeds x width``: ``points[s][k]`` is the grid
    point of seed ``seeds[s]``'s ``k``-th model, a row padded with copies of its first model
    (``valid[s][k]`` false)."""

    plan: Hashable
    seeds: tuple[int, ...]
    points: tuple[tuple[int, ...], ...]
    valid: tuple[tuple[bool, ...], ...]


def groups(plans: list[list[Hashable]]) -> list[Group]:
    """The models of ``plans [seed][point]`` grouped by plan (in order of first appearance),
    each group's rows padded to its widest."""
    rows: dict[Hashable, dict[int, list[int]]] = {}
    for s, row in enumerate(plans):
        for p, plan in enumerate(row):
            rows.setdefault(plan, {}).setdefault(s, []).append(p)
    out = []
    for plan, by_seed in rows.items():
        width = max(len(points) for points in by_seed.values())
        seeds = tuple(by_seed)
        out.append(Group(plan, seeds,
                         tuple(tuple(by_seed[s] + [by_seed[s][0]] * (width - len(by_seed[s])))
                               for s in seeds),
                         tuple(tuple([True] * len(by_seed[s])
                                     + [False] * (width - len(by_seed[s])))
                               for s in seeds)))
    return out


def seed_chunks(group: Group, most_models: int) -> list[Group]:
    """``group`` in parts of as many seeds as hold at most ``most_models`` models (at least
    one seed each), as even as can be; a short last part is padded with copies of its first
    seed (invalid), so that every part is one compiled program's shape."""
    width = len(group.points[0])
    n_seeds = len(group.seeds)
    per_part = max(1, min(n_seeds, most_models // width))
    n_parts = -(-n_seeds // per_part)
    size = -(-n_seeds // n_parts)
    parts = []
    for start in range(0, n_seeds, size):
        rows = list(range(start, min(start + size, n_seeds)))
        pad = [rows[0]] * (size - len(rows))
        parts.append(Group(group.plan, tuple(group.seeds[r] for r in rows + pad),
                           tuple(group.points[r] for r in rows + pad),
                           tuple(group.valid[r] for r in rows)
                           + tuple((False,) * width for _ in pad)))
    return parts


def batched(fn: Callable[..., Any], by_map: bool) -> Callable[..., Any]:
    """``fn`` over a leading axis of every argument: ``vmap``, or ``lax.map`` (one model after
    another) with ``by_map``."""
    if by_map:
        return lambda *args: jax.lax.map(lambda a: fn(*a), args)
    return jax.vmap(fn)


def sweep_models(prepared: Prepared, private: bool, keys: jax.Array,
                 points: dict[str, np.ndarray], size: jax.Array, seeds_by_map: bool,
                 points_by_map: bool) -> Run:
    """Every model of a sweep: ``keys [S]`` the seeds' keys, ``points`` the grid's traced
    values (``epsilon`` and the traced hyper-parameters, ``[P]`` each). Model ``(p, s)`` fits
    with point key ``fold_in(split(k_s)[1], p)`` and structure key ``split(k_s)[0]``
    (:func:`dpjax._keys.grid_keys`), as :func:`dpjax.fit` would with those keys; a plan's
    seeds, and a seed's points, vectorised or mapped (``seeds_by_map``, ``points_by_map``).
    Returns the params and costs stacked ``[P, S, ...]`` (numpy)."""
    config = prepared.config
    n_points, n_seeds = len(points["epsilon"]), keys.shape[0]
    compiled, compile_s = compile_cached(
        lambda k: jax.vmap(lambda key: grid_keys(key, n_points))(k), ("grid_keys", n_points),
        keys)
    (structure_keys, point_keys), run_s = run_timed(compiled, keys)
    structure_data = np.asarray(jax.random.key_data(structure_keys))      # [S, 2]
    point_data = np.asarray(jax.random.key_data(point_keys))              # [S, P, 2]
    traced = tuple(n for n in points if n != "epsilon")
    schedule_costs = released = None
    if config.planned:
        schedule_fn, schedule_key = prepared.schedule_fn(private)

        def schedules(point_keys: jax.Array, y: jax.Array, values: dict[str, jax.Array],
                      size: jax.Array) -> Any:
            def one(key: jax.Array, value: dict[str, jax.Array]) -> Any:
                return schedule_fn(key, y, value["epsilon"], {n: value[n] for n in traced},
                                   size)
            return jax.vmap(lambda row: jax.vmap(one)(row, values))(point_keys)

        args = (point_keys, prepared.y, {n: jax.device_put(v) for n, v in points.items()},
                size)
        compiled, seconds = compile_cached(schedules, (schedule_key, "sweep", tuple(points)),
                                           *args, options=schedule_options(args))
        compile_s += seconds
        (released, schedule_costs), seconds = run_timed(compiled, *args)
        run_s += seconds
        released, schedule_costs = jax.device_get((released, schedule_costs))   # [S, P, ...]
        context = prepared.planning_context(private)
        plans = [[config.plan(jax.tree.map(lambda a, s=s, p=p: a[s, p], released), context,
                              private, batched=not (seeds_by_map and points_by_map))
                  for p in range(n_points)] for s in range(n_seeds)]
    else:
        plans = [[None] * n_points for _ in range(n_seeds)]
    params = costs = None
    models_at_once = 1 if seeds_by_map else affordable_models(prepared)
    for group in groups(plans):
        program, cache_key = _group_program(prepared, private, group.plan, traced,
                                            seeds_by_map, points_by_map)
        for part in seed_chunks(group, 1 if points_by_map else models_at_once):
            seeds, index = np.asarray(part.seeds), np.asarray(part.points)    # [Sc], [Sc, W]
            models = (seeds[:, None], index)
            args = (jax.random.wrap_key_data(jax.device_put(structure_data[seeds])),
                    jax.random.wrap_key_data(jax.device_put(point_data[models])),
                    {n: jax.device_put(np.asarray(v)[index]) for n, v in points.items()},
                    None if released is None else jax.device_put(_take(released, models)),
                    prepared.codes, prepared.y, size)
            compiled, seconds = compile_cached(program, cache_key, *args)
            compile_s += seconds
            fitted, seconds = run_timed(compiled, *args)
            run_s += seconds
            fitted_params, fitted_costs = jax.device_get(fitted)
            if params is None:
                params = _empty(fitted_params, n_points, n_seeds)
                costs = _empty(fitted_costs, n_points, n_seeds)
            rows, columns = np.nonzero(np.asarray(part.valid))
            for target, source in ((params, fitted_params), (costs, fitted_costs)):
                _put(target, (index[rows, columns], seeds[rows]),
                     _take(source, (rows, columns)))
    if schedule_costs is not None:
        costs = _merged(jax.tree.map(lambda a: np.swapaxes(a, 0, 1), schedule_costs), costs)
    return Run(params, costs, compile_s, run_s, plans if config.planned else None)


def _group_program(prepared: Prepared, private: bool, plan: Hashable, traced: tuple[str, ...],
                   seeds_by_map: bool, points_by_map: bool
                   ) -> tuple[Callable[..., Any], Any]:
    """The program of one plan's group: ``(structure_keys [Sg], point_keys [Sg, W], values
    {name: [Sg, W]}, released [Sg, W, ...] | None, codes, y, size) -> (params, costs)``
    stacked ``[Sg, W, ...]``: seeds outside, the grid points of a seed inside (sharing its
    structure key)."""
    if plan is None:
        fn, cache_key = prepared.fit_fn(private)
    else:
        fn, cache_key = prepared.grow_fn(private, plan)

    def program(structure_keys: jax.Array, point_keys: jax.Array,
                values: dict[str, jax.Array], released: Any, codes: jax.Array, y: jax.Array,
                size: jax.Array) -> Any:
        def one_seed(structure_key: jax.Array, keys: jax.Array, row: dict[str, jax.Array],
                     row_released: Any) -> Any:
            def one(key: jax.Array, value: dict[str, jax.Array], model_released: Any) -> Any:
                traced_values = {n: value[n] for n in traced}
                if plan is None:
                    return fn(key, codes, y, value["epsilon"], traced_values, size,
                              structure_key)
                return fn(key, codes, y, value["epsilon"], traced_values, size, structure_key,
                          model_released)
            return batched(one, points_by_map)(keys, row, row_released)
        return batched(one_seed, seeds_by_map)(structure_keys, point_keys, values, released)

    return program, ("sweep", cache_key, traced, seeds_by_map, points_by_map)


def _take(tree: Any, index: tuple) -> Any:
    """Every leaf of ``tree`` (numpy) at ``index`` of its leading axes."""
    return jax.tree.map(lambda a: np.asarray(a)[index], tree)


def _put(target: Any, index: tuple, values: Any) -> None:
    """Every leaf of ``target`` (numpy) set to ``values``' at ``index`` of its leading axes."""
    for leaf, value in zip(jax.tree.leaves(target), jax.tree.leaves(values), strict=True):
        leaf[index] = value


def _empty(tree: Any, n_points: int, n_seeds: int) -> Any:
    """Zeros ``[P, S, ...]`` shaped as ``tree``'s leaves ``[Sg, W, ...]`` (a group's
    outputs)."""
    return jax.tree.map(lambda a: np.zeros((n_points, n_seeds, *a.shape[2:]), a.dtype), tree)
