# SPDX-License-Identifier: Apache-2.0
"""Build ``openai`` pydantic models from trusted values at near-dict cost.

``openai``'s ``BaseModel.model_construct`` runs its lenient type coercion on every field
(about 50 µs for a delta event); pydantic's own ``model_construct`` about 4 µs. The values
we emit are built by us, so ``construct`` fills in defaults and sets the instance dict
directly (about 1 µs). The result serialises exactly like a validated model.

Values for fields the installed ``openai`` does not declare (older versions have fewer) also
go to the model's extras (``openai`` models allow extra fields), so they serialise the same at
every supported version. Where direct construction does not work (``compat``), pydantic's
``model_construct`` builds the same model.

``validating(True)`` (the test suite turns it on) validates every model built here against
its class first, so a wrong type or a part of the wrong class raises ``TypeError``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticUndefined

from .compat import (
    direct_construction_matches,
    ensure_complete,
    for_installed_schema,
    public_construct,
)

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__
Defaults = tuple[tuple[str, Any, Callable[..., Any] | None], ...]
_CLASSES: dict[type, tuple[Defaults, frozenset[str]]] = {}
_validating = False


def validating(on: bool = True) -> None:
    """Validate every model built by ``construct``/``construct_complete`` (off by default)."""
    global _validating
    _validating = on


def is_validating() -> bool:
    return _validating


def _validate(cls: type[BaseModel], values: dict[str, Any]) -> None:
    try:
        cls.model_validate(for_installed_schema(values)[0])
    except ValidationError as exc:
        raise TypeError(f"{cls.__name__} built from invalid values: {exc}") from exc


def _shape(cls: type[BaseModel]) -> tuple[Defaults, frozenset[str]]:
    """``cls``'s field defaults and field names (its schema built, once per class)."""
    found = _CLASSES.get(cls)
    if found is None:
        ensure_complete(cls)
        defaults = tuple(
            (name, field.default, field.default_factory)
            for name, field in cls.model_fields.items()
            if field.default is not PydanticUndefined or field.default_factory is not None
        )
        found = _CLASSES[cls] = (defaults, frozenset(cls.model_fields))
    return found


def _fill(cls: type, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``values`` plus field defaults, and the values of fields ``cls`` does not declare."""
    defaults, names = _shape(cls)
    for name, default, factory in defaults:
        if name not in values:
            values[name] = factory() if factory is not None else default
    extra: dict[str, Any] = {}
    if len(values) != len(names):  # fields this openai version does not declare
        # Kept in the instance dict too, where pydantic ignores them: SSE framing reads the
        # dict, so the wire order stays the order given. None values stay out of the extras,
        # so ``exclude_unset`` leaves them out as it does a declared field left at None.
        extra = {k: v for k, v in values.items() if k not in names and v is not None}
    return values, extra


def _direct(cls: type[M], values: dict[str, Any], extra: dict[str, Any]) -> M:
    model = _new(cls)
    _set(model, "__dict__", values)
    # Only non-None values count as set, so ``exclude_unset`` serialises like
    # ``exclude_none`` at a fraction of its cost (5 µs instead of ~200 µs for a Response).
    _set(model, "__pydantic_fields_set__", {k for k, v in values.items() if v is not None})
    _set(model, "__pydantic_extra__", extra)
    _set(model, "__pydantic_private__", None)
    return model


@functools.cache
def _direct_works() -> bool:
    return direct_construction_matches(lambda cls, **values: _direct(cls, *_fill(cls, values)))


def construct(cls: type[M], **values: Any) -> M:
    """An instance of ``cls`` holding ``values`` (unvalidated) plus field defaults."""
    values, extra = _fill(cls, values)
    if _validating:
        _validate(cls, values)
    if _direct_works():
        return _direct(cls, values, extra)
    return cast(M, public_construct(cls, values))


# BaseModel's slot descriptors, called directly: no attribute lookup per instance.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


RawSetters = tuple[Callable[..., Any], ...]
_RAW_SETTERS: RawSetters = (_new, _set_dict, _set_fields, _set_extra, _set_private)


def builds_directly(cls: type, names: frozenset[str] | set[str]) -> bool:
    """Whether ``construct_complete`` of exactly the fields ``names`` builds ``cls`` directly.

    True when this openai declares them all and direct construction works.
    """
    return set(names) == set(_shape(cls)[1]) and _direct_works()


def keys_given(model: Any, given: Any, *, drop: bool = True) -> Any:
    """``model`` (built from the dict ``given``) with the fields ``given`` names first.

    In ``given``'s order, so it serialises as ``given`` reads; ``drop`` leaves the other
    fields out (they would be ``null``). Keep them (``drop=False``) for a model in a union
    field: pydantic's union serialiser warns about a model with fields missing. Nested
    models are kept whole.
    """
    if not isinstance(model, BaseModel) or not isinstance(given, dict):
        return model
    fields = type(model).model_fields
    by_key = {(field.alias or name): name for name, field in fields.items()}
    values = model.__dict__
    kept = {by_key[k]: values[by_key[k]] for k in given if by_key.get(k) in values}
    if not drop:
        kept.update((name, value) for name, value in values.items() if name not in kept)
    _set(model, "__dict__", kept)
    _set(model, "__pydantic_fields_set__", {k for k, v in kept.items() if v is not None})
    return model


def direct_setters(cls: type, names: frozenset[str] | set[str]) -> RawSetters | None:
    """The raw setters for a builder that inlines ``construct_complete`` of ``names``.

    ``(object.__new__, set __dict__, set fields set, set extra, set private)``, for
    ``events.delta_builder``; None when it must call ``construct_complete`` instead (the
    validating mode is on, or ``cls`` is not built directly here).
    """
    if _validating or not builds_directly(cls, names):
        return None
    return _RAW_SETTERS


def construct_complete(
    cls: type[M],
    values: dict[str, Any],
    fields_set: set[str] | None = None,
    extra: dict[str, Any] | None = None,
) -> M:
    """Like ``construct`` for ``values`` that already hold every field (no defaults filled).

    The per-token path: delta events are built from a dict literal naming all their fields.
    ``fields_set`` (default: every field) are the fields serialised by ``exclude_unset``;
    ``extra`` the model's extra fields.
    """
    if len(values) != len(_shape(cls)[1]) or not _direct_works():
        model = construct(cls, **values)
        if fields_set is not None:
            _set_fields(model, fields_set)
        if extra:
            _set_extra(model, extra)
        return model
    if _validating:
        _validate(cls, values)
    model = _new(cls)
    _set_dict(model, values)
    _set_fields(model, set(values) if fields_set is None else fields_set)
    _set_extra(model, {} if extra is None else extra)
    _set_private(model, None)
    return model


def mark_set(model: M, *names: str) -> M:
    """Count the fields ``names`` of ``model`` as set: ``exclude_unset`` keeps them (``null``)."""
    model.__pydantic_fields_set__.update(names)
    return model


def with_extra(model: M, extra: dict[str, Any]) -> M:
    """``model`` with ``extra`` as its extra fields (serialised after the declared ones)."""
    if extra:
        _set_extra(model, extra)
    return model
