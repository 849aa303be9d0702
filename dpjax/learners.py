"""Every learner of :func:`dpjax.fit`, by ``method=`` name: the registry, each built-in family
imported on first use.

    from dpjax.learners import Boosted
    model = dpjax.fit(X, y, method=Boosted(shape="random", depth=3), epsilon=1.0, bounds=...)

The built-in families are listed here, once (:data:`FAMILIES`), and each is imported the first
time one of its names is asked for, which registers it (each config class carries its
:func:`dpjax.learner.register` line): a first ``dpjax.fit(method="rule_list")`` imports the
rule lists only, not the tree families (a fresh process's first fit pays for its own
learner's modules alone). Anything that reads every learner (iterating :data:`LEARNERS`,
:func:`registrations`, a class attribute of this module, a model file, the scikit-learn
estimators) imports them all. A new in-tree family is one folder and one line in
:data:`FAMILIES`. A family outside dpjax registers itself with :func:`register` when its module is
imported (the built-in families are imported first, so a name it takes from them is refused at
once). The
runtime reads the registry through this module and nothing else.

Every registered config class is an attribute of this module under its class name
(``dpjax.learners.Boosted``, ``dpjax.learners.RandomTrees``, ...); :data:`LEARNERS` maps
``method=`` names to them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from dpjax import learner
from dpjax.learner import REGISTRY, FitContext, Learner, LearnerT, Registration

FAMILIES: dict[str, tuple[str, ...]] = {
    "dpjax.rules": ("rule_list",),
    "dpjax.ensembles.malpha": ("malpha",),
    "dpjax.ensembles.newton": ("boosted",),
    "dpjax.ensembles.random_trees": ("random_trees", "rf_laplace", "rf_exponential"),
    "dpjax.ensembles.smooth_boost": ("smooth_boost",),
}
"""The built-in families: the module whose import registers them, and their ``method=`` names,
in the order every listing of the learners takes."""
_FAMILY_OF = {name: module for module, names in FAMILIES.items() for name in names}
_ORDER = {name: i for i, name in enumerate(_FAMILY_OF)}


def load_family(name: object) -> None:
    """Import the built-in family of the ``method=`` name ``name`` (if it is one)."""
    module = _FAMILY_OF.get(name) if isinstance(name, str) else None
    if module is not None and name not in REGISTRY:
        importlib.import_module(module)


def load_all() -> None:
    """Import every built-in family (each registers its learners)."""
    for module in FAMILIES:
        importlib.import_module(module)


def register(*, params: tuple[type, ...], estimator: str) -> Callable[[LearnerT], LearnerT]:
    """Class decorator of a learner from outside dpjax (:func:`dpjax.learner.register`, with
    the same arguments): the built-in families are imported first, so that a ``method=`` name
    or an estimator name it takes from them is refused at once."""
    record = learner.register(params=params, estimator=estimator)

    def record_after_built_ins(cls: LearnerT) -> LearnerT:
        if not any(cls.__module__.startswith(family + ".") for family in FAMILIES):
            load_all()
        return record(cls)

    return record_after_built_ins


def unregister(name: str) -> None:
    """Remove the learner registered as ``name`` (:func:`dpjax.learner.unregister`; a
    built-in family not imported yet is imported first, so that its name is removed too)."""
    load_family(name)
    learner.unregister(name)


def _names() -> list[str]:
    """Every registered name: the built-in ones in :data:`FAMILIES` order, then the others in
    registration order."""
    load_all()
    return sorted(REGISTRY, key=lambda name: _ORDER.get(name, len(_ORDER)))


class _Configs(Mapping[str, type[Learner]]):
    """A live read-only view of the registry: ``method=`` name -> config class."""

    def __getitem__(self, name: str) -> type[Learner]:
        load_family(name)
        return REGISTRY[name].config

    def __iter__(self) -> Iterator[str]:
        return iter(_names())

    def __len__(self) -> int:
        return len(_names())

    def __repr__(self) -> str:
        return repr(dict(self))


LEARNERS: Mapping[str, type[Learner]] = _Configs()
"""Every registered ``method=`` name and its config class."""


def registrations() -> tuple[Registration, ...]:
    """Every registered learner: the built-in ones in :data:`FAMILIES` order, then the others
    in registration order."""
    return tuple(REGISTRY[name] for name in _names())


def get_learner(method: str | Learner, params: dict[str, Any] | None = None) -> Learner:
    """The validated config of ``method`` (a registered name, or a config) with ``params``."""
    params = params or {}
    if isinstance(method, Learner):
        known = REGISTRY.get(getattr(type(method), "name", None))
        if known is None or known.config is not type(method):
            raise ValueError(f"{type(method).__name__} is not a registered learner; available: "
                             f"{sorted(_names())}")
        return method.replace(**params) if params else method
    load_family(method)
    if not isinstance(method, str) or method not in REGISTRY:
        raise ValueError(f"unknown method {method!r}; available: {sorted(_names())}")
    return REGISTRY[method].config().replace(**params)


def registration(method: str | Learner) -> Registration:
    """The :class:`~dpjax.learner.Registration` of a ``method=`` name or a config."""
    name = method.name if isinstance(method, Learner) else method
    load_family(name)
    return REGISTRY[name]


def __getattr__(name: str) -> type[Learner]:
    if name.startswith("__"):      # the import system's probes (``__path__``) load nothing
        raise AttributeError(f"module 'dpjax.learners' has no attribute {name!r}")
    for entry in registrations():
        if entry.config.__name__ == name:
            return entry.config
    raise AttributeError(f"module 'dpjax.learners' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *(entry.config.__name__ for entry in registrations())])


__all__ = ["FAMILIES", "LEARNERS", "FitContext", "Learner", "Registration", "get_learner",
           "load_all", "load_family", "register", "registration", "registrations", "unregister"]
