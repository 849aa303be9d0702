"""The largest ``change / assumed sensitivity`` of every statistic checked by the
``test_sensitivity_*`` files run before this one (it sorts last); run with ``-s`` to see it."""

from __future__ import annotations

from tests.helpers.sensitivity import RATIOS, REL


def test_print_max_ratio_summary():
    """Prints the largest ``change / assumed sensitivity`` seen per statistic (``-s``)."""
    for name, ratio in sorted(RATIOS.items()):
        print(f"[sensitivity summary] {ratio:.9f}  {name}")
    assert all(r <= 1.0 + REL for r in RATIOS.values())
