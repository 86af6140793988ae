# SPDX-License-Identifier: Apache-2.0
"""Seeded example values for a JSON Schema: the simulated model's function-call arguments.

A small generator for the subset of JSON Schema that function tools use (no library on the
project's list generates from a schema deterministically from a seed):

- ``type`` (one name or a list; ``null`` chosen only when it is the only one), ``enum``,
  ``const``, ``default`` (preferred when given);
- objects: ``properties``, ``required`` (always present), optional properties (about half),
  ``additionalProperties`` (no undeclared keys are ever added);
- strings: ``minLength``/``maxLength``, ``format`` ``date``, ``date-time``, ``email``,
  ``uri``/``url``, ``uuid``; a few property names get fitting values (``location``, ``city``,
  ``query``, ...);
- numbers and integers: ``minimum``/``maximum``, ``exclusiveMinimum``/``exclusiveMaximum``,
  ``multipleOf`` (integers);
- arrays: ``items``, ``minItems``/``maxItems``;
- ``anyOf``/``oneOf`` (the first branch), ``allOf`` (properties and ``required`` merged),
  local ``$ref`` (``#/$defs/...``, ``#/definitions/...``).

Not supported: ``pattern``, ``patternProperties``, ``if``/``then``/``else``, ``not``,
``dependentRequired``, remote ``$ref``; a schema using them may get values it rejects.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 8
_WORDS = ("weather", "forecast", "paris", "tokyo", "river", "mountain", "report", "summary")
_NAMED = {
    "location": ("Paris, France", "Tokyo, Japan", "New York City, USA"),
    "city": ("Paris", "Tokyo", "Lisbon"),
    "country": ("France", "Japan", "Portugal"),
    "query": ("weather in Paris", "capital of France", "rivers of Europe"),
    "unit": ("celsius", "fahrenheit"),
    "units": ("metric", "imperial"),
    "name": ("Ada", "Grace", "Linus"),
    "email": ("ada@example.com", "grace@example.com"),
    "user_id": ("u_1024", "u_2048"),
    "id": ("id_42", "id_7"),
    "url": ("https://example.com/a", "https://example.com/b"),
    "language": ("en", "fr", "ja"),
}
_FORMATS = {
    "date": lambda r: f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
    "date-time": lambda r: f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T12:00:00Z",
    "email": lambda r: f"user{r.randint(1, 99)}@example.com",
    "uri": lambda r: f"https://example.com/{r.choice(_WORDS)}",
    "url": lambda r: f"https://example.com/{r.choice(_WORDS)}",
    "uuid": lambda r: str(uuid.UUID(int=r.getrandbits(128), version=4)),
}


def sample(schema: Any, rng: random.Random, *, root: Any = None, name: str = "") -> Any:
    """A value for ``schema`` (``root`` resolves local ``$ref``; ``name``: the property)."""
    return _sample(schema, rng, root if root is not None else schema, name, 0)


def _sample(schema: Any, rng: random.Random, root: Any, name: str, depth: int) -> Any:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return None if depth > MAX_DEPTH else name or "value"
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return _sample({**_without(schema, key), **branches[0]}, rng, root, name, depth + 1)
    if isinstance(schema.get("allOf"), list):
        return _sample(_merge_all_of(schema), rng, root, name, depth + 1)
    kind = _type(schema)
    if kind == "object":
        return _object(schema, rng, root, depth)
    if kind == "array":
        return _array(schema, rng, root, name, depth)
    if kind == "integer":
        return _integer(schema, rng)
    if kind == "number":
        return _number(schema, rng)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return _string(schema, rng, name)


def _resolve(schema: Mapping[str, Any], root: Any) -> Mapping[str, Any]:
    for _ in range(MAX_DEPTH):
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return schema
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        if not isinstance(target, Mapping):
            return _without(schema, "$ref")
        schema = {**_without(schema, "$ref"), **target}
    return schema


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


def _merge_all_of(schema: Mapping[str, Any]) -> dict[str, Any]:
    merged = _without(schema, "allOf")
    properties = dict(merged.get("properties") or {})
    required = list(merged.get("required") or [])
    for part in schema["allOf"]:
        if isinstance(part, Mapping):
            properties.update(part.get("properties") or {})
            required += [r for r in part.get("required") or [] if r not in required]
            merged.update({k: v for k, v in part.items() if k not in ("properties", "required")})
    if properties:
        merged["properties"] = properties
    if required:
        merged["required"] = required
    return merged


def _type(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if kinds else "null"
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def _object(schema: Mapping[str, Any], rng: random.Random, root: Any, depth: int) -> dict:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = [r for r in schema.get("required") or () if isinstance(r, str)]
    out: dict[str, Any] = {}
    for key, sub in properties.items():
        if key in required or rng.random() < 0.5:
            out[key] = _sample(sub, rng, root, key, depth + 1)
    for key in required:
        if key not in out:  # required but not declared: any value will do
            out[key] = _string({}, rng, key)
    return out


def _array(schema: Mapping[str, Any], rng: random.Random, root: Any, name: str, depth: int):
    low = _int(schema.get("minItems"), 0)
    high = max(low, _int(schema.get("maxItems"), low + 2))
    items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {}
    singular = name[:-1] if name.endswith("s") else name
    return [_sample(items, rng, root, singular, depth + 1) for _ in range(rng.randint(low, high))]


def _int(value: Any, fallback: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else fallback


def _json_number(value: Any) -> float | None:
    """``value`` if it is a JSON number (not a bool), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _bounds(schema: Mapping[str, Any], low: float, high: float) -> tuple[float, float, bool, bool]:
    lo, hi = _json_number(schema.get("minimum")), _json_number(schema.get("maximum"))
    xlo, xhi = (
        _json_number(schema.get("exclusiveMinimum")),
        _json_number(schema.get("exclusiveMaximum")),
    )
    lo_open = hi_open = False
    if xlo is not None:
        lo, lo_open = xlo, True
    if xhi is not None:
        hi, hi_open = xhi, True
    if lo is None:
        lo = low if hi is None else hi - (high - low)
        hi = high if hi is None else hi
    elif hi is None:
        hi = lo + (high - low)
    return float(lo), float(hi), lo_open, hi_open


def _integer(schema: Mapping[str, Any], rng: random.Random) -> int:
    lo, hi, lo_open, hi_open = _bounds(schema, 1, 10)
    low = math.floor(lo) + 1 if lo_open and lo == math.floor(lo) else math.ceil(lo)
    high = math.ceil(hi) - 1 if hi_open and hi == math.ceil(hi) else math.floor(hi)
    step = _int(schema.get("multipleOf"), 1) or 1
    first = -(-low // step) * step
    if first > high:
        return low
    return first + step * rng.randint(0, (high - first) // step)


def _number(schema: Mapping[str, Any], rng: random.Random) -> float:
    lo, hi, lo_open, hi_open = _bounds(schema, 0.0, 100.0)
    if hi <= lo:
        return lo
    value = round(rng.uniform(lo, hi), 2)
    if (lo_open and value <= lo) or (hi_open and value >= hi) or not lo <= value <= hi:
        value = (lo + hi) / 2
    return value


def _string(schema: Mapping[str, Any], rng: random.Random, name: str) -> str:
    fmt = schema.get("format")
    if fmt in _FORMATS:
        value = _FORMATS[fmt](rng)
    elif name.lower() in _NAMED:
        value = rng.choice(_NAMED[name.lower()])
    else:
        value = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))
    low = _int(schema.get("minLength"), 0)
    high = _int(schema.get("maxLength"), max(len(value), low))
    if len(value) < low:
        value += "x" * (low - len(value))
    return value[: max(high, low)]
