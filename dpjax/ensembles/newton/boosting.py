"""Private Newton boosting: the default ``boosted`` learner (``docs/design.md``, "Learners").

A logistic-loss gradient-boosted additive model whose every release carries signal at
``ε ≥ 0.1`` on thousands of rows (issues 9 and 27; DP-EBM, Nori et al. 2021, and DP-GBDT work,
e.g. Maddock et al. 2022, for the ingredients):

1. **A private prior** (a share ``prior_share`` of the budget: ``ε_0 = prior_share·ε`` for
   Laplace rounds, ``ε_0 = sqrt(2·prior_share·ρ)`` for Gaussian rounds; with
   ``noise="auto"`` a scout count takes part of it first, by subtraction in the Laplace
   route and in quadrature in the Gaussian one): the noisy class counts ``(ñ_0, ñ_1)`` (L1
   sensitivity 1 under add/remove, 2 under replace-one) give the initial score
   ``F_0 = log(ñ_1/ñ_0)`` and the released size ``ñ``, so a model whose rounds carry no
   signal predicts the released majority class.
2. **Rounds** ``r = 1..R``, each a partition of the records into cells read off public codes:

   * ``shape="cyclic"`` (DP-EBM's shape): the first pass visits every feature once in a
     data-independent random order, each of its codes a cell; later passes (Gaussian rounds
     only, ``passes − 1`` of them) visit the ``focus`` features of largest released gain
     (:func:`released_gain` of the first pass's releases: post-processing, no budget);
   * ``shape="random"``: round ``r`` is a complete depth-``d`` tree with data-independent random
     splits (:func:`dpjax.trees.grow.random_splits`) and its leaves are the cells;
   * ``shape="oblivious"``: round ``r`` is a private oblivious tree of depth ``d``, each level's
     one split drawn by permute-and-flip over the level-summed absolute gradients
     (:mod:`dpjax.trees.oblivious`; sensitivity 1 per record), its ``2**d`` leaves the cells.
     The round's budget is split: a share ``split_share`` over the ``d`` draws, the rest to
     the leaves (:func:`split_round`); at most ``oblivious_trees`` rounds
     (:func:`oblivious_rounds`);
   * ``shape="auto"`` (the default): with two classes the oblivious shape where its schedule
     affords all ``oblivious_trees`` trees (a rich budget: one cyclic pass stops short and the
     trees learn interactions), or two trees with at least :data:`MANY_FEATURES` features
     (:func:`auto_uses_oblivious`), where a code threshold serves most features
     (:func:`threshold_served`); else the cyclic shape, or the random one where the cyclic
     schedule cannot afford one pass over the features, and with more than two classes also
     where the random schedule does not afford all ``n_trees`` (:func:`auto_uses_random`).
     Each a public function of ``ε``, ``δ``, the feature count, the classes and the released
     size; the ledger names the plan taken.

   **Resolution**: a numeric feature's ``B`` equal-width bins are merged into ``K`` runs of
   adjacent bins (:func:`merged_cells`), ``K`` the most cells whose average ``ñ/K`` keeps
   ``cell_signal`` noise scales of one pass, growing past 8 cells as the root of that count
   (:func:`resolution_cells`): small data at small ``ε`` fits coarse steps, large data the
   full resolution. Categorical codes are kept.

   Each round releases the cells' gradient and hessian sums of the logistic loss at the current
   released score, ``(G_c, H_c) = Σ_{i∈c} (p_i − y_i, p_i(1 − p_i))``. A record sits in one cell
   and ``|p − y| + p(1 − p) <= 1`` (and ``(p − y)² + (p(1 − p))² <= 1``), so the round's whole
   release has L1 and L2 sensitivity 1 (2 under replace-one): the cells compose in parallel and
   the round costs one ``ε_r`` (or ``ρ_r``). The sums are exact fixed-point (units of
   ``2**−GRAD_BITS``, int32 or past ``2**23 − 1`` rows two int32 limbs; one record moves them
   by at most ``2**GRAD_BITS + 2`` units with the floors) and go through
   :func:`dpjax.mechanisms.laplace_mechanism` (exact discrete Laplace) or
   :func:`dpjax.mechanisms.gaussian_mechanism` (exact discrete Gaussian).
3. **Newton leaves with noise-aware shrinkage** (post-processing): each cell's score moves by
   ``w_c = −η·G̃_c / max(H̃_c + Λ, Λ)``, clipped to ``±STEP_CLIP``, with the ridge
   ``Λ = 1 + λ·√R·b`` where ``b`` is the round's noise scale: a cell whose sums are mostly
   noise moves little, and the sum of ``R`` rounds' noisy moves stays below the prior's margin.

**Regression** (``task="regression"``, ``context.target = (lo, hi)`` public): the target is
clipped into the range and scaled to ``z ∈ [−1, 1]`` (:func:`dpjax.data.target_units`); the prior
releases the row count and ``Σ z`` at once (L1 sensitivity 2 rows, :func:`release_moments`)
and starts from their ratio, the noisy mean (:func:`mean_prior`); each round releases the
cells' sums of the squared loss's residuals clipped to ``±c`` and divided by ``c`` and of
the hessian weight ``w`` (:func:`residual_stats`, :data:`HESSIAN_WEIGHT`): L1 sensitivity
``1 + w`` rows; the move is ``c`` times the Newton move of those sums. Laplace rounds of the
cyclic or random shape only; a schedule that affords no round releases the count and sum
again and predicts their mean. The fitted model is read back in the target's units
(:func:`in_target_units`).

**Noise and budget.** After the prior, the rounds share the rest:

* ``noise="laplace"`` (the default): ``R`` pure rounds of ``ε_r`` each, the sequential
  ``(ε − ε_0)/R`` or, with ``δ > 0``, the largest ``ε_r`` at which the prior and the ``R``
  rounds compose to ``(ε, δ)`` by the optimal composition of pure releases (Kairouz, Oh &
  Viswanath 2015; the optimal route's :meth:`~dpjax.privacy.composition.Route.per_round`,
  :mod:`dpjax.privacy.optimal`; never below the zCDP share ``sqrt(2(ρ − ε_0²/2)/R)``, ``ρ``
  the largest zCDP budget that converts to ``(ε, δ)``). An oblivious round counts as its
  leaves' release and its ``d`` level draws (:func:`oblivious_shares`): at ``ε = 0.1``,
  ``δ = 10⁻⁶`` eight trees get 1.8 times the sequential share. One pass over the features,
  and the schedule (:func:`active_rounds`) sizes the rounds by the sequential or zCDP share:
  scheduling more rounds at the optimal share measured worse at ``ε = 0.1`` (adult's one-hot
  matrix, 5 splits: 0.777 against 0.784), and focus passes of Laplace rounds at ``δ > 0``
  worse on average over the shared datasets (3 splits: 0.773 against 0.776);
* ``noise="gaussian"`` (``δ > 0``): ``R`` discrete Gaussian rounds of ``ρ_r = (ρ − ε_0²/2)/R``
  (:func:`~dpjax.privacy.composition.round_rho`); their noise grows as ``√R``, so the focus
  passes cost nothing in the averaged noise of a cell;
* ``noise="auto"``: Laplace at ``δ = 0``; at ``δ > 0`` a scout count (``SCOUT_SHARE`` of
  ``ε``) gives a size at which both plans are worked out, and the Gaussian one is taken where
  it pays (:func:`gaussian_pays`: at least the pure plan's rounds and less noise at that many
  rounds), a public choice; the prior then takes the rest of its share in that route. Better
  at ``ε = 10`` on large data, worse below on small data (the scout dilutes the prior), so
  ``"laplace"`` stays the default (``experiments/results/private_boosting.md``).

The route taken by ``"auto"`` is a public function of released values, so the fit is an
adaptive choice between two mechanisms each within the request: on the Laplace path the
privacy loss is bounded by basic composition (or the optimal composition of pure releases), on
the Gaussian
path by the zCDP sum ``<= ρ``; each path is ``(ε, δ)``-DP on its own, which is what adaptive
composition with privacy filters needs (Rogers et al. 2016; Feldman & Zrnic 2021). The ledger
states the path taken, in the basic and zCDP views, and keeps the smaller total (both hold).

The number of active rounds ``R`` is a function of public quantities only (:func:`active_rounds`):
at most the shape's schedule (:func:`max_rounds`), and no more than keep the average cell at
``min_signal`` times the round's noise scale given the released size ``ñ``: small data at small
``ε`` spends its budget on fewer, less noisy rounds. The rounds' budget is split after the prior
is released (adaptive composition). Rounds past ``R`` (of the ``max_rounds`` the program is
compiled for) release nothing and cost nothing, so one compiled program serves a sweep over
``ε``.

**Plan, then step** (``docs/design.md``). The fit is split by role:
:mod:`~dpjax.ensembles.newton.schedule` (the public schedule, the releases it reads and the
static :class:`~dpjax.ensembles.newton.schedule.Plan`), :mod:`~dpjax.ensembles.newton.releases`
(the prior's and the rounds' releases, their sensitivities and noise scales),
:mod:`~dpjax.ensembles.newton.rounds` (a pure round step over explicit state, folded by
``lax.scan``) and :mod:`~dpjax.ensembles.newton.individual` (the individual filter). The pure
:func:`fit` is the schedule then the rounds in one program, its plan decided per round by
``lax.cond``; :func:`dpjax.fit` and :func:`dpjax.sweep` run the schedule as a program of its
own, settle each model's plan on the host and run the rounds of that plan alone, the models
that share a plan vectorised together (bit for bit the same models).
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

import jax
from jax.typing import ArrayLike

from dpjax.ensembles.newton.model import NewtonBoostedModel
from dpjax.ensembles.newton.rounds import grow
from dpjax.ensembles.newton.schedule import Frame, dynamic_plan, schedule
from dpjax.learner import FitContext
from dpjax.privacy import Cost

if TYPE_CHECKING:
    from dpjax.ensembles.newton.config import Boosted


def fit(config: Boosted, key: jax.Array, codes: jax.Array, y: jax.Array,
        epsilon: jax.Array | None, context: FitContext, **traced: ArrayLike,
        ) -> tuple[NewtonBoostedModel, collections.OrderedDict[str, Cost]]:
    """Fit the private Newton-boosted model (module docstring) of ``config``
    (:class:`~dpjax.ensembles.newton.Boosted`: ``shape``, ``n_trees``, ``depth`` of the random
    shape, ``prior_share``, ``noise``) as one pure program: the schedule
    (:func:`~dpjax.ensembles.newton.schedule.schedule`), then the rounds
    (:func:`~dpjax.ensembles.newton.rounds.grow`) under the plan that leaves the shape and the
    noise to the schedule (:func:`~dpjax.ensembles.newton.schedule.dynamic_plan`).

    Args:
      config: the configuration; its traced fields ``learning_rate`` (``η``),
        ``regularisation`` (``λ`` of the ridge ``Λ``) and ``min_signal`` (the schedule's
        constant, :func:`~dpjax.ensembles.newton.schedule.active_rounds`) are taken from
        ``traced`` where given.
      key: PRNG key: ``split(key, 4) = (k_prior, k_rounds, k_structure, k_scout)``: the
        prior's, the rounds' (round ``r`` uses ``fold_in(k_rounds, r)``; with ``noise="auto"``
        its Gaussian candidate ``fold_in(·, 1)`` of that, an oblivious tree's level draws
        ``fold_in(·, 2)`` of it), the structures' (unless ``context.structure_key`` is
        given, shared by a sweep's grid points) and the scout's.
      codes: uint8 ``[m, n]``; y: int ``[m]`` class indices (a regression's target in
        ``[−1, 1]``).
      epsilon: total budget (traced), or ``None`` without privacy (exact sums, ``Λ = 1``).
      context: the codes per feature (cells of the cyclic shape), the multiplier of every
        release (``sensitivity``: 1 add/remove, 2 replace-one) and the ``δ`` asked for (``> 0``
        enables the optimal split; ``noise="gaussian"`` needs it).

    Returns:
      ``(model, costs)``: ``"prior (class counts)"`` (scalar; for regression ``"prior (row
      count and target sum)"``, and where no round is affordable the fallback's second
      release, ``MAJORITY_LABEL`` or ``MEAN_LABEL``, zero when rounds ran), with
      ``noise="auto"`` at ``δ > 0`` ``"scout (class counts)"`` (scalar), and the rounds of
      each noise the fit may draw (``ROUND_LABELS``; ``[max_rounds]``, zero past the active
      rounds and for the noise not taken), and where oblivious trees may be boosted the level
      draws (``SELECT_LABEL``, ``[max_rounds, depth]``, zero where none was drawn); empty
      without DP.
    """
    traced = config.resolve_traced(traced)
    frame = Frame.of(config, codes.shape[1], context, epsilon is not None)
    released, costs = schedule(frame, key, y, epsilon, traced)
    model, grown = grow(frame, dynamic_plan(frame), key, codes, y, released,
                        context.structure_key, traced)
    costs.update(grown)
    return model, costs


__all__ = ["fit"]
