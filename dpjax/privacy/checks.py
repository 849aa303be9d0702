"""The privacy arguments every fit checks: ``ε``, ``δ`` and the neighbouring relation."""

from __future__ import annotations

import math
from typing import Any

NEIGHBOURING = ("add_remove", "replace_one")
NEIGHBOURING_ALIASES = {"substitute": "replace_one", "replace": "replace_one",
                        "add_remove_one": "add_remove"}
SENSITIVITY = {"add_remove": 1.0, "replace_one": 2.0}
"""How far one change of a record moves a count under each relation: add/remove-one moves one
count by 1; replace-one moves two (or one by 2), so count sensitivities double."""


def _number(value: Any, name: str, expected: str) -> float:
    """``value`` as a float, or ``ValueError`` naming ``name`` (strings and bools refused)."""
    try:
        if isinstance(value, (str, bytes, bool)):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {expected}, got {value!r}") from None


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float, or raise ``ValueError`` unless ``0 < epsilon < inf``."""
    value = _number(epsilon, name, "a positive number or None")
    if not (value > 0.0 and math.isfinite(value)):
        raise ValueError(f"{name} must be > 0 and finite, got {epsilon!r}")
    return value


def check_delta(delta: float) -> float:
    """Return ``delta`` as a float, or raise ``ValueError`` unless ``0 <= delta < 1``."""
    value = _number(delta, "delta", "a number in [0, 1)")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    return value


def check_neighbouring(neighbouring: str) -> str:
    """The canonical name of a neighbouring relation (``"substitute"``, the Mα spec's name for
    replace-one, is accepted), or ``ValueError``."""
    neighbouring = NEIGHBOURING_ALIASES.get(neighbouring, neighbouring)
    if neighbouring not in NEIGHBOURING:
        raise ValueError(f"neighbouring must be one of {NEIGHBOURING} (or an alias in "
                         f"{sorted(NEIGHBOURING_ALIASES)}), got {neighbouring!r}")
    return neighbouring
