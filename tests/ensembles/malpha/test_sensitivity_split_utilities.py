"""Sensitivity: the Mα split criterion (the utilities of the split selections), direct and
through a private Mα tree.

The method (neighbours of one shape, recorded mechanisms, tolerances) is described in
``helpers_sensitivity``.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpjax.losses.proper import criterion_sensitivity, split_sensitivity
from tests.helpers.sensitivity import ADD, REPLACE, _assert_within
from tests.helpers.sensitivity_malpha import TREE_DEPTH, _direct_run, _tree_run

# ------------------------------------------------------------------------------------------
# 3. The Mα split criterion: direct property tests
# ------------------------------------------------------------------------------------------


def test_malpha_split_criterion_clamped_to_public_size():
    """Mα split criterion (Nock & Henecka; Mα spec §2.2, §1.7, Cor. 7). The utility of every
    candidate split is ``−crit_α``, from ``clamped_split_risk(left, right, α, ñ)`` on weighted
    class sums. The assumed sensitivity ``Δ^(α)(ñ) = 3 + 2α(√ñ − 1)`` (add/remove, doubled
    under replace-one, §4.1) must hold for any record count ``m``, ñ both above and below it,
    α in [0, 1], and an extra record of any weight in [0, 1] and either label."""
    data, _, out, valid = _direct_run()
    delta = np.asarray(split_sensitivity(data["size"], data["alpha"]), np.float64)
    delta = delta[:, None, None, None]
    crit = [o["crit"] for o in out]
    for name, (a, b), factor in ((ADD, (0, 1), 1.0), (REPLACE, (1, 2), 2.0)):
        change = np.abs(crit[b] - crit[a])[:, :, valid]
        scale = (np.abs(crit[a]) + np.abs(crit[b]))[:, :, valid]
        _assert_within(f"Mα clamped split criterion {name}", change,
                       factor * delta[:, :, 0], scale)
    # ñ below m (clamping) and the Matsushita end (α = 1) are among the cases
    assert np.any(data["size"] < data["m"] / 2) and np.any(data["size"] > data["m"])
    assert np.any(data["alpha"] == 1.0) and np.any(data["alpha"] == 0.0)


def test_malpha_split_criterion_unclamped_with_m_at_most_public_size():
    """The unclamped ``split_risk`` (Mα spec §2.2, Cor. 7 with the record count ``m`` of the
    smaller neighbour): change ``<= Δ^(α)(m)`` add/remove and ``2·Δ^(α)(m)`` replace-one. Where
    no class sum exceeds ñ the clamped criterion is this one, exactly."""
    data, _, out, valid = _direct_run()
    m = data["m"].astype(np.float32)
    delta = np.asarray(split_sensitivity(m, data["alpha"]), np.float64)[:, None, None]
    risk = [o["unclamped"] for o in out]
    for name, (a, b), factor in ((ADD, (0, 1), 1.0), (REPLACE, (1, 2), 2.0)):
        change = np.abs(risk[b] - risk[a])[:, :, valid]
        scale = (np.abs(risk[a]) + np.abs(risk[b]))[:, :, valid]
        _assert_within(f"Mα split criterion, unclamped, Δ(m) {name}", change,
                       factor * delta, scale)
    big = data["size"] >= data["m"] + 1          # every class sum <= m + 1 <= ñ
    assert big.sum() > 100
    for o in out:
        np.testing.assert_array_equal(o["crit"][big], o["unclamped"][big])


# ------------------------------------------------------------------------------------------
# End to end: the selections of a private Mα tree, mechanisms recorded
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_private_malpha_tree_split_utilities_end_to_end():
    """The selections of a private Mα tree (``grow_malpha_tree``, Mα spec §4.3). At every
    level, given the same released splits (and O.C α's), every node's utility ``−crit_α`` moves
    by at most the sensitivity the code passes to the selection (``Δ^(α)(ñ)``,
    ``2·Δ^(α)(ñ)`` under replace-one)."""
    data, alpha, runs = _tree_run()
    for name, run in runs.items():
        for v in (0, 1):        # same releases, same structure
            np.testing.assert_array_equal(run["out"][v][0], run["out"][0][0])
            np.testing.assert_array_equal(run["out"][v][1], run["out"][0][1])
        selects = [i for i, m in enumerate(run["meta"]) if m["kind"] == "select"]
        assert len(selects) == TREE_DEPTH
        for level, i in enumerate(selects):
            first, second = (r[i] for r in run["records"])
            u0, u1 = first["utility"], second["utility"]
            np.testing.assert_array_equal(np.isfinite(u0), np.isfinite(u1))
            finite = np.isfinite(u0)
            change = np.abs(np.where(finite, u1, 0.0) - np.where(finite, u0, 0.0))
            scale = np.where(finite, np.abs(u0) + np.abs(u1), 0.0)
            s = first["sensitivity"][..., None]
            np.testing.assert_array_equal(s, second["sensitivity"][..., None])
            fixed = alpha >= 0
            multiplier = 1.0 if name == ADD else 2.0
            expected = multiplier * np.asarray(criterion_sensitivity(data["size"], alpha))
            np.testing.assert_allclose(s[fixed, :, 0], np.broadcast_to(
                expected[fixed, None], s[fixed, :, 0].shape), rtol=1e-6)
            _assert_within(f"Mα tree splits (level {level}) {name}", change, s, scale)
