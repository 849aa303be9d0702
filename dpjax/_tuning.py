"""``dpjax.tune``: private hyper-parameter selection with a proven total cost (``docs/tuning.md``).

Liu & Talwar (2019), "Private selection from private candidates" (STOC), Theorem 3.4 (random
stopping): let ``Q`` be an ``ε_c``-DP mechanism that outputs a candidate and a score. Run ``Q``
again and again, independently, stopping after each run with probability ``γ`` (``K``, the
number of runs, is geometric on ``{1, 2, ...}`` with mean ``1/γ``, drawn independently of the
data), and output the candidate of the highest score seen. This is ``3·ε_c``-DP, whatever
``γ ∈ (0, 1]`` and however many runs ``K`` turns out to be.

One run ``Q`` here: a candidate is a random draw of the learner's *traced* hyper-parameters
(:meth:`dpjax.learner.Learner.traced_names`) from a public search space
(:class:`SearchSpace`); the candidate is fitted at ``ε_c`` on the *training part* of the data and
its score is released: the number of correct predictions on the *validation part* plus exact
discrete Laplace noise of sensitivity 1 at ``ε_c`` (:func:`dpjax.mechanisms.laplace_mechanism`,
integer release). ``ε_c = ε/3`` rounded down (:func:`dpjax.privacy.rounding.round_down`), so
the ledger's ``3·ε_c`` never exceeds ``ε``.

Why one run is ``ε_c``-DP (and the theorem applies). The two parts are chosen by i.i.d. coins,
one per row, drawn from the key alone (probability ``validation_share`` of the validation part):
the same split serves every run. Fix the coins. A neighbouring dataset differs in one record,
and that record lies in one part: in the training part it changes the fit (an ``ε_c``-DP
mechanism of the training part) and leaves the validation rows alone; in the validation part it
leaves the fit alone and moves the correct count by at most 1 (added or removed, or replaced:
one record's prediction is right or wrong, so the count's sensitivity is 1 under replace-one
too), which the noise covers at ``ε_c``. Parallel composition over the disjoint parts: the run
is ``ε_c``-DP. Every run has its own keys (candidate draw, fit noise, score noise, random
structure), so the runs are independent draws of one mechanism ``Q_c`` (for the fixed coins),
and the theorem gives ``3·ε_c`` for the fixed coins. Under add/remove the coins of the
neighbour's other records are distributed as those of the dataset's own records (i.i.d. coins
per position: the record's own coin is independent of theirs), so the two datasets can be
coupled on the coins of the shared records; the coins never read the data, and mixing over
them keeps the bound: ``P[A(D) ∈ S] = E_c P[A_c(D) ∈ S] <= e^{3ε_c} E_c P[A_c(D') ∈ S]``.

Ties (equal noisy counts) go to the earlier run; docs/tuning.md carries the theorem's proof for
that rule (the two ``CDF`` factors become ``P[score < q]`` and ``P[score <= q]``, each moved by
at most ``e^{ε_c}``).

``K`` and the index of the chosen run are **secret**: the theorem bounds the best (candidate,
model, score) with ``K`` summed over. Released beside it they are not covered (the best of a
known ``k`` runs costs up to ``k·ε_c``; a privacy review measured ε ≥ 2.1 at a claimed 1 for
the output with ``K``), so neither the ledger nor the model states them, and the model's
``timings.run_s`` (which grows with ``K``) is NaN. The wall-clock time of the call, and how
many times a ``candidates`` callable is called (``8·⌈K/8⌉``), also reveal ``K``: do not publish
them.

``K`` is never capped: a truncated geometric is another algorithm, with another bound. The
run time grows with ``K`` (``P[K > k] = (1 − γ)^k``). Runs are fitted in chunks of
:data:`CHUNK` candidates by one compiled program (vmapped, or mapped for learners whose pure
fit decides a plan in the program, ``Learner.planned``), reused for every chunk; the last
chunk's unused slots are computed and discarded (their scores never read).

This module names no learner (``docs/design.md#layout``): the search space is derived from the
registered config's traced fields.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpjax._keys import as_key
from dpjax._model import Model, Timings
from dpjax._preparation import (
    Prepared,
    check_release_settings,
    compile_cached,
    prepare,
    run_timed,
)
from dpjax._private_bounds import wants_private_bounds
from dpjax.learner import unit_interval
from dpjax.learners import Learner, get_learner
from dpjax.mechanisms import laplace_mechanism
from dpjax.privacy import BudgetAccountant, LedgerEntry, PrivacyLedger, check_epsilon
from dpjax.privacy.accountant import reserve
from dpjax.privacy.rounding import round_down

__all__ = ["CHUNK", "MECHANISM", "SPREAD", "SearchSpace", "search_space", "stopping_count",
           "tune"]

CHUNK = 8
"""Candidates fitted by one call of the compiled chunk program."""
SPREAD = 4.0
"""The default search space: each traced hyper-parameter within a factor ``SPREAD`` of its
default (log-uniform), or its odds within that factor for a share in ``(0, 1)``."""
MECHANISM = "random stopping (Liu & Talwar 2019, Thm 3.4)"
"""The ledger's name of the selection."""
SCORE_SENSITIVITY = 1
"""L1 sensitivity of a run's released score (the validation count of correct predictions) under
either neighbouring relation."""
STOP_BLOCK = 64
"""Stopping coins drawn per key (``fold_in(stop_key, block)``)."""
_TINY = float(np.finfo(np.float32).tiny)


# --- the stopping rule --------------------------------------------------------------------

def _stop_threshold(stop_probability: float) -> int:
    """A coin is heads when a uniform 32-bit word is ``<= threshold``: heads with probability
    ``γ' = ceil(γ·2**32) / 2**32`` (``γ`` rounded up to a multiple of ``2**-32``; 1 exactly
    for ``γ = 1``). The theorem holds for every stopping probability in ``(0, 1]``."""
    return min(math.ceil(stop_probability * 2**32), 2**32) - 1


def stop_coins(stop_key: jax.Array, block: Any, threshold: int) -> jax.Array:
    """The stopping coins of runs ``STOP_BLOCK·block ... STOP_BLOCK·(block + 1) − 1``: bool
    ``[STOP_BLOCK]``, heads (stop after that run) i.i.d. with probability ``γ'``. Reads only the
    key (jittable; ``block`` may be traced)."""
    bits = jax.random.bits(jax.random.fold_in(stop_key, block), (STOP_BLOCK,), jnp.uint32)
    return bits <= jnp.uint32(threshold)


def stopping_count(stop_key: jax.Array, stop_probability: float) -> int:
    """``K``, the number of runs: the index of the first heads among the stopping coins, plus
    one — geometric on ``{1, 2, ...}`` with ``P[K = k] = (1 − γ')^(k−1)·γ'``, mean ``1/γ'``.
    A function of the key alone (it never sees the data), and never capped."""
    threshold = _stop_threshold(stop_probability)
    for block in itertools.count():
        coins = np.asarray(stop_coins(stop_key, block, threshold))
        if coins.any():
            return STOP_BLOCK * block + int(np.argmax(coins)) + 1
    raise AssertionError("unreachable")


def run_keys(runs_key: jax.Array, run: Any) -> tuple[jax.Array, jax.Array]:
    """``(candidate_key, noise_key)`` of run ``run``: ``split(fold_in(runs_key, run))``. Every
    run has its own keys: no two runs share a draw."""
    candidate_key, noise_key = jax.random.split(jax.random.fold_in(runs_key, run))
    return candidate_key, noise_key


def validation_coins(split_key: jax.Array, m: int, validation_share: float) -> np.ndarray:
    """bool ``[m]``: row ``i`` is in the validation part, i.i.d. with probability
    ``validation_share`` (drawn from the key and the row count alone)."""
    return np.asarray(jax.random.bernoulli(split_key, validation_share, (m,)))


# --- the candidates ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Dimension:
    """One varied hyper-parameter: ``kind`` ``"log"`` (log-uniform on ``[low, high]``),
    ``"logit"`` (odds log-uniform on ``[low, high]``, the value ``odds / (1 + odds)``) or
    ``"list"`` (uniform over ``values``; ``encoded`` their float32 codes)."""

    name: str
    kind: str
    low: float = 0.0
    high: float = 0.0
    values: tuple[Any, ...] = ()
    encoded: tuple[float, ...] = ()

    def draw(self, key: jax.Array) -> jax.Array:
        """One encoded value, float32 (jittable)."""
        if self.kind == "list":
            index = jax.random.randint(key, (), 0, len(self.encoded))
            return jnp.asarray(self.encoded, jnp.float32)[index]
        log_value = jax.random.uniform(key, (), jnp.float32, math.log(self.low),
                                       math.log(self.high))
        value = jnp.exp(log_value)
        if self.kind == "logit":
            value = jnp.clip(value / (1.0 + value), _TINY, 1.0 - 2.0**-24)
        return jnp.clip(value, _TINY, jnp.float32(np.finfo(np.float32).max)).astype(
            jnp.float32)

    def decode(self, value: float) -> Any:
        """The hyper-parameter's value of an encoded draw."""
        if self.kind == "list":
            return self.values[self.encoded.index(float(np.float32(value)))]
        return float(value)

    def describe(self) -> str:
        if self.kind == "list":
            return f"{self.name} uniform over {list(self.values)}"
        if self.kind == "log":
            return f"{self.name} log-uniform on [{self.low:.4g}, {self.high:.4g}]"
        return (f"{self.name} in (0, 1), odds log-uniform on [{self.low:.4g}, "
                f"{self.high:.4g}]")


@dataclasses.dataclass(frozen=True)
class SearchSpace:
    """The distribution of one run's candidate (public: it never reads the data).

    ``dimensions`` are drawn independently (dimension ``i`` from ``fold_in(key, i)``);
    ``fixed`` holds the other traced hyper-parameters (encoded), and ``user`` a callable
    ``key -> {name: value}`` that replaces the dimensions when given.
    """

    config: Learner
    dimensions: tuple[Dimension, ...]
    fixed: Mapping[str, float]
    user: Callable[[jax.Array], Mapping[str, Any]] | None = None

    def draw(self, key: jax.Array) -> dict[str, jax.Array]:
        """Every traced hyper-parameter of one candidate, encoded float32 (jittable unless
        ``user`` is set)."""
        if self.user is not None:
            return {n: jnp.float32(v) for n, v in self.encode(self.user_values(key)).items()}
        point = {n: jnp.float32(v) for n, v in self.fixed.items()}
        for i, dimension in enumerate(self.dimensions):
            point[dimension.name] = dimension.draw(jax.random.fold_in(key, i))
        return point

    def user_values(self, key: jax.Array) -> dict[str, Any]:
        """The user callable's candidate, checked (names and values)."""
        values = self.user(key)
        if not isinstance(values, Mapping):
            raise ValueError(f"candidates(key) must return a dict of traced hyper-parameters; "
                             f"got {type(values).__name__}")
        check_names(self.config, values, "candidates(key)")
        self.config.replace(**values)      # each value checked by its field
        return dict(values)

    def encode(self, values: Mapping[str, Any]) -> dict[str, float]:
        """All traced hyper-parameters encoded: ``values`` over the fixed ones."""
        config = self.config.replace(**values)
        return {n: config.encode_traced(n) for n in self.config.traced_names()}

    def decode(self, point: Mapping[str, Any]) -> dict[str, Any]:
        """The varied hyper-parameters' values of a drawn (encoded) candidate."""
        return {d.name: d.decode(point[d.name]) for d in self.dimensions}

    def describe(self) -> str:
        if self.user is not None:
            return "candidates drawn by the user's callable"
        return "; ".join(d.describe() for d in self.dimensions) or "no varied hyper-parameter"


def check_names(config: Learner, names: Any, argument: str) -> None:
    """Refuse names that are not traced hyper-parameters of ``config``, naming them."""
    traced = set(config.traced_names())
    static = sorted(n for n in names if n not in traced and n in config.hyperparams)
    unknown = sorted(n for n in names if n not in config.hyperparams)
    if unknown:
        raise ValueError(f"{argument}: method {config.name!r} has no hyper-parameter(s) "
                         f"{unknown}; its traced ones are {sorted(traced)}")
    if static:
        raise ValueError(f"{argument}: {static} of {config.name} are static (they set shapes "
                         f"or code paths); tune draws traced hyper-parameters only "
                         f"({sorted(traced)}): pass static ones as keywords")


def _valid(config: Learner, name: str, value: float) -> bool:
    try:
        config.replace(**{name: value})
    except (ValueError, TypeError):
        return False
    return True


def default_dimension(config: Learner, name: str) -> Dimension | None:
    """The default search range of one traced hyper-parameter (``None``: kept at its value):
    log-uniform on ``[d/SPREAD, d·SPREAD]`` around its value ``d > 0``; for a share (a value
    in ``(0, 1)`` whose field refuses ``d·SPREAD``) the odds ``d/(1 − d)`` log-uniform within
    the same factor; zero and non-numeric values stay fixed."""
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or value <= 0:
        return None
    value = float(value)
    if _valid(config, name, value * SPREAD) and _valid(config, name, value / SPREAD):
        return Dimension(name, "log", value / SPREAD, value * SPREAD)
    if value < 1.0:
        odds = value / (1.0 - value)
        return Dimension(name, "logit", odds / SPREAD, odds * SPREAD)
    return None


def search_space(config: Learner, candidates: Any = None,
                 fixed: Sequence[str] = ()) -> SearchSpace:
    """The candidates' distribution for ``config``.

    ``candidates``: ``None`` (the default space: :func:`default_dimension` for each traced
    hyper-parameter not named in ``fixed``), a dict ``name -> list of values`` (each drawn
    uniformly and independently; the others stay at ``config``'s values) or a callable
    ``key -> {name: value}``. Errors name the argument and the offending names."""
    traced = config.traced_names()
    fixed_values = {n: config.encode_traced(n) for n in traced}
    if candidates is None:
        dimensions = tuple(d for n in traced if n not in fixed
                           for d in [default_dimension(config, n)] if d is not None)
        return SearchSpace(config, dimensions, {n: v for n, v in fixed_values.items()
                                                if n not in {d.name for d in dimensions}})
    if callable(candidates):
        return SearchSpace(config, (), fixed_values, candidates)
    if not isinstance(candidates, Mapping):
        raise ValueError(f"candidates must be None, a dict name -> list of values, or a "
                         f"callable key -> dict; got {type(candidates).__name__}")
    check_names(config, candidates, "candidates")
    both = sorted(set(candidates) & set(fixed))
    if both:
        raise ValueError(f"candidates: {both} also given as keyword(s): pass each "
                         "hyper-parameter one way")
    dimensions = []
    for name, values in candidates.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence | np.ndarray):
            raise ValueError(f"candidates[{name!r}] must be a list of values, got {values!r}")
        values = tuple(np.asarray(values, dtype=object).reshape(-1).tolist())
        if not values:
            raise ValueError(f"candidates[{name!r}] is empty")
        encoded = tuple(float(np.float32(config.traced_value(name, v))) for v in values)
        dimensions.append(Dimension(name, "list", values=values, encoded=encoded))
    return SearchSpace(config, tuple(dimensions),
                       {n: v for n, v in fixed_values.items() if n not in candidates})


# --- one run --------------------------------------------------------------------------------

def run_function(part: Prepared) -> Callable[..., Any]:
    """One run ``Q``, pure and jittable: ``run(noise_key, point, epsilon, codes, y,
    val_codes, val_y, size) -> (params, costs, score, score_epsilon)``: the candidate
    ``point`` (every traced hyper-parameter, encoded) fitted at ``epsilon`` on the training part
    ``(codes, y)`` (``part``'s spec, classes and size), and its released score, the correct
    predictions on ``(val_codes, val_y)`` plus exact discrete Laplace noise (sensitivity
    :data:`SCORE_SENSITIVITY`) at ``epsilon``. The fit, prediction and score draw from three
    keys split off ``noise_key``; random structure is drawn from the fit's key (never shared
    with another run)."""
    fn, _ = part.fit_fn(private=True)
    config = part.config

    def run(noise_key: jax.Array, point: dict[str, jax.Array], epsilon: jax.Array,
            codes: jax.Array, y: jax.Array, val_codes: jax.Array, val_y: jax.Array,
            size: jax.Array) -> Any:
        fit_key, score_key, predict_key = jax.random.split(noise_key, 3)
        params, costs = fn(fit_key, codes, y, epsilon, point, size, None)
        predicted = config.predict(params, val_codes, predict_key)
        correct = jnp.sum(predicted == val_y, dtype=jnp.int32)
        score, cost = laplace_mechanism(score_key, correct, SCORE_SENSITIVITY, epsilon,
                                        integer=True, label=f"L1 sens. {SCORE_SENSITIVITY}")
        return params, costs, score, cost.epsilon

    return run


def chunk_program(run: Callable[..., Any], by_map: bool) -> Callable[..., Any]:
    """:data:`CHUNK` runs in one program: ``(noise_keys [C], points {name: [C]}, epsilon,
    codes, y, val_codes, val_y, size) -> stacked run outputs``."""

    def program(noise_keys: jax.Array, points: dict[str, jax.Array], epsilon: jax.Array,
                codes: jax.Array, y: jax.Array, val_codes: jax.Array, val_y: jax.Array,
                size: jax.Array) -> Any:
        def one(noise_key: jax.Array, point: dict[str, jax.Array]) -> Any:
            return run(noise_key, point, epsilon, codes, y, val_codes, val_y, size)

        if by_map:
            return jax.lax.map(lambda args: one(*args), (noise_keys, points))
        return jax.vmap(one)(noise_keys, points)

    return program


def selection_release(part: Prepared, space: SearchSpace, epsilon: float,
                      stop_probability: float) -> Callable[..., Any]:
    """The whole selection for a *fixed* split as one pure, jittable function (for
    :func:`dpjax.auditing.audit_release`): ``release(key, (codes, y, val_codes, val_y)) ->
    (params, score, point)`` of the chosen run, running :func:`run_function` in a
    ``lax.while_loop`` until the stopping coin says stop (``K`` uncapped, the same coins,
    candidate draws and keys as :func:`tune`). ``space`` must be jittable (no user
    callable); ``epsilon`` is the selection's total (each run gets ``ε/3`` rounded down)."""
    if space.user is not None:
        raise ValueError("selection_release needs a jittable search space (no callable)")
    run = run_function(part)
    epsilon_c = run_epsilon(epsilon)
    threshold = _stop_threshold(stop_probability)
    size = part.size_value()

    def release(key: jax.Array, data: tuple[jax.Array, ...]) -> Any:
        codes, y, val_codes, val_y = data
        _, stop_key, runs_key = jax.random.split(key, 3)

        def step(run_index: jax.Array) -> Any:
            candidate_key, noise_key = run_keys(runs_key, run_index)
            point = space.draw(candidate_key)
            params, _, score, _ = run(noise_key, point, jnp.float32(epsilon_c), codes, y,
                                      val_codes, val_y, size)
            return params, score, point

        first = step(jnp.int32(0))
        stop = stop_coins(stop_key, 0, threshold)[0]

        def more(state: Any) -> Any:
            return ~state[1]

        def body(state: Any) -> Any:
            run_index, _, best = state
            new = step(run_index)
            better = new[1] > best[1]          # ties go to the earlier run
            best = jax.tree.map(lambda a, b: jnp.where(better, a, b), new, best)
            coin = stop_coins(stop_key, run_index // STOP_BLOCK, threshold)[
                run_index % STOP_BLOCK]
            return run_index + 1, coin, best

        return jax.lax.while_loop(more, body, (jnp.int32(1), stop, first))[2]

    return release


def run_epsilon(epsilon: float) -> float:
    """``ε_c``: ``ε/3`` in float32, rounded down (:func:`~dpjax.privacy.rounding.round_down`),
    so that ``3·ε_c <= ε``; ``ValueError`` for an ``ε`` whose third is not a normal float32."""
    epsilon_c = float(round_down(jnp.float32(epsilon / 3.0)))
    if epsilon_c < float(np.finfo(np.float32).tiny):
        raise ValueError(f"epsilon is too small for tune: {epsilon!r}/3 is not a normal "
                         "float32")
    if not 0.0 < 3.0 * epsilon_c <= epsilon:
        raise RuntimeError(f"internal error: 3 x {epsilon_c!r} exceeds epsilon {epsilon!r}")
    return epsilon_c


# --- the API ----------------------------------------------------------------------------------

def training_part(prepared: Prepared, train: np.ndarray, epsilon_c: float) -> Prepared:
    """The training rows as a :class:`Prepared` of their own: its public size is the training
    part's row count where the row count is public (replace-one: the row count is public, and
    the key-drawn coins are data-independent, fixed in the proof's conditioning: they are
    secret, as the key is), else none (the learner releases a noisy count within its
    ``ε_c``); its ledger starts empty (the data-read entries go once into the model's)."""
    return dataclasses.replace(
        prepared, codes=prepared.codes[train], y=prepared.y[train],
        ledger=PrivacyLedger(neighbouring=prepared.ledger.neighbouring,
                             requested_epsilon=epsilon_c),
        size=None if prepared.size is None else float(len(train)))


@dataclasses.dataclass(frozen=True)
class Chunk:
    """The outputs of one chunk of runs (internal: every run's score is here; :func:`tune`
    releases only the chosen run's). Leading axis: the :data:`CHUNK` slots."""

    points: dict[str, jax.Array]
    values: tuple[dict[str, Any], ...]
    """Each slot's varied hyper-parameters as the config takes them (user candidates: the
    callable's own values)."""
    params: Any
    costs: Any
    scores: np.ndarray
    score_epsilons: np.ndarray
    compile_s: float
    run_s: float


@dataclasses.dataclass(frozen=True)
class Selection:
    """A checked selection request: the whole data's preparation (spec, classes, the ledger's
    data-read entries), the training part, the validation rows, the search space, ``K`` and
    the keys. Internal: :func:`tune` reads its chunks and releases the chosen run only."""

    prepared: Prepared
    part: Prepared
    val_codes: jax.Array
    val_y: jax.Array
    space: SearchSpace
    runs: int
    runs_key: jax.Array
    epsilon: float
    epsilon_c: float
    validation_share: float
    stop_probability: float

    def chunk(self, index: int) -> Chunk:
        """Runs ``CHUNK·index ... CHUNK·(index + 1) − 1`` by the compiled chunk program
        (compiled once per shapes and config, reused for every chunk)."""
        base = self.part.config
        indices = jnp.arange(index * CHUNK, (index + 1) * CHUNK)
        candidate_keys, noise_keys = jax.vmap(lambda i: run_keys(self.runs_key, i))(indices)
        if self.space.user is None:
            points = _draw_points(self.space)(candidate_keys)
            values = tuple(self.space.decode({n: float(v[slot]) for n, v in points.items()})
                           for slot in range(CHUNK))
        else:
            values = tuple(self.space.user_values(k) for k in candidate_keys)
            drawn = [self.space.encode(v) for v in values]
            points = {n: jnp.asarray([d[n] for d in drawn], jnp.float32)
                      for n in base.traced_names()}
        _, fit_cache_key = self.part.fit_fn(private=True)
        program = chunk_program(run_function(self.part), base.planned)
        args = (noise_keys, points, jnp.float32(self.epsilon_c), self.part.codes, self.part.y,
                self.val_codes, self.val_y, self.part.size_value())
        compiled, compile_s = compile_cached(program, ("tune", fit_cache_key, CHUNK), *args)
        (params, costs, scores, score_epsilons), run_s = run_timed(compiled, *args)
        return Chunk(points, values, params, costs, np.asarray(scores),
                     np.asarray(score_epsilons), compile_s, run_s)


def _draw_points(space: SearchSpace) -> Callable[[jax.Array], dict[str, jax.Array]]:
    return jax.jit(jax.vmap(space.draw))


def selection(
    X: Any, y: Any, *, method: str | Learner, epsilon: float, bounds: Any, classes: Any,
    key: int | jax.Array | None, candidates: Any, validation_share: float,
    stop_probability: float, neighbouring: str, n_bins: int | None, missing: Any,
    on_out_of_bounds: str, params: dict[str, Any],
) -> Selection:
    """Check every argument of :func:`tune` (errors name the argument), draw the split and
    ``K`` from the key, and prepare the parts."""
    if epsilon is None:
        raise ValueError("epsilon must be a positive budget: tune selects privately only "
                         "(for a non-private model use dpjax.fit with epsilon=None)")
    epsilon = check_epsilon(epsilon)
    validation_share = unit_interval(open_high=True)("validation_share", validation_share)
    stop_probability = unit_interval()("stop_probability", stop_probability)
    if wants_private_bounds(bounds):
        raise ValueError("bounds='private' is dpjax.fit's: tune's runs share one binning, so "
                         "release the bounds once (a dpjax.fit with bounds='private', then its "
                         "model.spec's ranges) and declare them here")
    base = get_learner(method, params)
    space = search_space(base, candidates, fixed=tuple(params))
    key = as_key(key)
    split_key, stop_key, runs_key = jax.random.split(key, 3)
    prepared = prepare(X, y, method=base, epsilon=epsilon, bounds=bounds, classes=classes,
                       n_bins=n_bins, missing=missing, on_out_of_bounds=on_out_of_bounds,
                       neighbouring=neighbouring, params={},
                       batch=1 if base.planned else CHUNK)
    epsilon_c = run_epsilon(epsilon)
    validation = validation_coins(split_key, prepared.codes.shape[0], validation_share)
    val_rows = np.flatnonzero(validation)
    return Selection(prepared, training_part(prepared, np.flatnonzero(~validation), epsilon_c),
                     prepared.codes[val_rows], prepared.y[val_rows], space,
                     stopping_count(stop_key, stop_probability), runs_key, epsilon, epsilon_c,
                     validation_share, stop_probability)


def tune(
    X: Any,
    y: Any,
    *,
    method: str | Learner = "boosted",
    epsilon: float,
    bounds: Any = None,
    classes: Sequence[Any] | None = None,
    key: int | jax.Array | None = None,
    candidates: Mapping[str, Sequence[Any]] | Callable[[jax.Array], Mapping[str, Any]]
    | None = None,
    validation_share: float = 0.3,
    stop_probability: float = 0.1,
    neighbouring: str = "add_remove",
    n_bins: int | None = None,
    missing: str | Sequence[str] = "error",
    on_out_of_bounds: str = "clip",
    accountant: BudgetAccountant | None = None,
    **params: Any,
) -> Model:
    """Fit a model whose traced hyper-parameters are chosen privately; the whole selection
    costs ``epsilon`` (pure ``ε``-DP, ``δ = 0``).

    Liu & Talwar (2019), Theorem 3.4 (random stopping; the module docstring and
    ``docs/tuning.md`` give the argument): ``K`` runs, ``K`` geometric with mean
    ``1/stop_probability`` drawn from the key alone; each run draws a candidate from the search
    space, fits it at ``ε_c = ε/3`` (rounded down) on the training part and releases its noisy
    count of correct predictions on the validation part (exact discrete Laplace, sensitivity
    1, at ``ε_c``); the candidate of the highest noisy count (ties: the earlier run) is
    returned. Total: ``3·ε_c <= ε``.

    Args:
      X, y, method, bounds, classes, n_bins, missing, on_out_of_bounds, neighbouring: as
        :func:`dpjax.fit` (classification; ``bounds="private"`` is refused: release the
        bounds with a :func:`dpjax.fit` first and declare them).
      epsilon: the total budget (required, ``> 0``).
      key: ``None`` (default: OS entropy, for anything you release) or an int seed / key
        (reproducible experiments only). It draws the split, ``K``, the candidates and
        every run's noise.
      candidates: ``None``: the default search space (:func:`default_dimension`: each traced
        hyper-parameter not given in ``params`` log-uniform within a factor
        :data:`SPREAD` of its default); a dict ``name -> list of values`` (each drawn
        uniformly and independently; the other traced ones stay at their value); or a
        callable ``key -> {name: value}`` (called with each run's own candidate key, for
        whole chunks of :data:`CHUNK` runs: the last chunk's extra draws are discarded). Only
        traced hyper-parameters (``dpjax.LEARNERS[method].traced_names()``) may vary.
      validation_share: the probability, per row, of the validation part (in ``(0, 1)``).
      stop_probability: ``γ``, the probability of stopping after each run (in ``(0, 1]``):
        ``1/γ`` runs on average, never capped (``P[K > k] = (1 − γ)^k``).
      accountant: a :class:`dpjax.BudgetAccountant` to check and spend ``epsilon`` from.
      **params: the method's static hyper-parameters, and traced ones to hold fixed.

    Returns:
      The chosen candidate's :class:`dpjax.Model` (fitted on the training part; its config
      holds the chosen values). Its ledger has one entry for the selection (``3·ε_c``, with
      ``K``, ``ε_c`` and the chosen values in its text); the chosen fit's own releases are
      inside it, not added again.
    """
    checked = None if epsilon is None else check_epsilon(epsilon)
    check_release_settings([checked], 0.0, key is not None)
    name = getattr(method, "name", str(method))
    # the request reserved before any work, closed with the ledger (dpjax.fit's comment)
    label = "" if checked is None else f"tune {name} at epsilon {checked:g}"
    with reserve(accountant, checked, 0.0, neighbouring=neighbouring, method=name,
                 label=label) as reservation:
        chosen = selection(X, y, method=method, epsilon=epsilon, bounds=bounds, classes=classes,
                           key=key, candidates=candidates, validation_share=validation_share,
                           stop_probability=stop_probability, neighbouring=neighbouring,
                           n_bins=n_bins, missing=missing, on_out_of_bounds=on_out_of_bounds,
                           params=params)
        epsilon, epsilon_c, base = chosen.epsilon, chosen.epsilon_c, chosen.part.config
        compile_total = run_total = 0.0
        best: tuple[Any, ...] | None = None
        for index in range(math.ceil(chosen.runs / CHUNK)):
            chunk = chosen.chunk(index)
            compile_total, run_total = compile_total + chunk.compile_s, run_total + chunk.run_s
            for slot in range(min(CHUNK, chosen.runs - index * CHUNK)):   # later slots: discarded
                decoded = chunk.values[slot]
                config = base.replace(**decoded)
                # the run's releases by basic composition (δ = 0), from the costs its mechanisms
                # reported (a NaN cost, a budget beyond the sampler, is a ValueError here)
                spent = chosen.part.ledger.with_costs(
                    jax.tree.map(lambda a, s=slot: a[s], chunk.costs)).epsilon
                if np.isnan(chunk.score_epsilons[slot]):
                    raise ValueError("epsilon is too small: the validation count's noise at "
                                     "epsilon/3 is beyond the exact sampler's range")
                if not (chunk.score_epsilons[slot] <= epsilon_c and spent <= epsilon_c):
                    raise RuntimeError(f"internal error: a run spent ({spent!r}, "
                                       f"{chunk.score_epsilons[slot]!r}) > {epsilon_c!r}")
                score = chunk.scores[slot]
                if best is None or score > best[0]:        # ties: the earlier run
                    best = (score, config, jax.tree.map(lambda a, s=slot: a[s], chunk.params),
                            index * CHUNK + slot + 1, decoded)
        assert best is not None
        score, config, fitted, _, decoded = best
        values = ", ".join(f"{n}={v:.4g}" if isinstance(v, float) else f"{n}={v!r}"
                           for n, v in decoded.items())
        # K and the chosen run's index stay secret: the theorem covers the best (candidate,
        # model, score) with K summed over; released with it, they would cost up to K·ε_c
        entry = LedgerEntry(
            what=(f"hyper-parameter selection: best noisy validation count of K runs (K "
                  f"geometric, stopping probability {chosen.stop_probability:.4g}, kept secret), "
                  f"each {epsilon_c:.4g}-DP (a fit on the training part + its correct count on "
                  f"the validation part, discrete Laplace; i.i.d. coins, validation share "
                  f"{chosen.validation_share:g}); chosen:"
                  + (f" {values}," if values else "") + f" noisy count {score:.0f}"),
            mechanism=MECHANISM, epsilon=3.0 * epsilon_c)
        ledger = dataclasses.replace(chosen.prepared.ledger,
                                     requested_epsilon=epsilon).record(entry)
        for what in config.not_private():
            ledger = ledger.record(LedgerEntry(what=what, mechanism="none", epsilon=0.0,
                                               private=False))
        if ledger.private and ledger.epsilon > epsilon:
            raise RuntimeError(f"internal error: tune spent {ledger.epsilon!r} > {epsilon!r}")
        reservation.commit([(ledger, label)], name)
        # the run time grows with K (chunks of runs): it is not reported
        del run_total
        return Model(config, fitted, chosen.prepared.spec, chosen.prepared.classes, ledger,
                     Timings(compile_total, math.nan))
