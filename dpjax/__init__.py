"""dpjax: fast differentially private decision-tree models in JAX.

    import dpjax
    X, y = dpjax.load_dataset("banknote")
    model = dpjax.fit(X, y, epsilon=1.0, bounds=dpjax.data.public_bounds("banknote"))
    model.predict(X); print(model.privacy)

The public API is what this module lists in ``__all__``; the subpackages (``data``,
``privacy``, ``mechanisms``, ``trees``, ``losses``, ``ensembles``, ``rules``, ``auditing``) are
the documented building blocks, ``dpjax.functional`` the pure functions to use inside your own
JAX programs, and ``dpjax.learners``, ``dpjax.sklearn``, ``dpjax.plots`` and
``dpjax.compilation_cache`` the optional front ends. Modules whose names start with ``_`` are
internal.

Importing dpjax loads nothing else and changes no global setting: every name below is imported
on first use, and JAX's persistent compilation cache is turned on at dpjax's first compile
(:mod:`dpjax.compilation_cache`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "fit": "dpjax._api",
    "sweep": "dpjax._api",
    "tune": "dpjax._tuning",
    "clear_caches": "dpjax._api",
    "Model": "dpjax._model",
    "Sweep": "dpjax._model",
    "Timings": "dpjax._model",
    "load": "dpjax._model",
    "as_key": "dpjax._keys",
    "FixedKeyWarning": "dpjax._keys",
    "WeakGuaranteeWarning": "dpjax._preparation",
    "LEARNERS": "dpjax.learners",
    "BudgetAccountant": "dpjax.privacy",
    "BudgetExceededError": "dpjax.privacy",
    "PrivacyLedger": "dpjax.privacy",
    "audit": "dpjax.auditing",
    "AuditReport": "dpjax.auditing",
    "load_dataset": "dpjax.data",
    "list_datasets": "dpjax.data",
}
"""Each public name and the module it lives in (imported on first use)."""
_SUBMODULES = ("auditing", "compilation_cache", "data", "ensembles", "functional", "learner",
               "learners", "losses", "mechanisms", "plots", "privacy", "rules", "sklearn",
               "trees")

__all__ = sorted([*_EXPORTS, *_SUBMODULES])


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"dpjax.{name}")
    else:
        raise AttributeError(f"module 'dpjax' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from dpjax import (  # noqa: F401
        auditing,
        compilation_cache,
        data,
        ensembles,
        functional,
        learner,
        learners,
        losses,
        mechanisms,
        plots,
        privacy,
        rules,
        sklearn,
        trees,
    )
    from dpjax._api import clear_caches, fit, sweep  # noqa: F401
    from dpjax._keys import FixedKeyWarning, as_key  # noqa: F401
    from dpjax._model import Model, Sweep, Timings, load  # noqa: F401
    from dpjax._preparation import WeakGuaranteeWarning  # noqa: F401
    from dpjax._tuning import tune  # noqa: F401
    from dpjax.auditing import AuditReport, audit  # noqa: F401
    from dpjax.data import list_datasets, load_dataset  # noqa: F401
    from dpjax.learners import LEARNERS  # noqa: F401
    from dpjax.privacy import BudgetAccountant, BudgetExceededError, PrivacyLedger  # noqa: F401
