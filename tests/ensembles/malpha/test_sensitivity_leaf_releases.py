"""Sensitivity: the Mα-boost leaf releases and ``β_t``, direct and through the four release
modes of ``release_leaves`` on a private Mα tree.

The method (neighbours of one shape, recorded mechanisms, tolerances) is described in
``helpers_sensitivity``.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpjax.ensembles.malpha import WEIGHT_UNIT, beta_rounding
from tests.helpers.sensitivity import (
    ADD,
    REL,
    REPLACE,
    _assert_within,
    _np_class_sums,
    _np_level_nodes,
)
from tests.helpers.sensitivity_malpha import (
    CLAMP,
    LEAF_MODES,
    TREE_DEPTH,
    _check_laplace,
    _direct_run,
    _tree_run,
)

# ------------------------------------------------------------------------------------------
# 7. β_t and the folded leaf values: direct property tests
# ------------------------------------------------------------------------------------------


def test_leveraging_coefficient_beta_laplace_mode():
    """``β̃_t`` (Mα spec §4.5, paper (142), ``beta_mode="laplace"``): ``β = (a/ñ)·Σ_λ h(λ)·(w⁺(λ)
    − w⁻(λ))`` with the released leaf values ``h ∈ [−M, M]`` fixed and ``a = α/M²``. Assumed
    sensitivity ``2aM/ñ`` under both relations: one record changes its own term."""
    data, h, out, _ = _direct_run()
    a = data["alpha"].astype(np.float64) / CLAMP**2
    s = 2 * a * CLAMP / data["size"]
    beta = [o["beta"] for o in out]
    for name, (x, y) in ((ADD, (0, 1)), (REPLACE, (1, 2))):
        _assert_within(f"β_t (laplace mode) {name}", np.abs(beta[y] - beta[x]), s,
                       np.abs(beta[x]) + np.abs(beta[y]))
    assert np.all(np.abs(h) <= CLAMP)


def test_folded_leaf_values_are_clipped_to_alpha_link():
    """``"value"`` + ``"fold"`` leaves (Mα spec §4.5): the release is ``clip(β·h, ±α_LC)``
    (``laplace_mechanism``'s bound), of assumed range ``2·α_LC`` for any data and any public
    size. Unclipped, ``|β·h| <= α_LC·w(S)/ñ``: within ``α_LC`` when ``ñ >= m`` and beyond it
    for some data when ñ is below m, which is why the clip is needed."""
    data, _, out, _ = _direct_run()
    alpha = data["alpha"].astype(np.float64)[:, None]
    for o in out:
        folded = o["folded"].astype(np.float64)
        limit = alpha * (o["weight"][:, None] / data["size"][:, None])
        _assert_within("folded leaf value |β·h| vs α_LC·w(S)/ñ", np.abs(folded), limit,
                       np.abs(folded))
        released = np.clip(folded, -alpha, alpha)
        assert np.all(np.abs(released) <= alpha)
    beyond = np.abs(out[1]["folded"]) > alpha * (1 + REL)
    assert beyond.any() and np.all(data["size"][beyond.any(1)] < data["m"][beyond.any(1)] + 1)


# ------------------------------------------------------------------------------------------
# End to end: the leaf releases of a private Mα tree, mechanisms recorded
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", LEAF_MODES, ids="/".join)
def test_boosted_leaf_releases_end_to_end(mode):
    """The leaf releases of ``release_leaves`` (Mα spec §4.4–§4.5) on a private Mα tree's leaf
    sums, given the same released structure.

    * ``"counts"``: the weighted class sums ``[2]`` of each leaf, exact int32 fixed-point sums
      (``GrownTree.leaf_stats``, equal to the numpy int64 reference), released with
      ``integer=True``, L1 sensitivity one / two weights (``WEIGHT_UNIT`` / ``2·WEIGHT_UNIT``),
      bound ``ñ·WEIGHT_UNIT``; compared exactly. Released in parallel (``"parallel"``): the
      whole tree's ``[2**d, 2]`` array moves by at most that, and its grid values by at most
      one leaf's integer sensitivity.
    * ``"value"``: leaf values ``clip(ψ(q), ±M)``, or ``clip(β·h, ±α_LC)`` when folded; range
      sensitivity ``2M`` / ``2α_LC`` for any data (no multiplier).
    * ``β̃`` (``"laplace"``): ``(a/ñ)·Σ_λ h(λ)(w⁺ − w⁻)`` with the released ``h``,
      sensitivity ``2aM/ñ``.
    """
    data, alpha, runs = _tree_run()
    tag = "/".join(mode)
    alpha_link = np.where(alpha < 0, 1.0, alpha)
    for name, run in runs.items():
        calls = [i for i, m in enumerate(run["meta"]) if m["tag"] == tag]
        kinds = [run["meta"][i]["kind"] for i in calls]
        parallel = [i for i in calls if run["meta"][i]["kind"] == "parallel"]
        assert len(parallel) == (1 if mode[0] == "counts" else 0)
        laplace = [i for i in calls if run["meta"][i]["kind"] == "laplace"]
        assert len(laplace) == (2 if mode[1] == "laplace" else 1), kinds
        leaf_call, beta_call = laplace[0], (laplace[1] if len(laplace) > 1 else None)
        meta = run["meta"][leaf_call]
        first, second = (r[leaf_call] for r in run["records"])
        s = first["sensitivity"]
        if mode[0] == "counts":
            # int32 fixed-point leaf sums, exactly the grown tree's, sensitivity in units
            multiplier = 1.0 if name == ADD else 2.0
            assert meta["integer"] and meta["sensitivity"] == multiplier * WEIGHT_UNIT
            np.testing.assert_array_equal(s, multiplier * WEIGHT_UNIT)
            np.testing.assert_array_equal(first["bound"], data["size"] * WEIGHT_UNIT)
            variants = (0, 1) if name == ADD else (1, 2)
            for record, v, out in zip((first, second), variants, run["out"], strict=True):
                leaf = _np_level_nodes(out[0], out[1], data["codes"], TREE_DEPTH)
                np.testing.assert_array_equal(out[2], leaf)
                assert record["value"].dtype == np.int32
                np.testing.assert_array_equal(record["value"], out[3])
                np.testing.assert_array_equal(record["value"], _np_class_sums(
                    data["weights"][v], data["y"], leaf, 2**TREE_DEPTH))
            assert meta["event_ndim"] == 1
            _check_laplace(f"boosted counts leaf {name}", meta, first, second)
            _check_laplace(f"boosted counts whole tree (parallel) {name}", meta, first, second,
                           whole_tree=True)
        else:
            bound = first["bound"]
            if mode[1] == "fold":
                np.testing.assert_allclose(bound, alpha_link, rtol=1e-7)
            else:
                np.testing.assert_array_equal(bound, CLAMP)
            np.testing.assert_allclose(s, 2 * bound, rtol=1e-7)     # the range of the clip
            assert meta["event_ndim"] == 0
            _check_laplace(f"boosted {tag} leaf value {name}", meta, first, second)
        if beta_call is not None:
            first, second = (r[beta_call] for r in run["records"])
            a = alpha_link / CLAMP**2
            np.testing.assert_allclose(
                first["sensitivity"],
                2 * a * CLAMP / data["size"] + 2 * beta_rounding(a, CLAMP, 2**TREE_DEPTH),
                rtol=1e-6)
            _check_laplace(f"boosted β̃ ({tag}) {name}", run["meta"][beta_call], first,
                           second)
