# SPDX-License-Identifier: Apache-2.0
"""Shape matching: does a loaded (or parsed) upstream object still fit the plugin's patch?

A shape is the parameter list of a callable, normalised to names plus markers: ``=`` for a
parameter with a default, ``*``/``**`` for variadics, a bare ``*`` before keyword-only
parameters (annotations and default values are ignored). The recorded shapes of every
target, per upstream version line, are data in ``registry.py``; this module only compares.

A found shape that equals a recorded one matches that version line (``ok``). One that equals
none is still ``compatible`` when nothing the replacement relies on changed (upstream adds or
drops optional parameters between lines; the replacements forward what they do not read):

* every parameter the replacement reads (``Target.reads``; default: the required parameters
  every recorded shape shares) is there, at its recorded position unless the replacement
  binds by name; a read parameter some recorded line lacks may be absent, if no other
  parameter took its position;
* no parameter without a default is new (neither the replacement nor upstream's callers as
  recorded supply it);
* the kind is the same (a coroutine stays a coroutine, a class a class) and so is the head
  of the return annotation when the target records one and the code has one.

Anything else is a ``mismatch`` naming what changed. Two designs of the Responses module
exist (``detect_line``): the class line (``ResponsesStreamingProcessor``) and the older
pre-class line (module-level ``process_streaming_events``, 83ab45a5); a target tagged with
one checks ``other-line`` on the other (the class line has module functions of the pre-class
names with other shapes), so each line's patches install or stay absent on their own.
Attributes of classes are resolved through the MRO from ``vars(cls)``, so a method moved
into a base class is still found and nothing is bound by ``getattr``.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .marker import is_ours
from .upstream_names import OPENAI_PROTOCOL as OPENAI_PROTOCOL
from .upstream_names import OPENAI_SERVER as OPENAI_SERVER
from .upstream_names import POSTPROCESS_HANDLERS as POSTPROCESS_HANDLERS
from .upstream_names import RESPONSES_UTILS as RESPONSES_UTILS

Status = Literal["ok", "compatible", "missing", "mismatch", "not-loaded", "other-line"]
CLASS_LINE = "class"
PRE_CLASS_LINE = "pre-class"
LINE_TITLES = {
    CLASS_LINE: "class line (ResponsesStreamingProcessor)",
    PRE_CLASS_LINE: "pre-class line (module-level process_streaming_events, 83ab45a5)",
}
Kind = Literal["callable", "class", "coroutine", "binding"]


@dataclass(frozen=True)
class Shape:
    """A parameter list as recorded from the files of some upstream version lines."""

    lines: tuple[str, ...]
    params: str


def shape(*lines: str, params: str) -> Shape:
    return Shape(lines, params)


@dataclass(frozen=True)
class Param:
    name: str
    default: bool
    star: str  # "", "*" or "**"


def parse(params: str) -> list[Param]:
    """``"self, res, x=, *, y=, **k"`` as a list of :class:`Param` (a bare ``*`` is a
    nameless ``Param`` that only ends the positional parameters)."""
    out = []
    for part in filter(None, (p.strip() for p in params.split(","))):
        star = "**" if part.startswith("**") else "*" if part.startswith("*") else ""
        out.append(Param(part[len(star) :].rstrip("="), part.endswith("="), star))
    return out


def _names(params: list[Param]) -> list[str]:
    return [p.name for p in params if p.name]


def _positional(params: list[Param]) -> list[str]:
    names = []
    for param in params:
        if param.star:
            break
        names.append(param.name)
    return names


@dataclass(frozen=True)
class Target:
    """One object the plugin relies on: ``module`` + dotted ``path`` inside it."""

    module: str
    path: str
    shapes: tuple[Shape, ...] = ()  # empty: any callable
    kind: Kind = "callable"
    optional: bool = False  # absent on some versions (nothing to patch there)
    reads: tuple[str, ...] | None = None  # None: the required parameters all shapes share
    by_name: bool = False  # the replacement binds calls by name: positions do not matter
    returns: str | None = None  # head of the return annotation ("tuple"), when annotated
    source: str = ""  # a binding: the module whose object it must be
    source_attr: str = ""  # a binding under another name: the object's name in ``source``
    line: str | None = None  # the module design it belongs to (None: both)

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.path}"

    @property
    def lines(self) -> tuple[str, ...]:
        """Every version line a shape was recorded from."""
        return tuple(dict.fromkeys(line for s in self.shapes for line in s.lines))

    def needed(self) -> tuple[str, ...]:
        if self.reads is not None:
            return self.reads
        required = [
            {p.name for p in parse(s.params) if not p.default and not p.star} for s in self.shapes
        ]
        first = parse(self.shapes[0].params) if self.shapes else []
        return tuple(p.name for p in first if required and all(p.name in r for r in required))

    def expected(self) -> str:
        if self.kind == "class":
            return "a class"
        if self.kind == "binding":
            return f"the object {self.source}.{self.source_attr or self.path}"
        text = " | ".join(f"({s})" for s in sorted({s.params for s in self.shapes}))
        text = text or "a callable"
        return f"async {text}" if self.kind == "coroutine" else text


@dataclass(frozen=True)
class TargetCheck:
    target: Target
    status: Status
    found: str
    version: str | None = None  # recorded version lines the shape matched ("ok")
    why: str = ""  # what changed ("mismatch"), or what drifted ("compatible")

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "compatible")

    def describe(self) -> str:
        name = self.target.dotted
        if self.status == "ok":
            return f"{name}: ok ({self.found}; matches {self.version})"
        if self.status == "compatible":
            return f"{name}: compatible ({self.found}; {self.why})"
        if self.status == "not-loaded":
            return f"{name}: module not imported yet"
        if self.status == "other-line":
            return f"{name}: not on this line ({self.found})"
        why = f" ({self.why})" if self.why else ""
        return f"{name}: {self.status}{why}; expected {self.target.expected()}, found {self.found}"


def return_head(annotation: Any) -> str | None:
    """``tuple`` for ``Tuple[A, B]``, ``tuple[A, B]`` or ``"typing.Tuple[...]"``; None if absent."""
    if annotation is None or annotation is inspect.Signature.empty:
        return None
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__qualname__", "")
    text = text if isinstance(annotation, str) or text else str(annotation)
    return text.split("[", 1)[0].strip().rsplit(".", 1)[-1].lower() or None


def judge(target: Target, found: str, *, is_async: bool, returns: str | None) -> TargetCheck:
    """Compare a callable's shape with ``target``'s recorded shapes (see the module doc)."""
    shown = f"({found})"
    if target.kind == "coroutine" and not is_async:
        return TargetCheck(target, "mismatch", f"sync {shown}", why="no longer a coroutine")
    if target.returns and returns and returns != target.returns:
        why = f"returns {returns}, not {target.returns}"
        return TargetCheck(target, "mismatch", shown, why=why)
    matched = [line for s in target.shapes if s.params == found for line in s.lines]
    if matched or not target.shapes:
        return TargetCheck(target, "ok", shown, ", ".join(matched) or "any")
    problem = drift_problem(target, found)
    if problem:
        return TargetCheck(target, "mismatch", shown, why=problem)
    return TargetCheck(target, "compatible", shown, why=f"{drift(target, found)}; no recorded line")


def drift_problem(target: Target, found: str) -> str | None:
    """What changed that the replacement cannot absorb, or None."""
    have = parse(found)
    positional = _positional(have)
    recorded = [parse(s.params) for s in target.shapes]
    known = {name for ps in recorded for name in _names(ps)}
    new = [p.name for p in have if p.name and not p.star and not p.default and p.name not in known]
    if new:
        return f"new required parameter {new[0]!r}"
    for name in target.needed():
        where = {_positional(ps).index(name) for ps in recorded if name in _positional(ps)}
        if any(p.name == name for p in have):
            if where and not target.by_name and name in positional:
                if positional.index(name) not in where:
                    return f"{name!r} moved to position {positional.index(name)}"
            elif where and not target.by_name:
                return f"{name!r} is no longer positional"
            continue
        if all(any(p.name == name for p in ps) for ps in recorded):
            return f"no parameter {name!r}"
        if where and not target.by_name and len(positional) > min(where):
            return f"{name!r} is gone and position {min(where)} holds {positional[min(where)]!r}"
    return None


def drift(target: Target, found: str) -> str:
    """How ``found`` differs from the nearest recorded shape (a short phrase)."""
    names = _names(parse(found))
    best = min(target.shapes, key=lambda s: len(set(names) ^ set(_names(parse(s.params)))))
    recorded = _names(parse(best.params))
    parts = [f"+{n}" for n in names if n not in recorded]
    parts += [f"-{n}" for n in recorded if n not in names]
    return f"{' '.join(parts) or 'reordered'} against {', '.join(best.lines)}"


def shape_of(func: Any) -> str:
    """The normalised parameter list of ``func`` (see the module docstring)."""
    parts: list[str] = []
    for param in inspect.signature(func).parameters.values():
        if param.kind is param.KEYWORD_ONLY and not any(p.startswith("*") for p in parts):
            parts.append("*")
        if param.kind is param.VAR_POSITIONAL:
            parts.append(f"*{param.name}")
        elif param.kind is param.VAR_KEYWORD:
            parts.append(f"**{param.name}")
        elif param.default is not param.empty:
            parts.append(f"{param.name}=")
        else:
            parts.append(param.name)
    return ", ".join(parts)


def loaded_module(name: str) -> Any | None:
    """``sys.modules[name]`` once its import has finished, else None."""
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return None
    return module


def detect_line() -> str | None:
    """The design of the loaded ``responses_utils`` (``CLASS_LINE`` / ``PRE_CLASS_LINE``);
    None when it is not loaded or has neither the processor class nor the module function."""
    module = loaded_module(RESPONSES_UTILS)
    names = vars(module) if module is not None else {}
    if "ResponsesStreamingProcessor" in names:
        return CLASS_LINE
    if "process_streaming_events" in names:
        return PRE_CLASS_LINE
    return None


def resolve(owner: Any, name: str) -> Any:
    """``name`` as defined on ``owner`` (a class: looked up along the MRO in ``vars``)."""
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in vars(klass):
                return vars(klass)[name]
        raise AttributeError(name)
    return getattr(owner, name)


def lookup(target: Target, originals: Mapping[str, Any] | None = None) -> Any:
    """The object ``target`` names; raises LookupError if its module is not loaded. A module
    global the installer rebound is read from ``originals`` (dotted name -> upstream's
    object, as the installer saved it), so upstream's shape is judged, not our replacement's."""
    module = loaded_module(target.module)
    if module is None:
        raise LookupError(target.module)
    names = target.path.split(".")
    top = f"{target.module}.{names[0]}"
    obj: Any = originals[top] if originals and top in originals else resolve(module, names[0])
    for name in names[1:]:
        obj = resolve(upstream_class(obj), name)  # check upstream's methods, not ours
    return obj


def upstream_class(cls: Any) -> Any:
    """``cls`` with any of this project's subclasses peeled off."""
    while isinstance(cls, type) and is_ours(cls):
        cls = cls.__bases__[0]
    return cls


def unwrap(func: Any) -> Any:
    """``func`` with any of this project's wrappers peeled off."""
    while is_ours(func) and hasattr(func, "__wrapped__"):
        func = func.__wrapped__
    return func


def check(target: Target, originals: Mapping[str, Any] | None = None) -> TargetCheck:
    """Compare the loaded object with the recorded shapes (``originals``: see ``lookup``)."""
    line = detect_line() if target.line else None
    if line is not None and line != target.line:
        return TargetCheck(target, "other-line", f"this is the {LINE_TITLES[line]}")
    try:
        obj = lookup(target, originals)
    except LookupError:
        return TargetCheck(target, "not-loaded", "module not imported")
    except AttributeError as exc:
        return TargetCheck(target, "missing", f"no attribute {exc.args[0]!r}")
    if target.kind == "binding":
        ours = unwrap(upstream_class(obj))
        source = loaded_module(target.source)
        if source is None:
            return TargetCheck(target, "not-loaded", "module not imported")
        # upstream's object there, or what the installer rebound it to (imported by name
        # after the source was patched)
        name = target.source_attr or target.path
        current = source.__dict__.get(name)
        original = (originals or {}).get(f"{target.source}.{name}", current)
        if ours is not None and any(ours is unwrap(upstream_class(o)) for o in (original, current)):
            return TargetCheck(target, "ok", f"{ours.__module__}.{ours.__qualname__}", "any")
        return TargetCheck(target, "mismatch", repr(obj))
    if target.kind == "class":
        if isinstance(obj, type):
            return TargetCheck(target, "ok", "a class", "any")
        return TargetCheck(target, "mismatch", type(obj).__name__)
    func = unwrap(obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj)
    if not callable(func):
        return TargetCheck(target, "mismatch", f"non-callable {type(func).__name__}")
    try:
        found = shape_of(func)
        returns = return_head(inspect.signature(func).return_annotation)
    except (TypeError, ValueError):
        return TargetCheck(target, "mismatch", "a callable without a signature")
    return judge(target, found, is_async=inspect.iscoroutinefunction(func), returns=returns)
