# SPDX-License-Identifier: Apache-2.0
"""Build ``openai`` pydantic models from trusted values at near-dict cost.

``openai``'s ``BaseModel.model_construct`` runs its lenient type coercion on every field
(about 50 µs for a delta event); pydantic's own ``model_construct`` about 4 µs. The values
we emit are built by us, so ``construct`` fills in defaults and sets the instance dict
directly (about 1 µs). The result serialises exactly like a validated model.

``validating(True)`` (the test suite turns it on) validates every model built here against
its class first, so a wrong type or a part of the wrong class raises ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticUndefined

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__
_DEFAULTS: dict[type, tuple[tuple[str, Any, Callable[[], Any] | None], ...]] = {}
_validating = False


def validating(on: bool = True) -> None:
    """Validate every model built by ``construct``/``construct_complete`` (off by default)."""
    global _validating
    _validating = on


def is_validating() -> bool:
    return _validating


def _validate(cls: type, values: dict[str, Any]) -> None:
    try:
        cls.model_validate(values)
    except ValidationError as exc:
        raise TypeError(f"{cls.__name__} built from invalid values: {exc}") from exc


def _defaults(cls: type) -> tuple[tuple[str, Any, Callable[[], Any] | None], ...]:
    found = _DEFAULTS.get(cls)
    if found is None:
        found = tuple(
            (name, field.default, field.default_factory)
            for name, field in cls.model_fields.items()
            if field.default is not PydanticUndefined or field.default_factory is not None
        )
        _DEFAULTS[cls] = found
    return found


def construct(cls: type[M], **values: Any) -> M:
    """An instance of ``cls`` holding ``values`` (unvalidated) plus field defaults."""
    for name, default, factory in _defaults(cls):
        if name not in values:
            values[name] = factory() if factory is not None else default
    if _validating:
        _validate(cls, values)
    model = _new(cls)
    _set(model, "__dict__", values)
    # Only non-None values count as set, so ``exclude_unset`` serialises like
    # ``exclude_none`` at a fraction of its cost (5 µs instead of ~200 µs for a Response).
    _set(model, "__pydantic_fields_set__", {k for k, v in values.items() if v is not None})
    _set(model, "__pydantic_extra__", {})
    _set(model, "__pydantic_private__", None)
    return model


def construct_complete(cls: type[M], values: dict[str, Any]) -> M:
    """Like ``construct`` for ``values`` that already hold every field (no defaults filled).

    The per-token path: delta events are built from a dict literal naming all their fields.
    """
    if _validating:
        _validate(cls, values)
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", {})
    _set(model, "__pydantic_private__", None)
    return model
