"""``dpjax.fit`` and ``dpjax.sweep``.

Data flow (``docs/design.md``): user ``X, y`` -> public :class:`~dpjax.data.FeatureSpec` ->
uint8 codes -> a learner config's pure ``fit`` (jit-compiled once per config and data shape)
-> params pytree + the costs its mechanisms reported -> privacy ledger -> :class:`Model`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from dpjax import _model, _preparation
from dpjax._keys import as_key, seed_keys, seed_list
from dpjax._model import Model, Sweep, Timings
from dpjax._planning import fit_planned, sweep_models
from dpjax._preparation import (
    check_budgets,
    check_release_settings,
    compile_cached,
    compiler_options,
    ledger_of,
    prepare,
    run_timed,
)
from dpjax._private_bounds import (
    BOUNDS_STREAM,
    check_private_bounds_request,
    release_bounds,
    wants_private_bounds,
)
from dpjax._sharding import (
    local_device_count,
    process_rows,
    resolve_devices,
    shard_rows,
    shared_key,
    spans_processes,
    to_local,
)
from dpjax.learners import Learner, get_learner
from dpjax.privacy import (
    SENSITIVITY,
    BudgetAccountant,
    check_delta,
    check_epsilon,
    check_neighbouring,
)
from dpjax.privacy.accountant import reserve

__all__ = ["clear_caches", "fit", "sweep"]


def fit(
    X: Any,
    y: Any,
    *,
    method: str | Learner = "boosted",
    epsilon: float | None = 1.0,
    key: int | jax.Array | None = None,
    bounds: Any = None,
    classes: Sequence[Any] | None = None,
    n_bins: int | None = None,
    missing: str | Sequence[str] = "error",
    on_out_of_bounds: str = "clip",
    neighbouring: str = "add_remove",
    public_size: int | None = None,
    delta: float = 0.0,
    devices: int | str | Sequence[jax.Device] | None = None,
    accountant: BudgetAccountant | None = None,
    sample_weight: Any = None,
    bounds_share: float = 0.25,
    task: str = "classification",
    y_bounds: Any = None,
    **params: Any,
) -> Model:
    """Fit a differentially private tree model.

    Args:
      X: 2-D table: pandas DataFrame, numpy or JAX array.
      y: labels, 1-D.
      method: learner name: ``"boosted"`` (the default: private Newton boosting, its shape
        chosen from public facts; the softmax loss for more than two declared classes),
        ``"random_trees"`` (Bojarski et al.'s DP random forests),
        ``"malpha"`` (Nock & Henecka's Mα-boost, binary labels), ``"rf_laplace"`` /
        ``"rf_exponential"`` (their RF-L / RF-E baselines), ``"smooth_boost"`` (LazyBregBoost
        with DP-1R stumps, binary labels), ``"rule_list"`` (DP greedy rule lists, Ly et al.,
        binary labels); or a learner config such as
        ``dpjax.learners.Boosted(shape="random")`` (``params`` then override its fields).
      epsilon: total privacy budget (the paper's ``eta`` for random trees). ``None`` fits
        without privacy and must be asked for explicitly.
      key: ``None`` (default) draws fresh OS entropy: use it for anything you release. An int
        seed or a ``jax.random`` key gives a reproducible model, for experiments only: anyone
        who knows the key can recompute the noise, which voids the guarantee.
      bounds: public feature bounds: ``(lower, upper)`` per-feature arrays (or scalars for every
        feature), or a dict column -> ``(lo, hi)`` tuple or category *list*, or ``"data"`` (not
        private; warns), or ``"private"`` (every numeric column; or ``"private"`` as a dict
        value for some): their 5% and 95% points released with a share ``bounds_share`` of
        ``epsilon`` before the fit (:mod:`dpjax.mechanisms.quantiles`; a ledger entry; values
        outside are clipped). Required for numeric features when ``epsilon`` is set.
      classes: the declared class labels (public). Default: ``(False, True)`` for boolean
        labels and ``(0, 1)`` for numeric ones (other numeric labels are an error: declare
        them); labels of any other type are read off ``y`` with a warning (not private), as
        are any labels with ``classes="data"``.
      n_bins: equal-width bins per numeric feature (1..255); default the learner's
        ``default_bins`` (32 for ``boosted``, which merges adjacent bins where the data is
        small for the noise; 10 for the others).
      missing: ``"error"``, ``"code"`` or the list of columns that may hold missing values.
      on_out_of_bounds: ``"clip"`` (default; numeric values outside ``bounds`` are clipped and
        unknown categories coded as "other", with a warning that prints no value) or
        ``"error"`` (opt-in: an exception whose raising depends on a record is not private).
        It applies to the training data: prediction always clips.
      neighbouring: ``"add_remove"`` or ``"replace_one"`` (alias ``"substitute"``)
        neighbouring datasets; replace-one doubles the count and split sensitivities.
      public_size: the number of training rows, if it is public (a fixed-size study). Under
        add/remove neighbours the row count is private, so learners that need it (``malpha``)
        release a noisy count with a small share of ``epsilon`` unless it is declared here;
        under replace-one it is public anyway.
      delta: the ``δ`` of an ``(ε, δ)`` budget, in ``[0, 1)``. ``boosted`` composes its
        releases in zCDP when that buys more noise-free budget than basic composition (many
        rounds) and the ledger then spends ``δ``; ``rule_list``'s smooth and Gaussian
        selections need it; the other learners are pure ``ε``-DP and spend none of it.
      devices: split the rows across devices (``"all"``, a count, or a list of devices;
        :mod:`dpjax._sharding`): the same program runs on every device's rows and sums its
        histograms across them; the model is bit-identical to the one-device fit under the
        same key. The rows are padded to a multiple of the device count with rows that the
        learners ignore (regression, which cannot pad, needs ``neighbouring="replace_one"``
        and a row count that splits evenly). Default: one device.
      accountant: a :class:`dpjax.BudgetAccountant` to spend from: the fit is refused before
        any work if its ``(epsilon, delta)`` would exceed the accountant's total, and its
        ledger is recorded there.
      sample_weight: record weights in ``[0, 1]``, one per row, for the learners whose counts
        take them at unchanged sensitivity (the forests: ``random_trees``, ``rf_laplace``,
        ``rf_exponential``); weights count in units of ``2**-8`` of a record (rounded down).
        Other learners refuse them.
      task: ``"classification"`` (default) or ``"regression"`` (``method="boosted"``: the
        squared loss, residuals clipped at ``residual_clip`` half-ranges, a released mean as
        the prior; ``predict`` returns values in ``y_bounds``, ``score`` the R²).
      y_bounds: the public range ``(lo, hi)`` of a regression target (required under DP):
        it sets the noise; values outside are clipped into it with a warning (or refused with
        ``on_out_of_bounds="error"``). ``"data"`` reads it off ``y`` (not private; warns).
      bounds_share: the share of ``epsilon`` that ``bounds="private"`` spends (0.25). Its
        ``2n`` selections (``n`` numeric columns) find the 5% and 95% points reliably from
        about ``760·n/(bounds_share·epsilon)`` rows (below that a range may come out far too
        wide): declare bounds where they are known.
      **params: the method's hyper-parameters: the fields of its config class
        ``dpjax.LEARNERS[method]``, each documented there (random_trees:
        :class:`dpjax.learners.RandomTrees`, ``n_trees``, ``depth``, ``voting``, ...; boosted:
        :class:`dpjax.learners.Boosted`, ``shape``, ``learning_rate``, ``regularisation``, ...;
        malpha: :class:`dpjax.learners.MalphaBoosted`, ``alpha`` (``"oc"`` or in (0, 1]),
        ``beta_tree``, ``budget``, ...; smooth_boost: :class:`dpjax.learners.SmoothBoost`,
        ``n_rounds``, ``kappa``, ...; rule_list: :class:`dpjax.learners.RuleListLearner`,
        ``max_rules``, ``selection``, ...).
    """
    if epsilon is not None:
        epsilon = check_epsilon(epsilon)
    check_release_settings([epsilon], check_delta(delta), key is not None)
    # the request is reserved before any work and closed with the ledger before the model
    # is returned; a fit that fails gives it back (dpjax.privacy.accountant)
    name = getattr(method, "name", str(method))
    label = "" if epsilon is None else f"{name} at epsilon {epsilon:g}"
    with reserve(accountant, epsilon, delta, neighbouring=neighbouring, method=name,
                 label=label) as reservation:
        chosen_devices = resolve_devices(devices)
        key = shared_key(chosen_devices, as_key(key))
        # several processes: every process's rows (one gather, for the checks and the padding)
        counts = (process_rows(chosen_devices, np.shape(X)[0]) if spans_processes(chosen_devices)
                  else None)
        fit_epsilon, bounds_costs, released_columns = epsilon, {}, ()
        private_bounds = wants_private_bounds(bounds)
        if private_bounds and spans_processes(chosen_devices):
            raise ValueError("bounds='private' reads one process's rows: with devices of several "
                             "processes declare the bounds")
        if private_bounds:
            check_private_bounds_request(epsilon, delta, on_out_of_bounds)
            bounds, fit_epsilon, bounds_costs, released_columns = release_bounds(
                jax.random.fold_in(key, BOUNDS_STREAM), X, bounds, epsilon, bounds_share,
                SENSITIVITY[check_neighbouring(neighbouring)])
        # a tenth of the records lie outside a released 5%-95% range: its columns clip silently
        prepared = prepare(X, y, method=method, epsilon=epsilon, bounds=bounds, classes=classes,
                           n_bins=n_bins, missing=missing, on_out_of_bounds=on_out_of_bounds,
                           neighbouring=neighbouring, params=params, public_size=public_size,
                           delta=delta, sample_weight=sample_weight, task=task, y_bounds=y_bounds,
                           pad=True, process_rows=counts,
                           devices=1 if chosen_devices is None else local_device_count(
                               chosen_devices), released=released_columns)
        if bounds_costs:
            prepared = dataclasses.replace(prepared,
                                           ledger=prepared.ledger.with_costs(bounds_costs))
        fn, cache_key = prepared.fit_fn(private=epsilon is not None)
        arrays = (prepared.codes, prepared.y) + (() if prepared.weights is None else
                                                 (prepared.weights,))
        codes, labels, *weights = shard_rows(chosen_devices, *arrays, n_rows=prepared.rows)
        args = (key, codes, labels, jax.device_put(np.float32(fit_epsilon or 1.0)),
                prepared.traced_values(), prepared.size_value(), None, *weights)
        options = compiler_options(prepared.public_work(epsilon is not None), args,
                                   prepared.config.cpu_compile)
        plan = None
        if prepared.config.planned:     # the schedule, the plan on the host, then the growth
            run = fit_planned(prepared, epsilon is not None, args, options,
                              lambda compiled, *a: to_local(run_timed(compiled, *a)))
            fitted, costs, compile_s, run_s = run.params, run.costs, run.compile_s, run.run_s
            plan = run.plans
        else:
            compiled, compile_s = compile_cached(fn, cache_key, *args, options=options)
            (fitted, costs), run_s = to_local(run_timed(compiled, *args))
        ledger = ledger_of(prepared, epsilon, costs, plan=plan)
        reservation.commit([(ledger, label)], name)
        # the compiled calls: the rows' binning on their device, the fit's programs
        return Model(prepared.config, fitted, prepared.spec, prepared.classes, ledger,
                     Timings(compile_s + prepared.encoding[0], run_s + prepared.encoding[1]),
                     prepared.target)


def sweep(
    X: Any,
    y: Any,
    *,
    method: str | Learner = "boosted",
    epsilon: float | Sequence[float] | None,
    seeds: int | Sequence[int] | None = None,
    bounds: Any = None,
    classes: Sequence[Any] | None = None,
    n_bins: int | None = None,
    missing: str | Sequence[str] = "error",
    on_out_of_bounds: str = "clip",
    neighbouring: str = "add_remove",
    public_size: int | None = None,
    delta: float = 0.0,
    accountant: BudgetAccountant | None = None,
    task: str = "classification",
    y_bounds: Any = None,
    parallel: str = "auto",
    **params: Any,
) -> Sweep:
    """Fit every combination of ``epsilon`` and of the method's traced hyper-parameters given
    as sequences (boosted: ``learning_rate``, ``regularisation``; malpha: ``alpha``,
    ``beta_tree``; smooth_boost: ``kappa``, ``learning_rate``, ``min_signal``) with every
    seed, vectorised: one compiled program per plan (:mod:`dpjax._planning`: a planned
    learner's schedules run first, in one program, and the models that took the same plan run
    together, each with its own plan's work alone; other learners are one program).

    Static hyper-parameters (shapes: trees, depth, bins) are fixed for the sweep. ``epsilon``
    is one budget, a sequence, or ``None`` (non-private fits; must be asked for explicitly).

    Every model is its own release with its own noise key (``grid_keys``: grid point ``i``
    of seed key ``k`` fits with ``fold_in(split(k)[1], i)``); data-independent structure, such
    as random trees' splits, is drawn from ``split(k)[0]`` and shared along the grid, which
    costs no privacy. Releasing several models of a sweep spends the sum of their ledgers.

    ``seeds``: ``None`` (default) draws one seed from OS entropy — use it for anything you
    release. A count ``k`` (seeds ``0..k-1``) or a sequence of int seeds is for experiments
    only: anyone who knows a seed can recompute the noise, which voids the guarantee. With an
    ``accountant`` every model of the sweep (grid point x seed) spends from it. Other
    arguments as :func:`fit`.

    ``parallel`` says how the models of a plan run: ``"vmap"`` vectorised, ``"map"`` one
    after another, ``"auto"`` (the default) by the backend (:func:`sweep_layout`). Every
    choice gives the same models bit for bit; only time and memory differ.
    """
    if wants_private_bounds(bounds):
        raise ValueError("bounds='private' is dpjax.fit's: a sweep's models share one binning, "
                         "so release the bounds once (e.g. a dpjax.fit with bounds='private', "
                         "then its model.spec's ranges) and declare them here")
    traced_names = get_learner(method).traced_names()
    private = epsilon is not None
    epsilons = check_budgets(epsilon) if private else [None]
    check_release_settings(epsilons, check_delta(delta), seeds is not None)
    traced = {n: list(params.pop(n)) for n in traced_names
              if isinstance(params.get(n), (list, tuple, np.ndarray))}
    names = ("epsilon", *traced)
    grid = tuple(dict(zip(names, point, strict=True))
                 for point in itertools.product(epsilons, *traced.values()))
    # every grid value must be a valid setting on its own; its ledger reads the checked values
    configs = tuple(get_learner(method, {**params, **{n: point[n] for n in traced}})
                    for point in grid)
    seeds = seed_list(seeds)
    seeds_by_map, points_by_map = sweep_layout(parallel)
    name = getattr(method, "name", str(method))
    # every model's request reserved before any work, closed with its ledger (fit's comment)
    with reserve(accountant, [g["epsilon"] for g in grid], delta, count=len(seeds),
                 neighbouring=neighbouring, method=name,
                 label=f"sweep {name}: {len(grid)} point(s) x {len(seeds)} seed(s)"
                 ) as reservation:
        prepared = prepare(X, y, method=method, epsilon=max(epsilons) if private else None,
                           bounds=bounds, classes=classes, n_bins=n_bins, missing=missing,
                           on_out_of_bounds=on_out_of_bounds, neighbouring=neighbouring,
                           params=params, public_size=public_size, delta=delta,
                           batch=1 if points_by_map else len(grid),    # one seed's models
                           task=task, y_bounds=y_bounds, pad=True)
        encoded = [prepared.traced_values(config) for config in configs]
        points = {n: np.stack([np.asarray(e[n]) for e in encoded]) for n in traced_names}
        points["epsilon"] = np.asarray([g["epsilon"] or 1.0 for g in grid], np.float32)
        # every model's schedule, the plans on the host, one vectorised program per plan
        run = sweep_models(prepared, private, seed_keys(seeds), points, prepared.size_value(),
                           seeds_by_map, points_by_map)
        # each seed's model has its own ledger (its releases may differ: a schedule read off a
        # released size); the grid point reports the seed that spent the most
        every = seed_ledgers(prepared, grid, configs, run.costs, len(seeds), run.plans)
        reservation.commit([(ledger, f"sweep {prepared.config.name} {point} seed {seed}")
                            for point, row in zip(grid, every, strict=True)
                            for seed, ledger in zip(seeds, row, strict=True)], prepared.config.name)
        ledgers = tuple(max(row, key=lambda ledger: ledger.epsilon) for row in every)
        return Sweep(configs, jax.device_put(run.params), grid, seeds, prepared.spec,
                     prepared.classes, ledgers, Timings(run.compile_s + prepared.encoding[0],
                                                        run.run_s + prepared.encoding[1]),
                     prepared.target, tuple(tuple(row) for row in every))


PARALLEL = ("auto", "vmap", "map")


def sweep_layout(parallel: str) -> tuple[bool, bool]:
    """``(seeds_by_map, points_by_map)``: whether a plan's seeds, and a seed's grid points,
    run one after another (``lax.map``) rather than vectorised. ``"vmap"`` and ``"auto"``
    vectorise both (a plan's models share every read of the codes, and a seed's points share
    its structure; as many seeds at once as the memory limit allows), ``"map"`` maps both.
    (Seeds mapped around vectorised points compiled some float operations differently here,
    last bits apart from a single fit's, so no layout mixes the two.)"""
    if parallel not in PARALLEL:
        raise ValueError(f"parallel must be one of {PARALLEL}, got {parallel!r}")
    return (parallel == "map",) * 2


def seed_ledgers(prepared: Any, grid: Sequence[dict[str, Any]], configs: Sequence[Learner],
                 costs: Any, n_seeds: int, plans: Any = None) -> list[list[Any]]:
    """Every model's ledger ``[grid][seeds]`` from the sweep's stacked costs (leaves
    ``[grid, seeds, ...]``) and a planned learner's ``plans [seeds][grid]``: one transfer to
    the host, and one ledger per grid point and *distinct* row of costs and plan (seeds whose
    releases cost the same under one plan share it), so that host time grows with the
    distinct costs, not with the number of models."""
    host = jax.device_get(costs)
    leaves = jax.tree.leaves(host)
    flat = np.concatenate([np.asarray(leaf, np.float64).reshape(len(grid), n_seeds, -1)
                           for leaf in leaves], axis=-1) if leaves else np.zeros(
        (len(grid), n_seeds, 0))
    every = []
    for i, (point, config) in enumerate(zip(grid, configs, strict=True)):
        plan = [None if plans is None else plans[j][i] for j in range(n_seeds)]
        keys = [(flat[i, j].tobytes(), plan[j]) for j in range(n_seeds)]
        distinct: dict[tuple, Any] = {}
        for j, key in enumerate(keys):
            if key not in distinct:
                distinct[key] = ledger_of(prepared, point["epsilon"],
                                          jax.tree.map(lambda a, i=i, j=j: a[i, j], host),
                                          config, plan[j])
        every.append([distinct[key] for key in keys])
    return every


def clear_caches() -> None:
    """Drop every compiled fit and prediction program, dpjax's and JAX's. Each XLA CPU
    executable holds memory mappings (code pages); a long process that compiles many distinct
    shapes or configurations (a test suite, a large experiment) can otherwise reach the
    kernel's limit (``vm.max_map_count``) and crash in the compiler. Later fits recompile."""
    _preparation._COMPILED.clear()
    for cached in (_model._jitted_proba, _model._jitted_decision, _model._jitted_predict,
                   _model._jitted_sweep):
        cached.cache_clear()
    jax.clear_caches()
