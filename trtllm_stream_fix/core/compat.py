# SPDX-License-Identifier: Apache-2.0
"""What differs across the supported ``openai``, ``pydantic`` and ``orjson`` versions.

The supported ranges start at the floors in ``pyproject.toml``. Each shortcut is detected
once, where it is first needed; when it is missing, the public API is used instead and one
line is logged (this module's logger). Output is the same either way; only the cost
differs. openai-harmony 0.0.4 to 0.0.8 differ in ``StreamableParser``'s ``strict`` argument
(0.0.6+; 0.0.4 always parses strictly), which ``harmony_driver.new_parser`` detects, and in
text after invalid UTF-8 (``harmony_keeps_text_after_invalid_utf8``; ``harmony_driver`` then
decodes content text itself).
"""

from __future__ import annotations

import json
import logging
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

logger = logging.getLogger(__name__)
_logged: set[str] = set()


def log_fallback(key: str, message: str) -> None:
    """Log ``message`` once per process for ``key``."""
    if key not in _logged:
        _logged.add(key)
        logger.warning("%s", message)


# -- pydantic: building models without validation (core/fastmodel.py) -------------------

_MODEL_SLOTS = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")


def ensure_complete(cls: type[BaseModel]) -> None:
    """Build ``cls``'s schema now if it was deferred (``openai`` sets ``defer_build``).

    pydantic < 2.12 cannot serialise a nested instance of a class whose build was deferred
    and never triggered (unvalidated construction never triggers it).
    """
    if not getattr(cls, "__pydantic_complete__", True):
        cls.model_rebuild()


def direct_construction_matches(build: Callable[..., Any]) -> bool:
    """Whether ``build(cls, **values)`` (slots set directly) equals pydantic's own result.

    Checked on a nested ``openai`` model; on any difference ``fastmodel`` uses
    ``model_construct`` instead, and one line is logged.
    """
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    try:
        slots = set(getattr(BaseModel, "__slots__", ()))
        if not set(_MODEL_SLOTS[1:]) <= slots:
            raise TypeError(f"BaseModel slots are {sorted(slots)}")
        text = {"type": "output_text", "text": "probe", "annotations": []}
        message = {"id": "msg_probe", "type": "message", "role": "assistant"}
        message |= {"status": "completed", "phase": "final_answer"}
        direct = build(
            ResponseOutputMessage, **message, content=[build(ResponseOutputText, **text)]
        )
        public = public_construct(ResponseOutputText, text)
        public = public_construct(ResponseOutputMessage, {**message, "content": [public]})
        for kwargs in ({"mode": "json"}, {"mode": "json", "exclude_unset": True}):
            if direct.model_dump(**kwargs, warnings=False) != public.model_dump(**kwargs):
                raise TypeError(f"model_dump({kwargs}) differs from model_construct's")
    except Exception as exc:  # any surprise: take the public path
        log_fallback(
            "construct",
            f"pydantic {_version('pydantic')}: direct model construction unavailable ({exc}); "
            "using BaseModel.model_construct (slower, same output)",
        )
        return False
    return True


def public_construct(cls: type[BaseModel], values: dict[str, Any]) -> Any:
    """pydantic's own ``model_construct`` (openai's override coerces every field: slower)."""
    return BaseModel.model_construct.__func__(  # type: ignore[attr-defined]
        cls, {k for k, v in values.items() if v is not None}, **values
    )


# -- openai-harmony: text after invalid UTF-8 ------------------------------------------

_KEEPS_TEXT: dict[str, bool] = {}


def harmony_keeps_text_after_invalid_utf8(encoding: Any) -> bool:
    """Whether this openai-harmony's parser goes on after an invalid UTF-8 sequence.

    openai-harmony 0.0.4 (TensorRT-LLM's pin) stops a message's text at the first invalid
    sequence (deltas and ``messages`` alike: the rest of the message is lost); 0.0.8 sends
    U+FFFD and goes on. Probed once per encoding with a lone continuation byte.
    """
    found = _KEEPS_TEXT.get(encoding.name)
    if found is None:
        from openai_harmony import Role, StreamableParser

        decode = encoding._inner.decode_bytes
        lone = next(i for i in range(1024) if bytes(decode([i])) == b"\x80")
        head = encoding.encode("<|channel|>final<|message|>ab", allowed_special="all")
        parser = StreamableParser(encoding, Role.ASSISTANT)
        text = []
        for token in [*head, lone, *encoding.encode(" word")]:
            parser.process(token)
            if token not in head:
                text.append(parser.last_content_delta or "")
        found = _KEEPS_TEXT[encoding.name] = "word" in "".join(text)
    return found


# -- openai: values newer than the installed schema -----------------------------------


def _newer_values() -> dict[tuple[str, str, str], str]:
    """(item type, field, value the current API sends) -> the stand-in an older openai knows."""
    from openai.types.responses import ResponseFunctionWebSearch

    known = typing.get_args(ResponseFunctionWebSearch.model_fields["status"].annotation)
    found = {}
    if "incomplete" not in known:  # openai < 3: a web search cut by the token limit
        found["web_search_call", "status", "incomplete"] = "failed"
    return found


NEWER_VALUES = _newer_values()


def for_installed_schema(values: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``values`` (an item's fields) with a value newer than this openai's schema replaced.

    Returns the values to validate and what was replaced (None: nothing). What we send is
    never changed: only validation against an older schema (tests, the checker) uses this.
    """
    for (item_type, name, newer), older in NEWER_VALUES.items():
        if values.get("type") == item_type and values.get(name) == newer:
            return {**values, name: older}, f"{item_type} {name} {newer!r}"
    return values, None


# -- openai: lenient construction of union types ------------------------------------------


def _construct_type_fallback(*, type_: Any, value: Any) -> Any:
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(type_).validate_python(value)
    except ValidationError:
        return value  # echoed as given, as openai's lenient construct_type would


def _load_construct_type() -> Callable[..., Any]:
    try:
        from openai._models import construct_type
    except ImportError as exc:
        log_fallback(
            "construct_type",
            f"openai {_version('openai')}: no openai._models.construct_type ({exc}); "
            "validating with pydantic.TypeAdapter instead",
        )
        return _construct_type_fallback
    return construct_type


construct_type: Callable[..., Any] = _load_construct_type()


# -- JSON (core/sse.py) -------------------------------------------------------------------


def _stdlib_dumps(value: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    text = json.dumps(value, default=default, ensure_ascii=False, separators=(",", ":"))
    return text.encode()


def _load_json() -> tuple[Callable[..., bytes], Callable[[str | bytes], Any]]:
    try:
        import orjson
    except ImportError:
        log_fallback(
            "orjson",
            "orjson is not installed; framing SSE with the standard json module "
            "(same JSON, slower: pip install orjson)",
        )
        return _stdlib_dumps, json.loads
    return orjson.dumps, orjson.loads


json_dumps, json_loads = _load_json()
"""``orjson.dumps`` / ``loads`` when installed, else the standard library (same JSON)."""


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "(unknown version)"
