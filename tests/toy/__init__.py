"""A toy learner in one folder: one random tree whose leaves hold noisy class counts. Its config
class carries the one registration line; nothing else in dpjax knows it, yet it fits, sweeps,
is written to and read from a model file, is drawn, and gets a scikit-learn estimator
(``tests/runtime/test_registry.py``)."""

from tests.toy.config import ToyTree, ToyTreeModel

__all__ = ["ToyTree", "ToyTreeModel"]
