"""The Python side of `examples/sdk_bridge/`: spawns the Rust CLI through the generated `bridge`
module and drives it. Nothing but the standard library, `bridge.py` and its runtime.

    python3 drive.py CLI [--transport stdio|tcp] [--framing content-length|newline] [--mode check|hang|bench]

`check` prints one JSON line, {"ok": true, "checks": [..]}, and exits 0 (or {"ok": false, ..}
and exits 1). `hang` prints {"cli_pid": N} and then {"in_call": true} once a long call is under
way, and waits (for a test to SIGKILL it). `bench` prints the p50 latencies of the generated
client and of a client written by hand on asyncio's streams, both on `--transport`, and the
mean CPU time (user + sys) of this process per call of each. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

import bridge
import jsonrpc_duplex_runtime as rt

T = TypeVar("T")
STEP = 10.0


async def within(what: str, awaitable: Awaitable[T]) -> T:
    try:
        return await asyncio.wait_for(awaitable, STEP)
    except asyncio.TimeoutError:
        raise AssertionError(f"{what}: nothing within {STEP} s") from None


class Tools:
    """What this side serves: the `echo` tool, and a log of the turn's events."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.events: list[bridge.TurnEvent] = []

    async def call_tool(self, name: str, input: str) -> str:
        self.log.append(f"tool {name}")
        if name != "echo":
            raise rt.RpcError(-32602, f"no tool {name}")
        return input.upper()

    async def event(self, event: bridge.TurnEvent) -> None:
        self.log.append(f"event {event['kind']}")
        self.events.append(event)


async def check(cli: str, transport: Literal["stdio", "tcp"], framing: rt.Framing) -> list[str]:
    tools = Tools()
    checks: list[str] = []
    args = ["--framing", framing]
    sdk = await within(
        "spawn", bridge.spawn(cli, args, tools=tools, transport=transport, framing=framing, stderr="capture")
    )
    async with sdk:
        session = sdk.session
        assert await within("ping", session.ping()) == "pong"
        checks.append("ping")

        summary = await within("turn", session.turn("hello big world"))
        tools.log.append("answer")
        kinds = [e["kind"] for e in tools.events]
        assert kinds == ["started", "text", "text", "text", "toolOutput", "finished"], kinds
        # Every event of the turn arrived before its answer, and the tool was called in between.
        assert tools.log == [
            "event started", "event text", "event text", "event text",
            "tool echo", "event toolOutput", "event finished", "answer",
        ], tools.log
        assert summary == {"turn": 1, "events": 6, "tool_output": "HELLO BIG WORLD"}, summary
        checks.append("turn: every event before the answer, the tool call answered")

        pulled = [event async for event in session.history()]
        assert pulled == tools.events, pulled
        checks.append("history: a stream pulled to its end")

        reports: list[bridge.Step] = []
        first = asyncio.get_running_loop().create_future()

        def on_step(step: bridge.Step) -> None:
            reports.append(step)
            if not first.done():
                first.set_result(None)

        cancel = rt.Cancel()
        call = asyncio.ensure_future(session.long_task(100_000, progress=on_step, cancel=cancel))
        await within("the first progress report", first)
        started = time.monotonic()
        cancel.cancel()
        try:
            await within("the cancelled call's answer", call)
            raise AssertionError("a cancelled long task answered with a result")
        except rt.RequestCancelled as e:
            elapsed = time.monotonic() - started
            assert e.code == -32800, e
        assert elapsed < 1.0, f"the cancel was answered after {elapsed:.3f} s"
        assert reports[0] == {"done": 1, "total": 100_000}, reports[0]
        checks.append(f"cancel: answered -32800 after {elapsed * 1000:.1f} ms")

        # Cancelling the awaiting task sends the cancel too; the session goes on.
        running = asyncio.get_running_loop().create_future()

        def on_running(_step: bridge.Step) -> None:
            if not running.done():
                running.set_result(None)

        task = asyncio.ensure_future(session.long_task(100_000, progress=on_running))
        await within("the second task's first report", running)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert await within("ping after a task cancel", session.ping()) == "pong"
        checks.append("task cancel")

        try:
            await within("fail", session.fail("grep"))
            raise AssertionError("fail answered with a result")
        except bridge.ToolFailedError as e:
            assert e.code == -32050 and e.message == "a tool failed", e
            assert e.data == {"tool": "grep", "reason": "it was asked to fail"}, e.data
        checks.append("typed error with its data")

        big = 9_007_199_254_740_993
        assert await within("add", session.add(big, 0)) == big
        try:
            await within("add overflow", session.add(2**62, 2**62))
            raise AssertionError("an overflowing add answered with a result")
        except bridge.ToolFailedError as e:
            assert e.data["tool"] == "add", e.data
        checks.append("64-bit integers")

        status = await within("stop", sdk.stop())
        assert status == 0, f"the CLI exited with {status}: {sdk.child.stderr_text() if sdk.child else ''}"
        checks.append("stop: exit status 0")
    return checks


async def hang(cli: str, transport: Literal["stdio", "tcp"]) -> None:
    tools = Tools()
    sdk = await within("spawn", bridge.spawn(cli, tools=tools, transport=transport))
    assert sdk.child is not None
    print(json.dumps({"cli_pid": sdk.child.pid}), flush=True)
    started = asyncio.get_running_loop().create_future()

    def on_step(_step: bridge.Step) -> None:
        if not started.done():
            started.set_result(None)

    call = asyncio.ensure_future(sdk.session.long_task(1_000_000, progress=on_step))
    await within("the first progress report", started)
    print(json.dumps({"in_call": True}), flush=True)
    await asyncio.wait_for(call, 60)


class RawClient:
    """The same client written by hand on asyncio's streams: Content-Length frames, no runtime."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":")).encode()
        self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def read(self) -> Any:
        length = 0
        while True:
            line = await self.reader.readuntil(b"\n")
            if line == b"\r\n":
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return json.loads(await self.reader.readexactly(length))

    async def call(self, method: str, params: Any, on_request: Callable[[Any], Any] | None = None) -> Any:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        await self.writer.drain()
        while True:
            message = await self.read()
            if "method" not in message and message.get("id") == self.next_id:
                return message["result"]
            if "method" in message and "id" in message and on_request is not None:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": on_request(message["params"])})
                await self.writer.drain()


def p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def bench(cli: str, pings: int, turns: int, transport: Literal["stdio", "tcp"]) -> dict[str, float]:
    """Both clients at once, each on a CLI of its own, on the same transport, timed in
    alternating calls."""
    tools = Tools()
    sdk = await within("spawn", bridge.spawn(cli, tools=tools, transport=transport))
    argv = ["--listen", "127.0.0.1:0"] if transport == "tcp" else []
    process = await asyncio.create_subprocess_exec(
        cli, *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    if transport == "tcp":
        # The address line, then asyncio's own TCP streams (TCP_NODELAY is asyncio's default).
        line = (await within("the address line", process.stdout.readline())).decode().strip()
        host, _, port = line.removeprefix(rt.ADDRESS_LINE_PREFIX).rpartition(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        raw = RawClient(reader, writer)
    else:
        raw = RawClient(process.stdout, process.stdin)
    samples: dict[str, list[float]] = {name: [] for name in ["ping", "raw_ping", "turn", "raw_turn"]}
    # This process's CPU time per call (user + sys, `time.process_time`), next to the wall clock:
    # on a loaded machine the wall clock also counts the waits for a core.
    cpu: dict[str, list[float]] = {name: [] for name in samples}

    async def timed(name: str, call: Awaitable[Any]) -> Any:
        c, t = time.process_time(), time.perf_counter()
        result = await call
        samples[name].append(time.perf_counter() - t)
        cpu[name].append(time.process_time() - c)
        return result

    # One call of each in turn, so that the machine's load falls on both alike.
    for _ in range(pings):
        await timed("ping", sdk.session.ping())
        assert await timed("raw_ping", raw.call("session/ping", None)) == "pong"
    for _ in range(turns):
        tools.events.clear()
        tools.log.clear()
        await timed("turn", sdk.session.turn("hello big world"))
        await timed(
            "raw_turn", raw.call("session/turn", {"prompt": "hello big world"}, lambda params: params["input"].upper())
        )
    await sdk.stop()
    if transport == "tcp":
        raw.writer.close()
    process.stdin.close()
    await process.wait()
    wall = {f"{name}_p50_us": p50(values) for name, values in samples.items()}
    # CPU per call as a mean: what the calls cost in all, over their number.
    return wall | {f"{name}_cpu_us": statistics.fmean(values) * 1e6 for name, values in cpu.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("cli")
    parser.add_argument("--transport", choices=["stdio", "tcp"], default="stdio")
    parser.add_argument("--mode", choices=["check", "hang", "bench"], default="check")
    parser.add_argument("--framing", choices=["content-length", "newline"], default="content-length")
    parser.add_argument("--pings", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=200)
    options = parser.parse_args()
    if options.mode == "hang":
        asyncio.run(hang(options.cli, options.transport))
        return 0
    if options.mode == "bench":
        print(json.dumps(asyncio.run(bench(options.cli, options.pings, options.turns, options.transport))))
        return 0
    try:
        checks = asyncio.run(check(options.cli, options.transport, options.framing))
    except Exception as e:  # noqa: BLE001 - the report says what failed
        print(json.dumps({"ok": False, "failed": f"{type(e).__name__}: {e}"}))
        return 1
    print(json.dumps({"ok": True, "checks": checks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
