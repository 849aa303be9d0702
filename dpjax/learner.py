"""The learner contract (``docs/design.md``, "Learners"): a learner is a frozen, validated,
hashable config whose methods are pure functions, registered under its ``method=`` name.

    config = MalphaBoosted(n_trees=20, depth=3)      # validated once, here
    params, costs = config.fit(key, codes, y, epsilon, context, alpha=a, beta_tree=b)
    config.proba(params, codes); config.predict(params, codes, key)

* Every hyper-parameter is a dataclass field declared with :func:`hyper` (static: it sets shapes
  or code paths, so it is part of the compiled program) or :func:`traced` (a float32 array at
  fit time, so a sweep over it is one ``vmap``; ``epsilon`` is always traced). Each field carries
  its own check, run when the config is built; cross-field rules go in ``validate``.
* Traced fields do not take part in ``==`` / ``hash``: two configs are equal exactly when they
  compile to the same program, so the config *is* the compile-cache key (of the fit, and of
  the jitted ``proba`` / ``predict``, which therefore must not read traced fields).
* ``fit(key, codes, y, epsilon, context, **traced) -> (params, costs)`` is pure and jittable;
  ``epsilon is None`` fits without privacy; ``costs`` maps each kind of release to the
  :class:`~dpjax.privacy.Cost` its mechanism reported (the ledger is assembled from them).
* A new learner is one folder (its config, its pure ``fit``, its params pytree and its
  ``describe``) whose config class carries one :func:`register` line: the runtime (fits,
  sweeps, model files, plots, scikit-learn estimators) reads everything else off the
  :class:`Registration`. Built-in families are listed once, in :mod:`dpjax.learners`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from typing import Any, ClassVar, NamedTuple, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

Check = Callable[[str, Any], Any]


class FitContext(NamedTuple):
    """What a fit knows besides its hyper-parameters.

    Attributes:
      n_codes_per_feature: static codes of each feature (``FeatureSpec.n_codes``).
      n_classes: static number of (declared) classes.
      sensitivity: static count sensitivity of the neighbouring relation (1 add/remove, 2
        replace-one).
      size: traced public sample size ``ñ`` (declared, or the row count under replace-one), or
        ``None`` when the row count is private (a learner that needs it releases a noisy count)
        and for non-private fits (which may read the row count).
      structure_key: traced key for data-independent structure that the models of a sweep may
        share (random trees' splits), or ``None`` (derive it from the fit's key).
      delta: static ``δ`` of the request.
    """

    n_codes_per_feature: np.ndarray
    n_classes: int
    sensitivity: float = 1.0
    size: jax.Array | None = None
    structure_key: jax.Array | None = None
    delta: float = 0.0
    """Static ``δ`` asked for (0: pure ``ε``-DP); a learner may spend it (e.g. zCDP)."""
    weights: jax.Array | None = None
    """Traced record weights ``[m]`` in ``[0, 1]`` (``sample_weight``; only for learners with
    :attr:`Learner.takes_weights`), or ``None``: every record counts 1."""
    n_ordered: np.ndarray | None = None
    """Static count of each feature's ordered codes (``FeatureSpec.n_ordered``: a numeric
    feature's equal-width bins, its first codes; 0 for categorical and constant features), or
    ``None`` (no feature is ordered); a learner may merge adjacent ordered codes."""
    target: tuple[float, float] | None = None
    """Static public range ``(lo, hi)`` of a regression target (``task="regression"``'s
    ``y_bounds``; ``y`` is then float32, clipped into it), or ``None`` for classification."""


def records(y: jax.Array, n_classes: int) -> jax.Array:
    """Bool ``[m]``: which rows of the class labels ``y`` are records, and not padding rows
    (the label ``n_classes``, which a learner with :attr:`Learner.pads_rows` counts nowhere)."""
    return jnp.asarray(y) < n_classes


def hyper(default: Any, check: Check) -> Any:
    """A static hyper-parameter with its default and its check ``(name, value) -> value``."""
    return dataclasses.field(default=default, metadata={"check": check})


def traced(default: Any, check: Check) -> Any:
    """A traced (sweepable) hyper-parameter: an array at fit time, not part of ``==``."""
    return dataclasses.field(default=default, compare=False,
                             metadata={"check": check, "traced": True})


CPU_CHOICES = ("default", "lean", "quick")
"""The values of :attr:`Learner.cpu_compile` (the option sets of
:data:`dpjax._preparation.CPU_COMPILE`)."""


@dataclasses.dataclass(frozen=True)
class Learner:
    """Base class of the learner configs (see the module docstring)."""

    name: ClassVar[str]

    cpu_compile: ClassVar[str] = "default"
    """The XLA options of the learner's every :func:`dpjax.fit` on CPU whose work is private
    or large (:data:`dpjax._preparation.CPU_COMPILE`: ``"default"``, ``"lean"`` or
    ``"quick"``), chosen by measurement: a shorter compile where the run stays about as fast.
    A constant of the learner, never of the data."""

    takes_weights: ClassVar[bool] = False
    """The learner takes record weights in ``[0, 1]`` (``sample_weight``) at unchanged
    sensitivity (a record moves each statistic by at most its weight)."""
    binary: ClassVar[bool] = False
    """The learner fits two classes only (:func:`dpjax.fit` refuses other class lists before
    any work)."""
    regression: ClassVar[bool] = False
    """The learner also fits a real target (``task="regression"``: ``FitContext.target`` is
    set, ``y`` is float32 and ``decision`` is the prediction in the target's units)."""
    default_bins: ClassVar[int] = 10
    """Equal-width bins per numeric feature when :func:`dpjax.fit`'s ``n_bins`` is not given."""
    pads_rows: ClassVar[bool] = False
    """The learner's classification fits ignore padding rows, rows labelled ``n_classes``
    (their statistics count no such row, and nothing reads the row count off the shape), so
    :func:`dpjax.fit` and :func:`dpjax.sweep` may pad the rows up to a bucket
    (:func:`dpjax._buckets.row_bucket`) and reuse one compiled program for every row count
    in it. The padded fit equals the unpadded one bit for bit
    (``tests/runtime/test_row_buckets.py``: private fits sum exact integers; non-private float
    sums add the padding's zeros after the rows, on CPU). A subclass that overrides ``fit``
    inherits the claim: it must decide it again."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            check = field.metadata.get("check")
            if check is not None:
                object.__setattr__(self, field.name, check(field.name,
                                                            getattr(self, field.name)))
        self.validate()

    def validate(self) -> None:
        """Rules between fields (raise ``ValueError``); the fields' own checks ran already."""

    def check_regression(self, private: bool) -> None:
        """Refuse (``ValueError``) a configuration whose regression (``task="regression"``)
        the learner does not serve, before the target is read."""

    @classmethod
    def traced_names(cls) -> tuple[str, ...]:
        """The traced hyper-parameters, in field order."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("traced"))

    @property
    def hyperparams(self) -> dict[str, Any]:
        """Every hyper-parameter by name (traced ones with their configured values)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def replace(self, **changes: Any) -> Learner:
        """A copy with ``changes`` applied (and checked); unknown names are a ``ValueError``."""
        unknown = sorted(set(changes) - set(self.hyperparams))
        if unknown:
            raise ValueError(f"method {self.name!r} has no parameter(s) {unknown}; it takes "
                             f"{sorted(self.hyperparams)}")
        return dataclasses.replace(self, **changes)

    def resolve_traced(self, traced: dict[str, Any]) -> dict[str, Any]:
        """Every traced hyper-parameter's value in a fit: ``traced[name]`` where given (the
        arrays of a compiled fit, a sweep's grid point), else this config's own value as the
        float32 the compiled fit traces (:meth:`encode_traced`)."""
        unknown = sorted(set(traced) - set(self.traced_names()))
        if unknown:
            raise TypeError(f"{self.name} has no traced hyper-parameter(s) {unknown}; it has "
                            f"{list(self.traced_names())}")
        return {n: traced[n] if n in traced else jnp.float32(self.encode_traced(n))
                for n in self.traced_names()}

    def encode_traced(self, name: str) -> float:
        """The float32 value a traced hyper-parameter takes in the compiled fit."""
        return float(getattr(self, name))

    def traced_value(self, name: str, value: Any) -> float:
        """``value`` as the compiled fit traces it: checked and encoded for a traced field (e.g.
        ``alpha="oc"`` -> its numeric code), as is for other traced arguments (``epsilon``)."""
        if name in self.traced_names():
            return self.replace(**{name: value}).encode_traced(name)
        return float(value)

    def fit(self, key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array | None,
            context: FitContext, **traced: jax.Array) -> tuple[Any, Any]:
        raise NotImplementedError

    # --- plan, then step (docs/design.md, "Plan, then step") -------------------------------

    @property
    def planned(self) -> bool:
        """Whether the learner settles a plan before the program that fits it: its
        :meth:`schedule` releases what the plan reads in a small program of its own, the
        runtime reads the plan off it on the host (:meth:`plan`), and :meth:`grow` fits under
        that static plan (models that share one run as one vectorised program). A learner
        without a plan's choice (the default) is fitted by :meth:`fit` alone. The pure
        :meth:`fit` of a planned learner decides its plan in the program (``lax.cond``):
        vectorised, it runs every plan for every model, so a program that vectorises it (an
        audit, a tuning run) maps it instead."""
        return type(self).schedule is not Learner.schedule

    def schedule(self, key: jax.Array, y: jax.Array, epsilon: jax.Array | None,
                 context: FitContext, **traced: jax.Array) -> tuple[Any, Any]:
        """``(released, costs)``: the releases a plan reads (a released size, read off ``y``
        alone) and the schedule read off them, with the costs of those releases; pure. The
        fit's key is the same in :meth:`schedule` and :meth:`grow`: each draws from its own
        streams of it. Planned learners only (:attr:`planned`)."""
        raise NotImplementedError(f"{self.name} settles no plan")

    def plan(self, released: Any, context: FitContext, private: bool,
             batched: bool = False) -> Hashable:
        """The static, hashable plan of one model, read on the host off its released
        schedule (post-processing of released values; ``released`` as numpy values).
        ``batched``: the plan's program is vectorised over models (a ``lax.cond`` whose
        predicate differs between them runs every branch, with every operand copied per
        model: such a plan masks instead)."""
        raise NotImplementedError(f"{self.name} settles no plan")

    def plan_text(self, plan: Any) -> str:
        """A settled ``plan`` in words, for the model's ledger (:attr:`dpjax.privacy.
        PrivacyLedger.plan`): what the public schedule chose."""
        return str(plan)

    def grow(self, plan: Any, key: jax.Array, codes: jax.Array, y: jax.Array,
             epsilon: jax.Array | None, context: FitContext, released: Any,
             **traced: jax.Array) -> tuple[Any, Any]:
        """``(params, costs)`` of the fit under the static ``plan`` after its
        :meth:`schedule` ``released`` (the costs of the releases made here; with the
        schedule's, the costs of :meth:`fit`, bit for bit the same model)."""
        raise NotImplementedError(f"{self.name} settles no plan")

    def proba(self, params: Any, codes: jax.Array) -> jax.Array:
        """Class scores ``[m, C]``."""
        raise NotImplementedError

    def predict(self, params: Any, codes: jax.Array, key: jax.Array | None) -> jax.Array:
        """Class indices ``[m]`` (default: the argmax of :meth:`proba`, ties to the lower)."""
        return self.proba(params, codes).argmax(-1).astype(np.int32)

    def decision(self, params: Any, codes: jax.Array) -> jax.Array:
        """The real-valued score ``[m]`` of a binary model (positive: the second class), for
        learners that have one (their scikit-learn estimator gets ``decision_function``)."""
        raise NotImplementedError(f"{self.name} has no decision function")

    def dense_trees(self, params: Any) -> Any:
        """The model's :class:`~dpjax.trees.DenseTree` batch (drawn by
        :func:`dpjax.plots.plot_tree`), or ``None`` when it has none."""
        return None

    def row_limit(self, private: bool, n_features: int, regression: bool = False
                  ) -> int | None:
        """The most rows a fit of ``n_features`` features (of a real target with
        ``regression``) takes (a public limit of its exact statistics), or ``None``:
        :func:`dpjax.fit` refuses more before any work."""
        return None

    def weighted_row_limit(self) -> int | None:
        """The most rows a fit with ``sample_weight`` takes beyond the fixed-point limit
        (:data:`dpjax.privacy.fixed_point.MAX_ROWS`), or ``None``."""
        return None

    def describe(self, params: Any, spec: Any, classes: tuple) -> str | None:
        """A readable account of the fitted model for :meth:`dpjax.Model.summary` (``spec``:
        the public :class:`~dpjax.data.FeatureSpec`), or ``None``."""
        return None

    def check_request(self, private: bool, delta: float) -> None:
        """Refuse a fit request this learner cannot serve (``ValueError``), before any work: a
        private fit or not, at ``δ = delta``."""

    def importances(self, params: Any, spec: Any) -> np.ndarray:
        """Per-feature importance scores (non-negative, ``[n_features]``) read off the released
        parameters alone (:mod:`dpjax.trees.describe`); :meth:`dpjax.Model.feature_importances`
        normalises them."""
        raise NotImplementedError(f"{self.name} has no feature importances")

    def feature_terms(self, params: Any, spec: Any) -> np.ndarray | None:
        """Each feature's exact term of the decision function, ``F(x) = F_0 + Σ_f term[f,
        code_f]`` (``[n_features, codes]``, or ``[n_features, codes, classes]``), when the
        released model is additive, read off the parameters alone; ``None`` otherwise (then
        :func:`dpjax.plots.plot_shape` draws a partial dependence over rows the user gives)."""
        return None

    @property
    def needs_predict_key(self) -> bool:
        """Whether :meth:`predict` draws at random (then it needs a key)."""
        return False

    @property
    def composition(self) -> str:
        """The composition route of the ledger (:data:`dpjax.privacy.ROUTES`): ``"basic"``
        (sequential), or ``"zcdp"`` / ``"advanced"`` / ``"optimal"`` (the smaller of basic
        composition and the
        route's total at the requested ``δ``; for learners that size their noise for it)."""
        return "basic"

    def not_private(self) -> list[str]:
        """The parts of this configuration that read the data outside any mechanism (labelled
        paper modes); the API warns for each and the ledger's epsilon becomes infinite."""
        return []

    def footprint(self, m: int, n: int, max_codes: int, n_classes: int) -> float:
        """A rough upper estimate of the bytes one fit needs (the API refuses fits beyond the
        memory limit instead of running out of memory)."""
        return 0.0

    def shared_footprint(self, m: int, n: int) -> float:
        """The part of :meth:`footprint` that many models fitted at once share (the codes and
        what the fit derives from them alone): a sweep or audit of ``B`` models needs
        ``B·footprint − (B − 1)·shared``."""
        return 0.0


LearnerT = TypeVar("LearnerT", bound=type[Learner])


@dataclasses.dataclass(frozen=True)
class Registration:
    """What the runtime knows of a registered learner.

    Attributes:
      config: the config class (its fields are the hyper-parameters, of :func:`dpjax.fit` and
        of the scikit-learn estimator alike).
      params: every pytree type its fitted params are built of (the types a model file may
        hold for it).
      estimator: the name of its scikit-learn estimator class (:mod:`dpjax.sklearn`).
    """

    config: type[Learner]
    params: tuple[type, ...]
    estimator: str

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def regressor(self) -> str | None:
        """The name of its scikit-learn regressor (the estimator's with ``Regressor`` for
        ``Classifier``) where the learner fits a real target (:attr:`Learner.regression`),
        else ``None``."""
        if not self.config.regression:
            return None
        return self.estimator.removesuffix("Classifier") + "Regressor"

    @property
    def decision(self) -> Callable[..., jax.Array] | None:
        """The config's decision function ``(self, params, codes) -> [m]``, or ``None``."""
        method = self.config.decision
        return None if method is Learner.decision else method

    @property
    def describer(self) -> Callable[..., str | None]:
        """The config's ``describe(self, params, spec, classes)``."""
        return self.config.describe


REGISTRY: dict[str, Registration] = {}
"""Every registered learner by ``method=`` name (:func:`register`); the runtime reads it through
:mod:`dpjax.learners`, which imports each built-in family on first use."""


def register(*, params: tuple[type, ...], estimator: str) -> Callable[[LearnerT], LearnerT]:
    """Class decorator: make a learner config class available as ``dpjax.fit(...,
    method=cls.name)``, with ``params`` the pytree types of its fitted params (dataclasses and
    named tuples; arrays and tuples need none) and ``estimator`` the name of its scikit-learn
    estimator. The class must be a frozen dataclass
    whose fields leave ``==`` only if they are traced (the config is the compile-cache key); a
    name or estimator already taken by another class is an error. This is the built-in
    families' decorator: a learner from outside dpjax registers with
    :func:`dpjax.learners.register`, which imports the built-in families first (so that a name
    it takes from them is refused at once; this module imports no runtime module)."""
    params = tuple(params)
    if not all(isinstance(t, type) and (dataclasses.is_dataclass(t) or (
            issubclass(t, tuple) and hasattr(t, "_fields"))) for t in params):
        raise TypeError(f"params must be a tuple of the params' pytree types, dataclasses or "
                        f"named tuples (empty for params made of arrays and tuples only), got "
                        f"{params!r}")
    if not (isinstance(estimator, str) and estimator.isidentifier()):
        raise TypeError(f"estimator must be a class name, got {estimator!r}")

    def record(cls: LearnerT) -> LearnerT:
        name = getattr(cls, "name", None)
        if not (isinstance(name, str) and dataclasses.is_dataclass(cls)
                and cls.__dataclass_params__.frozen and issubclass(cls, Learner)):
            raise TypeError(f"{cls!r} must be a frozen dataclass subclass of Learner with a str "
                            "class attribute name")
        static_out_of_eq = [f.name for f in dataclasses.fields(cls)
                            if not f.compare and not f.metadata.get("traced")]
        if static_out_of_eq:
            raise TypeError(f"{cls.__name__}: fields {static_out_of_eq} are left out of == but "
                            "not traced; declare them with hyper() or traced()")
        if cls.cpu_compile not in CPU_CHOICES:
            raise ValueError(f"{cls.__name__}.cpu_compile must be one of {CPU_CHOICES}, got "
                             f"{cls.cpu_compile!r}")
        known = REGISTRY.get(name)
        if known is not None and known.config is not cls:
            raise ValueError(f"method name {name!r} is already registered to "
                             f"{known.config.__name__}")
        taken = [r.name for r in REGISTRY.values() if r.estimator == estimator and r.name != name]
        if taken:
            raise ValueError(f"estimator name {estimator!r} is already taken by {taken[0]!r}")
        REGISTRY[name] = Registration(cls, params, estimator)
        return cls

    return record


def unregister(name: str) -> None:
    """Remove the learner registered as ``name`` (a plugin that is unloaded, a test's toy)."""
    if REGISTRY.pop(name, None) is None:
        raise ValueError(f"no learner is registered as {name!r}")


# --- field checks ------------------------------------------------------------------------


def positive_int(upper: int | None = None) -> Check:
    def check(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1 or (
                upper is not None and value > upper):
            bound = f" and <= {upper}" if upper is not None else ""
            raise ValueError(f"{name} must be an integer >= 1{bound}, got {value!r}")
        return int(value)
    return check


def choice(*options: Any) -> Check:
    def check(name: str, value: Any) -> Any:
        if value not in options:
            raise ValueError(f"{name} must be one of {options}, got {value!r}")
        return value
    return check


def between(low: float, high: float) -> Check:
    """A number in ``[low, high]``."""
    def check(name: str, value: Any) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if isinstance(value, bool) or not low <= number <= high:
            raise ValueError(f"{name} must be in [{low:g}, {high:g}], got {value!r}")
        return number
    return check


def unit_interval(*, open_low: bool = True, open_high: bool = False) -> Check:
    def check(name: str, value: Any) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        low_ok = number > 0 if open_low else number >= 0
        high_ok = number < 1 if open_high else number <= 1
        if isinstance(value, bool) or not (low_ok and high_ok):
            interval = f"{'(' if open_low else '['}0, 1{')' if open_high else ']'}"
            raise ValueError(f"{name} must be in {interval}, got {value!r}")
        return number
    return check


def positive_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not (
            0 < float(value) < float("inf")):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def non_negative_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not (
            0 <= float(value) < float("inf")):
        raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")
    return float(value)


def or_literal(literal: Any, check: Check) -> Check:
    """``literal`` as is, anything else through ``check``."""
    def either(name: str, value: Any) -> Any:
        if isinstance(value, type(literal)) and value == literal:
            return value
        return check(name, value)
    return either
