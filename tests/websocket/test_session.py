# SPDX-License-Identifier: Apache-2.0
"""The session over a fake socket: back-pressure, cancellation, FIFO lanes, the in-flight cap."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from trtllm_stream_fix.websocket import ConnectionGate, WebSocketSettings, serve_websocket


class FakeSocket:
    """Just what the session uses of a Starlette WebSocket; ``send_text`` waits on ``open``."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: list[dict[str, Any]] = []
        self.open = asyncio.Event()
        self.open.set()
        self.scope: dict[str, Any] = {"extensions": {}}

    async def accept(self) -> None:
        pass

    async def close(self, code: int = 1000) -> None:
        self.incoming.put_nowait({"type": "websocket.disconnect", "code": code})

    async def receive(self) -> dict[str, Any]:
        return await self.incoming.get()

    async def send_text(self, text: str) -> None:
        await self.open.wait()
        self.sent.append(json.loads(text))

    def create(self, **body: Any) -> None:
        frame = {"type": "response.create", "model": "m", "input": "x", **body}
        self.incoming.put_nowait({"type": "websocket.receive", "text": json.dumps(frame)})

    def leave(self) -> None:
        self.incoming.put_nowait({"type": "websocket.disconnect", "code": 1001})


class Runner:
    """A turn runner yielding ``n`` events per turn; records how far each turn got."""

    def __init__(self, n: int = 50, pause: asyncio.Event | None = None) -> None:
        self.n = n
        self.pause = pause
        self.produced: dict[str, int] = {}
        self.closed: list[str] = []
        self.running = 0
        self.peak = 0

    async def __call__(self, body: dict[str, Any]):
        name = body["input"]
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            for i in range(self.n):
                if self.pause is not None:
                    await self.pause.wait()
                self.produced[name] = i + 1
                yield {"type": "response.output_text.delta", "i": i, "turn": name}
                await asyncio.sleep(0)
            yield {"type": "response.completed", "response": {"id": f"resp_{name}", "output": []}}
        finally:
            self.running -= 1
            self.closed.append(name)


def serve(socket: FakeSocket, runner: Runner, **settings: Any) -> asyncio.Task[None]:
    return asyncio.ensure_future(
        serve_websocket(
            socket,  # type: ignore[arg-type]
            runner,
            store=None,
            settings=WebSocketSettings(**settings),
            gate=ConnectionGate(10),
        )
    )


async def until(predicate: Any, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_a_slow_reader_holds_the_producer():
    async def main() -> None:
        socket, runner = FakeSocket(), Runner(n=1000)
        task = serve(socket, runner)
        socket.open.clear()  # the client stops reading
        socket.create(input="t")
        await until(lambda: runner.produced.get("t", 0) >= 1)
        await asyncio.sleep(0.2)
        assert runner.produced["t"] <= 2, runner.produced  # not buffered ahead
        socket.open.set()
        await until(lambda: len(socket.sent) == 1001)
        socket.leave()
        await task

    asyncio.run(main())


def test_disconnect_cancels_every_turn_and_closes_its_runner():
    async def main() -> None:
        pause = asyncio.Event()
        socket, runner = FakeSocket(), Runner(n=10, pause=pause)
        task = serve(socket, runner)
        socket.create(input="a", stream_id="a")
        socket.create(input="b", stream_id="b")
        await until(lambda: runner.running == 2)
        socket.leave()
        await asyncio.wait_for(task, 5)
        assert sorted(runner.closed) == ["a", "b"] and runner.running == 0

    asyncio.run(main())


def test_fifo_within_a_lane_and_the_in_flight_cap_across_lanes():
    async def main() -> None:
        socket, runner = FakeSocket(), Runner(n=5)
        task = serve(socket, runner, max_in_flight=2, max_queued=8)
        for name in ("a1", "a2", "a3"):
            socket.create(input=name, stream_id="a")
        for name in ("b1", "c1", "d1"):
            socket.create(input=name, stream_id=name[0])
        await until(lambda: sum(e["type"] == "response.completed" for e in socket.sent) == 6)
        lane_a = [e["turn"] for e in socket.sent if e.get("stream_id") == "a" and "turn" in e]
        assert lane_a == sorted(lane_a)  # a1's events, then a2's, then a3's
        assert all(e.get("stream_id") for e in socket.sent)
        assert runner.peak == 2
        socket.leave()
        await task

    asyncio.run(main())


def test_refusals_are_426_with_an_openai_body_or_a_close_without_the_extension():
    from trtllm_stream_fix.websocket import upgrade_refused_response

    response = upgrade_refused_response("WebSocket mode is disabled on this server.")
    assert response.status_code == 426
    error = json.loads(response.body)["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "websocket_not_supported")

    class NoExtension(FakeSocket):
        async def close(self, code: int = 1000, reason: str | None = None) -> None:
            self.closed = (code, reason)

    async def main() -> None:
        socket = NoExtension()
        await serve_websocket(
            socket,  # type: ignore[arg-type]
            Runner(),
            store=None,
            settings=WebSocketSettings(enabled=False),
            gate=ConnectionGate(1),
        )
        assert socket.closed[0] == 1008 and "disabled" in socket.closed[1]

    asyncio.run(main())


class Truncated(Runner):
    """A runner whose stream ends without a terminal event (a broken engine or server)."""

    async def __call__(self, body: dict[str, Any]):
        yield {"type": "response.created", "response": {"id": "resp_t", "output": []}}


def test_a_stream_without_a_terminal_event_ends_the_turn_with_an_error_event():
    async def main() -> None:
        socket, runner = FakeSocket(), Truncated()
        task = serve(socket, runner)
        socket.create(input="t", stream_id="s")
        await until(lambda: any(e["type"] == "error" for e in socket.sent), timeout=3)
        error = socket.sent[-1]
        assert error["status"] == 500 and error["stream_id"] == "s", error
        assert "terminal" in error["error"]["message"]
        socket.create(input="again")  # the connection stays usable
        await until(lambda: sum(e["type"] == "error" for e in socket.sent) == 2, timeout=3)
        socket.leave()
        await task

    asyncio.run(main())
