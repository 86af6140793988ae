# SPDX-License-Identifier: Apache-2.0
"""The SSE frames ours sends for a fixed set of synthetic outputs, to compare environments.

``python -m trtllm_stream_fix.testing.event_dump write FILE`` writes every frame of every
stream (seeded synthetic outputs and the named scenarios at 1, 20 and seeded random tokens per
engine response; ids derived from fixed response ids, clock fixed) plus the field names of
the installed ``openai``'s Responses models. ``compare A B`` exits 0 when two such files hold
the same frames, byte for byte once parsed and re-serialised in order. The one difference
tolerated: a field that is ``null`` and that only one side's ``openai`` declares (a newer
``openai`` has more fields, which every Response then carries as ``null``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import inspect
import json
import pkgutil
import random
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..core.chat_chunks import format_chat_sse
from ..core.chat_machine import ChatChunkMachine, ChatContext
from ..core.config import DEFAULT_CONFIG
from ..core.machine import ResponsesEventMachine
from ..core.sse import format_sse
from ..defaults import new_context
from ..sim.model import NAMED_SCENARIOS, engine_responses, generate_outputs, named_output

DEFAULT_OUTPUTS = 60
SPLITS = ("1", "20", "random")
DISTRIBUTIONS = ("openai", "openai-harmony", "pydantic", "pydantic-core", "orjson")


def schema_fields() -> dict[str, list[str]]:
    """Field names of every model class under ``openai.types.responses``."""
    import openai.types.responses as package

    fields: dict[str, list[str]] = {}
    for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        module = __import__(info.name, fromlist=["_"])
        for name, cls in vars(module).items():
            if inspect.isclass(cls) and cls.__module__ == module.__name__:
                model_fields = getattr(cls, "model_fields", None)
                if isinstance(model_fields, dict):  # wire names (aliases) and field names
                    wire = {f.alias for f in model_fields.values() if f.alias}
                    fields[f"{cls.__module__}.{name}"] = sorted(wire | set(model_fields))
    return fields


def _versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for dist in DISTRIBUTIONS:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[dist] = None
    return found


def _streams(outputs: int, seed: int) -> Iterator[tuple[str, Any, Any]]:
    named = [named_output(name) for name in NAMED_SCENARIOS]
    for index, output in enumerate([*generate_outputs(outputs, seed), *named]):
        for split in SPLITS:
            batches: Any = random.Random(index) if split == "random" else int(split)
            yield f"{index}:{output.name}:{output.seed}/{split}", output, batches


def dump(outputs: int = DEFAULT_OUTPUTS, seed: int = 0, *, encoding: Any = None) -> dict[str, Any]:
    """Every frame of every stream, the installed versions and the openai field names."""
    if encoding is None:
        from ..encoding import load_gpt_oss_encoding

        encoding = load_gpt_oss_encoding()
    streams: dict[str, list[str]] = {}
    for key, output, batches in _streams(outputs, seed):
        streams[key] = responses_frames(output, batches, encoding, f"resp_dump{len(streams)}")
    return {"versions": _versions(), "fields": schema_fields(), "streams": streams}


def responses_frames(output: Any, batches: Any, encoding: Any, response_id: str) -> list[str]:
    """The SSE frames of one Responses stream of ``output`` (clock fixed at 0)."""
    context = new_context(response_id=response_id, created_at=0, clock=lambda: 0)
    machine = ResponsesEventMachine(context, config=DEFAULT_CONFIG, encoding=encoding)
    return [format_sse(event) for event in _streamed(machine, output, batches)]


def chat_frames(output: Any, batches: Any, encoding: Any, completion_id: str) -> list[str]:
    """The SSE frames of one chat stream of ``output`` (usage included, ``created`` 0)."""
    context = ChatContext(completion_id, "gpt-oss-20b", 0, include_usage=True)
    machine = ChatChunkMachine(context, encoding=encoding)
    return [format_chat_sse(frame) for frame in _streamed(machine, output, batches)]


def _streamed(machine: Any, output: Any, batches: Any) -> list[Any]:
    """Everything ``machine`` emits for ``output`` split into engine responses by ``batches``."""
    emitted = machine.start()
    for response in engine_responses(output, batches):
        emitted += machine.feed(
            response.token_ids_diff,
            finished=response.finished,
            finish_reason=response.finish_reason,
        )
    return emitted


def _one_sided_fields(a: dict[str, list[str]], b: dict[str, list[str]]) -> frozenset[str]:
    names: set[str] = set()
    for cls in set(a) | set(b):
        names |= set(a.get(cls, ())) ^ set(b.get(cls, ()))
    return frozenset(names)


def _without(value: Any, tolerated: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {
            k: _without(v, tolerated)
            for k, v in value.items()
            if not (v is None and k in tolerated)
        }
    if isinstance(value, list):
        return [_without(v, tolerated) for v in value]
    return value


def _canonical(frame: str, tolerated: frozenset[str]) -> str:
    head, _, data = frame.partition("\ndata: ")
    return head + "\n" + json.dumps(_without(json.loads(data), tolerated), ensure_ascii=False)


def compare(a: dict[str, Any], b: dict[str, Any], limit: int = 10) -> list[str]:
    """The differences between two dumps (at most ``limit``), empty when they match."""
    tolerated = _one_sided_fields(a["fields"], b["fields"])
    problems: list[str] = []
    if set(a["streams"]) != set(b["streams"]):
        problems.append(f"different streams: {sorted(set(a['streams']) ^ set(b['streams']))[:5]}")
    for key in sorted(set(a["streams"]) & set(b["streams"])):
        frames_a, frames_b = a["streams"][key], b["streams"][key]
        if len(frames_a) != len(frames_b):
            problems.append(f"{key}: {len(frames_a)} frames vs {len(frames_b)}")
            continue
        for i, (x, y) in enumerate(zip(frames_a, frames_b)):
            cx, cy = _canonical(x, tolerated), _canonical(y, tolerated)
            if cx != cy:
                problems.append(f"{key} frame {i}:\n  {cx[:300]}\n  {cy[:300]}")
                break
        if len(problems) >= limit:
            break
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trtllm_stream_fix.testing.event_dump")
    sub = parser.add_subparsers(dest="command", required=True)
    write = sub.add_parser("write", help="write this environment's frames to FILE")
    write.add_argument("file", type=Path)
    write.add_argument("--outputs", type=int, default=DEFAULT_OUTPUTS)
    write.add_argument("--seed", type=int, default=0)
    check = sub.add_parser("compare", help="exit 0 when two dumps hold the same frames")
    check.add_argument("a", type=Path)
    check.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    if args.command == "write":
        found = dump(args.outputs, args.seed)
        args.file.parent.mkdir(parents=True, exist_ok=True)
        args.file.write_text(json.dumps(found, ensure_ascii=False))
        frames = sum(len(f) for f in found["streams"].values())
        print(f"{len(found['streams'])} streams, {frames} frames, {found['versions']}")
        return 0
    a, b = (json.loads(path.read_text()) for path in (args.a, args.b))
    problems = compare(a, b)
    for problem in problems:
        print(problem, file=sys.stderr)
    streams = len(a["streams"])
    print(
        f"{streams} streams: {'identical' if not problems else 'DIFFERENT'} "
        f"({a['versions']} vs {b['versions']})"
    )
    return 1 if problems else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
