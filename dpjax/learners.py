"""Every learner of :func:`dpjax.fit`, by ``method=`` name: the registry with the built-in
families loaded.

    from dpjax.learners import Boosted
    model = dpjax.fit(X, y, method=Boosted(shape="random", depth=3), epsilon=1.0, bounds=...)

The built-in families are imported here, once, which registers them (each config class carries
its :func:`~dpjax.learner.register` line); a new in-tree family is one folder and one line
below. A family outside dpjax registers itself when its module is imported. The runtime (fits,
sweeps, model files, plots, the scikit-learn estimators) reads :data:`REGISTRY` and nothing
else.

Every registered config class is an attribute of this module under its class name
(``dpjax.learners.Boosted``, ``dpjax.learners.RandomTrees``, ...); :data:`LEARNERS` maps
``method=`` names to them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dpjax import rules  # noqa: F401  (registers rule_list)
from dpjax.ensembles import malpha, newton, random_trees, smooth_boost  # noqa: F401 (register)
from dpjax.learner import REGISTRY, FitContext, Learner, Registration, register, unregister


class _Configs(Mapping[str, type[Learner]]):
    """A live read-only view of the registry: ``method=`` name -> config class."""

    def __getitem__(self, name: str) -> type[Learner]:
        return REGISTRY[name].config

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)

    def __repr__(self) -> str:
        return repr(dict(self))


LEARNERS: Mapping[str, type[Learner]] = _Configs()
"""Every registered ``method=`` name and its config class."""


def registrations() -> tuple[Registration, ...]:
    """Every registered learner, in registration order."""
    return tuple(REGISTRY.values())


def get_learner(method: str | Learner, params: dict[str, Any] | None = None) -> Learner:
    """The validated config of ``method`` (a registered name, or a config) with ``params``."""
    params = params or {}
    if isinstance(method, Learner):
        known = REGISTRY.get(getattr(type(method), "name", None))
        if known is None or known.config is not type(method):
            raise ValueError(f"{type(method).__name__} is not a registered learner; available: "
                             f"{sorted(REGISTRY)}")
        return method.replace(**params) if params else method
    if not isinstance(method, str) or method not in REGISTRY:
        raise ValueError(f"unknown method {method!r}; available: {sorted(REGISTRY)}")
    return REGISTRY[method].config().replace(**params)


def registration(method: str | Learner) -> Registration:
    """The :class:`~dpjax.learner.Registration` of a ``method=`` name or a config."""
    name = method.name if isinstance(method, Learner) else method
    return REGISTRY[name]


def __getattr__(name: str) -> type[Learner]:
    for entry in REGISTRY.values():
        if entry.config.__name__ == name:
            return entry.config
    raise AttributeError(f"module 'dpjax.learners' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *(entry.config.__name__ for entry in REGISTRY.values())])


__all__ = ["LEARNERS", "FitContext", "Learner", "Registration", "get_learner", "register",
           "registration", "registrations", "unregister"]
