"""Private Newton boosting's public schedule and plan (``docs/design.md``, "Plan, then step").

Everything a fit decides before its rounds is a function of public quantities and of values
released before it (the prior's noisy class counts), never of the data itself:

* :class:`Frame`: the static facts of a fit (its config, the data's public shape, the request);
* :func:`schedule`: the releases a plan reads (with ``noise="auto"`` at ``δ > 0`` a scout
  count, the prior, the fallback's second prior) and the :class:`Schedule` read off them: the
  active rounds ``R`` (:func:`active_rounds`), the resolution of the ordered features
  (:func:`resolution_cells`), the shape taken under ``shape="auto"``
  (:func:`auto_uses_random`, :func:`auto_uses_oblivious`), the noise taken under
  ``noise="auto"`` (:func:`gaussian_pays`) and the rounds' budgets;
* :class:`Plan` and :func:`settle`: the shape and noise a schedule took, a small static value
  decided on the host, so that models that share a plan run as one vectorised program of
  that plan's rounds alone (:mod:`dpjax.ensembles.newton.rounds`), and no ``lax.cond`` over a
  shape or a noise runs inside a vectorised body.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from dpjax.ensembles.newton.releases import (
    MAJORITY_LABEL,
    MEAN_LABEL,
    MEAN_PRIOR_LABEL,
    PRIOR_LABEL,
    SCOUT_LABEL,
    loss_spread,
    noise_scale,
    pooled_prior,
    prior_of,
    release_counts,
    release_prior,
    sums_bound,
)
from dpjax.learner import FitContext
from dpjax.privacy import Cost
from dpjax.privacy.composition import (
    WHOLE,
    Shares,
    affordable_rounds,
    round_budget,
    round_rho,
    zcdp_budget,
)
from dpjax.privacy.rounding import round_down

if TYPE_CHECKING:
    from dpjax.ensembles.newton.config import Boosted

SHAPES = ("auto", "cyclic", "random", "oblivious")
UNCAPPED = 2**20
"""A schedule's cap where its uncapped rounds are wanted (:func:`auto_uses_oblivious`,
:func:`auto_uses_random`)."""
NOISES = ("auto", "laplace", "gaussian")
SCOUT_SHARE = 0.02
"""With ``noise="auto"`` at ``δ > 0``, the share of ``ε`` of a first release of the class
counts whose size decides the route (Laplace or Gaussian rounds) before the prior takes the
rest of its share in that route (:func:`fit`)."""
SCOUT_MARGIN = 3.0
"""The scout's size is read at this many standard deviations of its noise below the released
total (each count's discrete Laplace has standard deviation about ``√2·Δ/ε``, the total's
``2Δ/ε``), so that small data does not take the Gaussian route by a noisy overcount."""
ROOT_CELLS = 8.0
"""Past this many cells the ordered features' resolution grows as the square root of the
cells the noise affords (:func:`resolution_cells`): with the linear rule alone banknote scored
lower at ``ε = 1.5`` than at ``ε = 1`` (0.887 against 0.905, 16 runs against 8; 3 splits × 20
seeds, ``experiments/default_checks.py``), with the root 0.914 (issue 52)."""
REGRESSION_SIGNAL = 1.5
"""Regression's rounds keep this many times ``min_signal`` noise scales in their average cell
(:func:`rounds_at`), else its schedule takes the mean fallback: at ``ε = 0.1`` winered's
rounds (1,119 training rows) scored a test RMSE of 0.852, above the training mean's 0.819,
and its fallback scores 0.821; abalone and winewhite keep their rounds at every ``ε`` (5 splits
× 3 seeds, ``experiments/regression_boosting.py``; issue 52's "never below the baseline")."""
AUTO_OBLIVIOUS_ROUNDS = 2
"""``shape="auto"`` boosts oblivious trees only where their public schedule affords at least
this many: with :data:`MANY_FEATURES` features or more from this many, with fewer from all
``oblivious_trees`` (:func:`auto_uses_oblivious`)."""
MANY_FEATURES = 16
"""``shape="auto"`` on this many features or more boosts oblivious trees where two are
affordable: a pass of cyclic rounds splits the budget this many ways, while an oblivious
tree's ``2**d`` cells combine ``d`` chosen features (:func:`auto_uses_oblivious`; 64 until
issue 52: 16 measured better on the shared datasets at ``ε = 1``, vote, qsar, creditcardsmall)."""


def active_rounds(epsilon: ArrayLike, prior: ArrayLike, size: ArrayLike, cells: ArrayLike,
                  most: ArrayLike, *, min_signal: ArrayLike, delta: float,
                  gaussian: bool, least: float = 1.0) -> jax.Array:
    """The public schedule ``R``: a function of ``ε``, ``δ``, the prior's ``ε_0``, the
    *released* size ``ñ`` (the prior's noisy class counts) and the configuration only, never
    of the data itself. At most ``most`` rounds (:func:`max_rounds`), and no more than keep
    the average cell's row count ``ñ/cells`` at ``min_signal`` times the round's noise scale
    (at least 1; :func:`~dpjax.privacy.composition.affordable_rounds`): pure rounds of ``ε_r``
    have Laplace scale ``1/ε_r``, Gaussian rounds of ``ρ_r`` standard deviation
    ``sqrt(1/(2ρ_r))``. Small data at small ``ε`` thus spends its budget on fewer, less noisy
    rounds; at least ``least`` (1; 0 for the softmax booster, whose fit then falls back to
    the released class counts)."""
    signal = jnp.asarray(size, jnp.float32) / (jnp.asarray(cells, jnp.float32) * min_signal)
    return jnp.clip(affordable_rounds(epsilon, prior, signal, delta, gaussian=gaussian), least,
                    jnp.asarray(most, jnp.float32))


def cyclic_rounds(n_features: int, passes: int, focus: int) -> int:
    """Rounds of the cyclic shape's ``passes`` passes: the first over all ``n`` features, each
    later one over the ``min(focus, n)`` features of largest released gain (:func:`fit`)."""
    return n_features + (passes - 1) * min(focus, n_features)


def max_rounds(n_features: int, shape: str, n_trees: int, passes: int = 1,
               focus: int = 1, oblivious_trees: int = 0) -> int:
    """Rounds the program is compiled for (the schedule's maximum)."""
    cyclic = cyclic_rounds(n_features, passes, focus)
    return {"random": n_trees, "oblivious": oblivious_trees, "cyclic": cyclic}.get(
        shape, max(n_trees, cyclic, oblivious_trees))


def noise_kinds(noise: str, delta: float) -> tuple[str, ...]:
    """The noises a fit may release its rounds with: ``"laplace"`` (pure) or ``"gaussian"``
    (needs ``δ > 0``), or for ``"auto"`` Laplace alone at ``δ = 0`` and both at ``δ > 0`` (the
    choice is public: :func:`fit`)."""
    if noise == "auto":
        return ("laplace", "gaussian") if delta > 0.0 else ("laplace",)
    return (noise,)


def gaussian_pays(plans: dict[str, dict[str, jax.Array]], epsilon: ArrayLike,
                  gaussian_prior: ArrayLike, delta: float, sensitivity: float,
                  cells: int) -> jax.Array:
    """``noise="auto"`` at ``δ > 0``: the Gaussian plan where it affords at least the pure
    plan's rounds and, at that many rounds, its noise's standard deviation is below the
    Laplace noise's (``√2`` scales); Laplace noise grows as ``R`` and the Gaussian's as
    ``√R``, so the Gaussian pays for many rounds only. Public: a function of the plans
    (:func:`fit`), ``ε``, ``δ`` and the prior's ``ε_0``."""
    pure, gaussian = plans["laplace"], plans["gaussian"]
    at_pure = noise_scale(round_rho(epsilon, gaussian_prior, pure["rounds"], delta),
                          sensitivity, "gaussian", cells)
    return (gaussian["rounds"] >= pure["rounds"]) & (at_pure < math.sqrt(2.0) * pure["scale"])


def oblivious_rounds(epsilon: ArrayLike, prior: ArrayLike, size: ArrayLike, depth: int,
                     most: int, *, share: ArrayLike, min_signal: ArrayLike, delta: float,
                     gaussian: bool) -> jax.Array:
    """The oblivious shape's public schedule: :func:`active_rounds` for ``2**d`` cells whose
    sums get the leaves' share ``1 − s`` of each round, i.e. a noise scale ``1/(1 − s)`` times
    the round's (``1/sqrt(1 − s)`` for Gaussian rounds). The selections are not scheduled: a
    level's draw at a small ``ε_l`` is close to uniform, a random split, and more rounds at a
    small ``ε`` measured better than fewer, better-chosen ones
    (``experiments/results/private_boosting.md``)."""
    share = jnp.asarray(share, jnp.float32)
    keep = jnp.sqrt(1.0 - share) if gaussian else 1.0 - share
    return active_rounds(epsilon, prior, size, 2.0**depth / keep, most,
                         min_signal=min_signal, delta=delta, gaussian=gaussian)


THRESHOLD_CODES = 4
"""A categorical feature of at most this many codes (three categories and "other", or two and
a missing code) counts as one that an oblivious level's code threshold serves: its prefix
splits reach most of its two-way category partitions (2 of 3 with three categories, 3 of 7
with four) (:func:`threshold_served`)."""


def threshold_served(n_codes: tuple[int, ...], n_ordered: tuple[int, ...]) -> int:
    """How many features an oblivious level's single code threshold ``x_f <= t`` serves: the
    numeric ones (ordered codes) and the categorical ones of at most :data:`THRESHOLD_CODES`
    codes. Public: the declared bounds and categories only."""
    return sum(1 for codes, ordered in zip(n_codes, n_ordered, strict=True)
               if ordered > 0 or codes <= THRESHOLD_CODES)


def auto_uses_oblivious(affordable: jax.Array, n_features: int, most: int,
                        shape: str) -> jax.Array:
    """Whether the fit boosts private oblivious trees: ``shape="oblivious"``, or ``"auto"``
    where the oblivious schedule (:func:`oblivious_rounds`, public; ``affordable`` its rounds
    before the cap ``most = oblivious_trees``) affords

    * :data:`AUTO_OBLIVIOUS_ROUNDS` trees on :data:`MANY_FEATURES` features or more (never
      with ``oblivious_trees=1``): below that, data too small for the budget, a level's draw
      is close to uniform and the cyclic rounds measured better;
    * or, on fewer features, all ``most`` trees (two at least): a rich budget, where one
      cyclic pass (an additive model of one Newton step per feature) stops short and the
      trees learn the interactions (banknote at ``ε = 10``: 0.974 against 0.908,
      transfusion 0.774 against 0.754, 3 splits; issue 52,
      ``experiments/results/private_boosting.md``).

    ``"auto"`` grows no oblivious tree where a threshold serves half the features or fewer
    (:attr:`Frame.shapes`, :func:`threshold_served`)."""
    if shape != "auto":
        return jnp.asarray(shape == "oblivious")
    if n_features >= MANY_FEATURES:
        return jnp.minimum(affordable, most) >= AUTO_OBLIVIOUS_ROUNDS
    return affordable >= max(most, AUTO_OBLIVIOUS_ROUNDS)


def auto_uses_random(cyclic_rounds: jax.Array, trees: jax.Array, n_features: int,
                     most: int, multi: bool, shape: str) -> jax.Array:
    """Whether the fit boosts random-structure trees: ``shape="random"``, or ``"auto"`` where
    the cyclic schedule (:func:`active_rounds`, public) cannot afford one pass over the
    features (``R_cyclic < n``): its few rounds would see a few random features only, where a
    depth-``d`` random tree sees several at once (``experiments/results/private_boosting.md``,
    the ablation rows "boosted, cyclic" and "boosted, random trees d=4"). With more than two
    classes (``multi``; no oblivious trees) also wherever the random schedule's uncapped
    ``trees`` fall short of its ``most`` (``n_trees``): below that rich budget the softmax
    rounds of one cyclic pass stay near the majority rate where random trees learn
    (cardiotocography_full at ``ε = 1``: 0.800 against 0.791, yeast 0.364 against 0.342, 3
    splits × 2 seeds; issue 52), and above it the cyclic pass is ahead (0.872 against 0.862
    at ``ε = 10``)."""
    if shape != "auto":
        return jnp.asarray(shape == "random")
    lean = cyclic_rounds < n_features
    return lean | (trees < most) if multi else lean


def mean_cells(n_codes: np.ndarray, n_ordered: np.ndarray, resolution: ArrayLike) -> jax.Array:
    """The features' mean cell count with their ordered codes merged to ``resolution``
    (:func:`merged_cells`)."""
    n_codes, n_ordered = np.asarray(n_codes, np.float32), np.asarray(n_ordered, np.float32)
    kept = jnp.minimum(jnp.asarray(resolution, jnp.float32), n_ordered)
    return jnp.mean(n_codes - n_ordered + kept)


def resolution_cells(size: ArrayLike, scale: ArrayLike, cell_signal: ArrayLike,
                     most: int) -> jax.Array:
    """The public resolution of the ordered features: the most cells ``K`` of the dyadic
    ladder ``most, most/2, most/4, …`` (floored, at least 2) at most ``min(L, √(ROOT_CELLS·L))``,
    ``L = ñ/(cell_signal·scale)``: every average cell ``ñ/K`` keeps ``cell_signal`` times the
    round's noise scale, and past :data:`ROOT_CELLS` cells ``K`` grows as the square root of
    ``L``, the rate at which a step function's squared bias (``∝ 1/K²``) balances its cells'
    noise (``∝ K²·scale²/ñ²``). Halving keeps every coarser run a union of finer ones (with
    ``most`` a power of two, as the default 32 bins, every boundary of a coarse resolution is
    one of the full resolution's, the middle included)."""
    heard = jnp.maximum(jnp.asarray(size, jnp.float32) / (cell_signal * scale), 0.0)
    fit = jnp.maximum(jnp.floor(jnp.minimum(heard, jnp.sqrt(ROOT_CELLS * heard))), 1.0)
    most = float(max(most, 2))
    halvings = jnp.maximum(jnp.ceil(jnp.log2(most / fit)), 0.0)
    return jnp.maximum(jnp.floor(most / 2.0**halvings), 2.0)


def split_round(budget: jax.Array, noise: str, share: ArrayLike,
                levels: int) -> tuple[jax.Array, jax.Array]:
    """An oblivious round's budget ``b`` (``ε_r``, or ``ρ_r`` for Gaussian rounds) split into
    its leaves' release, ``(1 − s)·b``, and each of its ``levels`` selections' ``ε_l``: pure
    ``s·ε_r/levels`` (basic composition), or ``sqrt(2·s·ρ_r/levels)`` (a pure ``ε_l`` draw is
    ``ε_l²/2``-zCDP). Both views of the round stay within ``b``: ``(1 − s)²ε_r²/2 + levels·
    (s·ε_r/levels)²/2 <= ε_r²/2``. Without levels (other shapes) the leaves take ``b``."""
    if levels == 0:
        return budget, jnp.zeros_like(budget)
    share = jnp.asarray(share, jnp.float32)
    if noise == "gaussian":
        select = jnp.sqrt(2.0 * share * budget / levels)
    else:
        select = share * budget / levels
    return round_down((1.0 - share) * budget), round_down(select)


def oblivious_shares(share: ArrayLike, levels: int) -> Shares:
    """An oblivious round's releases as shares of its pure budget (:func:`split_round`): the
    leaves' ``1 − s`` and ``levels`` draws of ``s/levels`` each (the optimal composition
    counts them apart, :mod:`dpjax.privacy.optimal`)."""
    share = jnp.asarray(share, jnp.float32)
    return ((1.0 - share, 1), (share / levels, levels))


def check_multiclass(config: Boosted, private: bool, task: str = "more classes") -> None:
    """The softmax booster (``K > 2`` classes) and the regression booster (``task``
    ``"regression"``) boost Laplace rounds of the cyclic or random shape: refuse what they do
    not serve, before any work."""
    if config.shape == "oblivious":
        raise ValueError("shape='oblivious' boosts two classes only (its level draws score "
                         f"the logistic gradient); with {task} use shape='auto', 'cyclic' or "
                         "'random'")
    if config.individual > 1.0:
        raise ValueError("individual accounting (individual > 1) serves two classes only")
    if private and config.noise == "gaussian":
        raise ValueError(f"noise='gaussian' serves two classes only; with {task} the rounds "
                         "are Laplace (noise='laplace' or 'auto')")


@dataclasses.dataclass(frozen=True)
class Frame:
    """The static facts of one fit, read once from its config, the data's public shape and
    the request: what the program is compiled for (hashable, so a part of the compile key).

    Attributes:
      config: the :class:`~dpjax.ensembles.newton.Boosted` config (its traced fields out of
        ``==``).
      n_features: the codes' features.
      n_codes_per_feature, n_ordered: each feature's codes, and its ordered (equal-width) ones
        (``FitContext``).
      n_classes: the declared classes (1 for regression: one output, the squared loss).
      sensitivity: 1 under add/remove, 2 under replace-one.
      delta: the ``δ`` asked for.
      private: whether the fit is private.
      target: a regression target's public range ``(lo, hi)``, or ``None``.
    """

    config: Boosted
    n_features: int
    n_codes_per_feature: tuple[int, ...]
    n_ordered: tuple[int, ...]
    n_classes: int
    sensitivity: float
    delta: float
    private: bool
    target: tuple[float, float] | None = None

    @classmethod
    def of(cls, config: Boosted, n_features: int, context: FitContext,
           private: bool) -> Frame:
        """The frame of a fit of ``config`` on ``n_features`` features in ``context``; refuses
        (``ValueError``) what the booster does not serve, before any work."""
        n_ordered = ((0,) * n_features if context.n_ordered is None
                     else tuple(int(k) for k in np.asarray(context.n_ordered)))
        frame = cls(config, n_features,
                    tuple(int(c) for c in np.asarray(context.n_codes_per_feature)), n_ordered,
                    1 if context.target is not None else context.n_classes,
                    float(context.sensitivity), float(context.delta), private,
                    None if context.target is None else tuple(context.target))
        if frame.fallback:
            check_multiclass(config, private, "regression" if frame.regression
                             else "more classes")
        if frame.filtered and frame.sensitivity != 1.0:
            raise ValueError("individual accounting (individual > 1) bounds each record's "
                             "loss against the dataset without it: it needs "
                             "neighbouring='add_remove'")
        return frame

    @property
    def regression(self) -> bool:
        return self.n_classes == 1

    @property
    def multi(self) -> bool:
        """The softmax loss (``K > 2`` classes): a class axis on scores and sums."""
        return self.n_classes > 2

    @property
    def fallback(self) -> bool:
        """The softmax and squared losses: Laplace rounds of the cyclic or random shape, and
        0 affordable rounds fall back to the released prior."""
        return self.multi or self.regression

    @property
    def n_codes(self) -> int:
        return max(self.n_codes_per_feature)

    @property
    def max_ordered(self) -> int:
        return max(max(self.n_ordered, default=0), 1)

    @property
    def focus(self) -> int:
        return min(self.config.focus, self.n_features)

    @property
    def shapes(self) -> tuple[str, ...]:
        """The shapes a round may take: the config's, or for ``"auto"`` the cyclic, random
        and (two classes, where a threshold serves most features) oblivious ones.

        An oblivious level splits a categorical feature's codes at one threshold, which misses
        most of a many-category feature's partitions where a cyclic round's cells hold each
        category: ``"auto"`` takes oblivious trees only where :func:`threshold_served` counts
        more than half the features (mushroom, 7 of 22 served: cyclic 0.901 / 0.972 against
        oblivious 0.834 / 0.965 at ``ε = 0.1 / 1``; adult, 7 of 14: cyclic 0.839 against
        0.837 at ``ε = 1``, and faster; 3 splits, issue 52)."""
        shape = self.config.shape
        if shape != "auto":
            return (shape,)
        served = threshold_served(self.n_codes_per_feature, self.n_ordered)
        if self.fallback or 2 * served <= self.n_features:
            return ("cyclic", "random")
        return ("cyclic", "random", "oblivious")

    @property
    def has_cyclic(self) -> bool:
        return "cyclic" in self.shapes

    @property
    def has_random(self) -> bool:
        return "random" in self.shapes

    @property
    def has_oblivious(self) -> bool:
        return "oblivious" in self.shapes

    @property
    def oblivious_trees(self) -> int:
        return self.config.oblivious_trees if self.has_oblivious else 0

    @property
    def levels(self) -> int:
        """The level draws of an oblivious round (0 where none may grow)."""
        return self.config.depth if self.has_oblivious else 0

    @property
    def cyclic_most(self) -> int:
        return cyclic_rounds(self.n_features, self.config.passes, self.focus)

    @property
    def total(self) -> int:
        """The rounds of the longest schedule (:func:`max_rounds`): the layout of the costs and
        of the fitted trees."""
        return max_rounds(self.n_features, self.config.shape, self.config.n_trees,
                          self.config.passes, self.focus, self.oblivious_trees)

    def most_rounds(self, shape: str) -> int:
        """The most rounds of ``shape``'s schedule: a plan's scan length."""
        return {"cyclic": self.cyclic_most, "random": self.config.n_trees,
                "oblivious": self.oblivious_trees}[shape]

    @property
    def n_cells(self) -> int:
        """The most cells of a round (the Gaussian grid's count of sums)."""
        return max(self.n_codes if self.has_cyclic else 0,
                   2**self.config.depth if self.has_random or self.has_oblivious else 0)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The noises a round may be released with (:func:`noise_kinds`)."""
        return ("laplace",) if self.fallback else noise_kinds(self.config.noise, self.delta)

    @property
    def filtered(self) -> bool:
        """Individual accounting (``individual > 1``) of a private fit."""
        return self.private and self.config.individual > 1.0

    @property
    def boost(self) -> float:
        """An individual filter's rounds: ``κ`` times each round's sequential share."""
        return self.config.individual if self.filtered else 1.0

    @property
    def schedule_delta(self) -> float:
        """The ``δ`` the schedule composes at: an individual filter's schedule is pure."""
        return 0.0 if self.filtered else self.delta


class Schedule(NamedTuple):
    """The public schedule of one model (traced): read off the released prior, in the program
    that releases it (:func:`schedule`) before the program that grows the rounds.

    Attributes:
      prior: ``F_0`` (``[]``, or ``[K]`` for ``K > 2`` classes).
      size: the released size ``ñ``.
      rounds: the active rounds ``R`` (float32; rounds past it release nothing).
      resolution: the ordered features' cells (:func:`resolution_cells`).
      use_random, use_oblivious: the shape taken (bool; cyclic where neither).
      gaussian: whether the rounds are Gaussian (``noise="auto"`` decides by the scout).
      budgets: each noise's round budget (``[len(kinds)]``: ``ε_r`` of the leaves, ``ρ_r``).
      scale: the noise scale of a round's sums (the chosen noise's).
      select: an oblivious level draw's ``ε_l`` (0 for other shapes; ``None`` without DP).
      ridge: the Newton moves' ridge ``Λ``; variance: each released sum's noise variance.
      bound: the public bound of a round's sums (``None`` without DP).
      filter_budget: the rounds' budget after the prior (the individual filter's).
    """

    prior: jax.Array
    size: jax.Array
    rounds: jax.Array
    resolution: jax.Array
    use_random: jax.Array
    use_oblivious: jax.Array
    gaussian: jax.Array
    budgets: jax.Array
    scale: jax.Array
    select: jax.Array | None
    ridge: jax.Array
    variance: jax.Array
    bound: jax.Array | None
    filter_budget: jax.Array


@dataclasses.dataclass(frozen=True)
class Plan:
    """The static plan of one model's rounds (``docs/design.md``, "Plan, then step"): the
    shape and noise its schedule took, decided on the host from the released schedule
    (:func:`settle`), or ``None`` where the program decides (a pure fit: every shape and
    noise it may take is compiled, each round's by ``lax.cond``).

    Attributes:
      shape: ``"cyclic"``, ``"random"`` or ``"oblivious"``, or ``None``.
      noise: ``"laplace"`` or ``"gaussian"``, or ``None``.
      rounds: the scan's length (the shape's most rounds; the frame's for ``shape=None``).
      masked: a round past the schedule's ``R`` is computed and its outputs masked (a
        vectorised program's: a ``lax.cond`` whose predicate differs between the models runs
        both branches, with every operand, the codes too, copied per model) rather than
        skipped by ``lax.cond`` (one model's program).
    """

    shape: str | None
    noise: str | None
    rounds: int
    masked: bool = False


def dynamic_plan(frame: Frame) -> Plan:
    """The plan a pure fit compiles: every shape and noise the frame allows, decided in the
    program where there are several."""
    shape = frame.shapes[0] if len(frame.shapes) == 1 or not frame.private else None
    if not frame.private and frame.config.shape == "auto":
        shape = "cyclic"                    # without DP "auto" is cyclic
    noise = frame.kinds[0] if len(frame.kinds) == 1 else None
    return Plan(shape, noise, frame.total if shape is None else frame.most_rounds(shape))


def settle(frame: Frame, schedule: Schedule, batched: bool = False) -> Plan:
    """The static plan of a model from its released schedule (host values; post-processing):
    the shape and noise it took, and its scan length (the shape's most rounds); ``batched``:
    the plan's program is vectorised over models (its rounds past a schedule are masked)."""
    plan = dynamic_plan(frame)
    shape = plan.shape
    if shape is None:
        shape = ("oblivious" if bool(schedule.use_oblivious) else
                 "random" if bool(schedule.use_random) else "cyclic")
    noise = plan.noise
    if noise is None:
        noise = "gaussian" if bool(schedule.gaussian) else "laplace"
    return Plan(shape, noise, frame.most_rounds(shape), batched)


def prior_budgets(frame: Frame, epsilon: ArrayLike) -> dict[str, jax.Array]:
    """The prior's share of the budget in each route: pure ``share·ε``, or (Gaussian rounds)
    ``sqrt(2·share·ρ)`` in zCDP."""
    share = frame.config.prior_share
    return {"laplace": round_down(share * jnp.asarray(epsilon, jnp.float32)),
            "gaussian": round_down(jnp.sqrt(2.0 * share * zcdp_budget(epsilon, frame.delta)))}


def round_budget_at(frame: Frame, kind: str, epsilon: ArrayLike, prior: ArrayLike,
                    rounds: jax.Array, shares: Shares = WHOLE,
                    most: int | None = None) -> jax.Array:
    """Each of ``rounds`` rounds' budget after the prior's ``prior``: ``ρ_r`` of Gaussian
    rounds, an individual filter's ``κ`` times the sequential share, or the composition
    route's share (of ``most`` rounds at most, by default the frame's)."""
    rounds = jnp.maximum(rounds, 1.0)     # 0 rounds (the fallback) spend none
    if kind == "gaussian":
        return round_rho(epsilon, prior, rounds, frame.delta)
    if frame.filtered:
        return round_down(frame.boost * round_budget(epsilon, prior, rounds, 0.0, "basic"))
    return round_budget(epsilon, prior, rounds, frame.delta, frame.config.composition,
                        shares=shares, most=frame.total if most is None else most)


def rounds_at(frame: Frame, kind: str, epsilon: ArrayLike, prior: ArrayLike, size: ArrayLike,
              cells: ArrayLike, most: int, min_signal: ArrayLike) -> jax.Array:
    """:func:`active_rounds` of ``kind`` noise for rounds of ``cells`` cells (``K > 2``
    classes: each sum's noise is :func:`loss_spread` times the two-class one; regression's
    rounds also keep :data:`REGRESSION_SIGNAL` times ``min_signal``)."""
    signal = loss_spread(frame.n_classes) * (REGRESSION_SIGNAL if frame.regression else 1.0)
    return active_rounds(epsilon, prior, size, cells, most,
                         min_signal=min_signal * signal / frame.boost,
                         delta=frame.schedule_delta, gaussian=kind == "gaussian",
                         least=0.0 if frame.fallback else 1.0)


def noise_schedule(frame: Frame, kind: str, epsilon: ArrayLike, prior: ArrayLike,
                   size: jax.Array, traced: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """The schedule of ``kind`` noise at the released size ``size``: rounds, resolution,
    shape, the round's (leaves') budget, its noise scale and an oblivious level's ``ε_l``."""
    config, min_signal = frame.config, traced["min_signal"]
    n_codes, n_ordered = np.asarray(frame.n_codes_per_feature), np.asarray(frame.n_ordered)
    # one pass at the coarsest cells first (every ordered feature in two); then the finest
    # resolution whose average cell keeps cell_signal noise scales at that pass's rounds
    # (more Gaussian passes average their noise: the same resolution)
    coarsest = rounds_at(frame, kind, epsilon, prior, size, mean_cells(n_codes, n_ordered, 2.0),
                         frame.n_features, min_signal)
    resolution = resolution_cells(
        size, noise_scale(round_budget_at(frame, kind, epsilon, prior, coarsest),
                          frame.sensitivity, kind, frame.n_cells, frame.n_classes),
        traced["cell_signal"], frame.max_ordered)
    cyclic = rounds_at(frame, kind, epsilon, prior, size,
                       mean_cells(n_codes, n_ordered, resolution),
                       frame.cyclic_most if kind == "gaussian" else frame.n_features,
                       min_signal)
    trees = rounds_at(frame, kind, epsilon, prior, size, 2.0**config.depth, UNCAPPED,
                      min_signal)     # the random shape's, before its cap n_trees
    use_random = auto_uses_random(cyclic, trees, frame.n_features, config.n_trees,
                                  frame.multi, config.shape)
    rounds = jnp.where(use_random, jnp.minimum(trees, config.n_trees), cyclic)
    use_oblivious = jnp.asarray(False)
    depth = config.depth
    if frame.has_oblivious:
        affordable = oblivious_rounds(   # before the cap: how rich the budget is
            epsilon, prior, size, depth, UNCAPPED, share=traced["split_share"],
            min_signal=min_signal / frame.boost, delta=frame.schedule_delta,
            gaussian=kind == "gaussian")
        use_oblivious = auto_uses_oblivious(affordable, frame.n_features,
                                            frame.oblivious_trees, config.shape)
        rounds = jnp.where(use_oblivious, jnp.minimum(affordable, frame.oblivious_trees),
                           rounds)
        use_random = use_random & ~use_oblivious
    whole = round_budget_at(frame, kind, epsilon, prior, rounds)
    if frame.has_oblivious:   # a tree's round is its leaves' release and d level draws
        whole = jnp.where(use_oblivious, round_budget_at(
            frame, kind, epsilon, prior, jnp.minimum(rounds, frame.oblivious_trees),
            oblivious_shares(traced["split_share"], depth), frame.oblivious_trees), whole)
    leaves, select = split_round(whole, kind, traced["split_share"], frame.levels)
    budget = jnp.where(use_oblivious, leaves, whole)
    return {"rounds": rounds, "resolution": resolution, "use_random": use_random,
            "use_oblivious": use_oblivious, "budget": budget,
            "scale": noise_scale(budget, frame.sensitivity, kind, frame.n_cells,
                                 frame.n_classes),
            "gaussian": jnp.asarray(kind == "gaussian"),
            "select": jnp.where(use_oblivious, select, 0.0)}


def schedule(frame: Frame, key: jax.Array, y: jax.Array, epsilon: jax.Array | None,
             traced: dict[str, jax.Array]) -> tuple[Schedule, collections.OrderedDict]:
    """The releases a plan reads and the public schedule read off them (``docs/design.md``,
    "Plan, then step"): with ``noise="auto"`` at ``δ > 0`` a scout count (``SCOUT_SHARE`` of
    ``ε``, key ``k_scout``) that decides the route, the prior (key ``k_prior``; of
    ``split(key, 4) = (k_prior, k_rounds, k_structure, k_scout)``), the schedule of each noise
    at the released size, and for the softmax and squared losses the fallback's second release
    of the prior (``fold_in(k_prior, 1)``, spent where no round is affordable). Reads ``y``
    alone (the class labels, or a regression's target in ``[−1, 1]``), so it runs as a small
    program of its own before the rounds. Returns the :class:`Schedule` and the releases'
    costs (empty without DP)."""
    config, sensitivity, delta = frame.config, frame.sensitivity, frame.delta
    n_classes, kinds = frame.n_classes, frame.kinds
    k_prior, _, _, k_scout = jax.random.split(key, 4)
    costs: collections.OrderedDict[str, Cost] = collections.OrderedDict()
    if not frame.private:
        counts, _ = release_prior(k_prior, y, None, sensitivity, n_classes)
        prior, _ = prior_of(n_classes)([(counts, 1.0)])
        shape = "cyclic" if config.shape == "auto" else config.shape
        rounds = jnp.float32(frame.most_rounds(shape))
        zero = jnp.float32(0.0)
        return Schedule(prior, zero, rounds, jnp.float32(frame.max_ordered),
                        jnp.asarray(shape == "random"), jnp.asarray(shape == "oblivious"),
                        jnp.asarray(False), jnp.zeros((len(kinds),), jnp.float32), zero, None,
                        jnp.float32(1.0), zero, None, zero), costs
    fixed = prior_budgets(frame, epsilon)
    if len(kinds) == 2:     # "auto" at δ > 0: a scout count decides the route
        # at most half the prior's share in either route, so the prior keeps the rest
        scout_epsilon = round_down(jnp.minimum(
            SCOUT_SHARE * jnp.asarray(epsilon, jnp.float32),
            0.5 * jnp.minimum(fixed["laplace"], fixed["gaussian"])))
        scout, scout_size, costs[SCOUT_LABEL] = release_counts(k_scout, y, scout_epsilon,
                                                               sensitivity)
        # the Gaussian only pays on large data: decide at a lower bound of the size (the
        # scout's total less SCOUT_MARGIN standard deviations of its Laplace noise)
        low_size = scout_size - SCOUT_MARGIN * 2.0 * sensitivity / scout_epsilon
        pick = gaussian_pays({kind: noise_schedule(frame, kind, epsilon, fixed[kind],
                                                   jnp.maximum(low_size, 1.0), traced)
                              for kind in kinds}, epsilon, fixed["gaussian"], delta,
                             sensitivity, frame.n_cells)
        # the prior takes the rest of its share in the route taken
        prior_epsilon = jnp.where(
            pick, round_down(jnp.sqrt(jnp.maximum(fixed["gaussian"]**2
                                                  - scout_epsilon**2, 0.0))),
            round_down(fixed["laplace"] - scout_epsilon))
        counts, _, costs[PRIOR_LABEL] = release_counts(k_prior, y, prior_epsilon, sensitivity)
        prior, size = pooled_prior([(scout, scout_epsilon), (counts, prior_epsilon)],
                                   sensitivity)
    else:
        pick = jnp.asarray(kinds[0] == "gaussian")
        counts, costs[MEAN_PRIOR_LABEL if frame.regression else PRIOR_LABEL] = release_prior(
            k_prior, y, fixed[kinds[0]], sensitivity, n_classes)
        prior, size = prior_of(n_classes, sensitivity)([(counts, fixed[kinds[0]])])
    plans = {kind: noise_schedule(frame, kind, epsilon, fixed[kind], size, traced)
             for kind in kinds}
    chosen = jax.tree.map(lambda g, p: jnp.where(pick, g, p), plans[kinds[-1]],
                          plans[kinds[0]])
    rounds = chosen["rounds"]
    # the rounds' budget after the prior: the individual filter's, or the fallback's
    filter_budget = round_down(jnp.asarray(epsilon, jnp.float32) - fixed["laplace"])
    if frame.fallback:    # no round affordable: the rounds' budget releases the prior again
        again, again_cost = release_prior(jax.random.fold_in(k_prior, 1), y, filter_budget,
                                          sensitivity, n_classes)
        costs[MEAN_LABEL if frame.regression else MAJORITY_LABEL] = again_cost.gated(
            rounds < 1)
        prior = jnp.where(rounds < 1, prior_of(n_classes, sensitivity)(
            [(counts, fixed["laplace"]), (again, filter_budget)])[0], prior)
    scale = chosen["scale"]
    ridge = 1.0 + jnp.asarray(traced["regularisation"], jnp.float32) * jnp.sqrt(rounds) * scale
    variance = scale**2 * jnp.where(chosen["gaussian"], 1.0, 2.0)
    return Schedule(prior, size, rounds, chosen["resolution"], chosen["use_random"],
                    chosen["use_oblivious"], pick,
                    jnp.stack([plans[kind]["budget"] for kind in kinds]), scale,
                    chosen["select"], ridge, variance, sums_bound(size), filter_budget), costs
