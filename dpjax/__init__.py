"""dpjax: fast differentially private decision-tree models in JAX.

    import dpjax
    X, y = dpjax.load_dataset("banknote")
    model = dpjax.fit(X, y, epsilon=1.0, bounds=dpjax.data.public_bounds("banknote"))
    model.predict(X); print(model.privacy)
"""

from dpjax import compilation_cache, data, ensembles, learners, losses, mechanisms, trees
from dpjax.api import Model, Sweep, Timings, as_key, clear_caches, fit, sweep
from dpjax.auditing import AuditReport, audit
from dpjax.budget import BudgetAccountant, BudgetExceededError
from dpjax.data import list_datasets, load_dataset
from dpjax.learners import LEARNERS
from dpjax.mechanisms import PrivacyLedger
from dpjax.serialization import load
from dpjax.trees import DenseTree

compilation_cache.enable()

__version__ = "0.1.0"

__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "LEARNERS",
    "AuditReport",
    "DenseTree",
    "Model",
    "PrivacyLedger",
    "Sweep",
    "Timings",
    "as_key",
    "clear_caches",
    "compilation_cache",
    "audit",
    "data",
    "ensembles",
    "fit",
    "learners",
    "list_datasets",
    "load",
    "load_dataset",
    "losses",
    "mechanisms",
    "sweep",
    "trees",
]
