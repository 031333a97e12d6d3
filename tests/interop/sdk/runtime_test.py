"""The generated Python runtime against a peer written by hand on raw bytes (a socketpair):
bad input gets a clear answer or a clear close reason, never a hang. Run by tests/sdk_bridge.rs
as `python3 runtime_test.py RUNTIME_DIR [streams]` (the peer on a `PushReader`, or on
asyncio's own `StreamReader`); prints one JSON line, {"ok": true, "checks": [..]}.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from typing import Any

sys.path.insert(0, sys.argv[1])
STREAMS = sys.argv[2:] == ["streams"]

import jsonrpc_duplex_runtime as rt  # noqa: E402

STEP = 10.0


class Raw:
    """The hand-written side: frames in and out, by hand."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send_bytes(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, message: Any) -> None:
        body = json.dumps(message).encode()
        await self.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def read(self) -> Any:
        length = 0
        while True:
            line = await asyncio.wait_for(self.reader.readuntil(b"\r\n"), STEP)
            if line == b"\r\n":
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return json.loads(await asyncio.wait_for(self.reader.readexactly(length), STEP))


async def pair(framing: rt.Framing = "content-length") -> tuple[rt.Peer, Raw]:
    a, b = socket.socketpair()
    # The reader `spawn` and `connect` use (a PushReader), or, with `streams`, asyncio's own.
    if STREAMS:
        reader, writer = await asyncio.open_connection(sock=a)
    else:
        reader, writer = await rt.open_reader(sock=a)
    raw_reader, raw_writer = await asyncio.open_connection(sock=b)
    peer = rt.Peer(reader, writer, framing=framing)

    async def echo(params: Any, _context: rt.CallContext) -> Any:
        return rt.by_position(params, 1)[0]

    async def slow(_params: Any, _context: rt.CallContext) -> Any:
        await asyncio.sleep(STEP * 3)
        return "finished"

    async def boom(_params: Any, _context: rt.CallContext) -> Any:
        raise KeyError("no such thing")

    peer.on_request("echo", echo)
    peer.on_request("slow", slow)
    peer.on_request("boom", boom)
    peer.start()
    return peer, Raw(raw_reader, raw_writer)


async def closed_with(peer: rt.Peer, call: asyncio.Future[Any]) -> str:
    reason = await asyncio.wait_for(peer.closed(), STEP)
    try:
        await asyncio.wait_for(call, STEP)
    except rt.ConnectionClosed:
        return reason
    raise AssertionError("a pending call did not fail when the connection closed")


def frame(message: Any) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def answers_behind_notifications() -> str:
    """Notifications that arrive before an answer are handled before its call returns, each
    on a task (one may suspend, and use `asyncio.timeout`), in order; a caller cancelled while
    its answer waits behind them sends no cancel; and with a PushReader, the answer behind a
    handler that does not suspend reaches its caller in the same turn of the event loop."""
    peer, raw = await pair()
    log: list[str] = []

    async def note(params: Any) -> None:
        assert asyncio.current_task() is not None, "a notification handler runs outside a task"
        log.append(f"{params['n']} start")
        if params.get("slow"):
            async with asyncio.timeout(STEP):
                for _ in range(3):
                    await asyncio.sleep(0)
        log.append(f"{params['n']} end")

    peer.on_notification("note", note)
    call = asyncio.ensure_future(peer.request("echo", ["x"]))
    request = await raw.read()
    await raw.send_bytes(
        frame({"jsonrpc": "2.0", "method": "note", "params": {"n": 1, "slow": True}})
        + frame({"jsonrpc": "2.0", "method": "note", "params": {"n": 2}})
        + frame({"jsonrpc": "2.0", "id": request["id"], "result": "x"})
    )
    assert await asyncio.wait_for(call, STEP) == "x"
    assert log == ["1 start", "1 end", "2 start", "2 end"], log

    # Cancelled while its answer waits behind a slow handler: the call was answered, so no
    # cancel goes out (the next message the peer reads is the next request). On asyncio's own
    # reader the answer is not read yet while the handler runs, so a cancel goes out then.
    log.clear()
    call = asyncio.ensure_future(peer.request("echo", ["y"]))
    request = await raw.read()
    await raw.send_bytes(
        frame({"jsonrpc": "2.0", "method": "note", "params": {"n": 3, "slow": True}})
        + frame({"jsonrpc": "2.0", "id": request["id"], "result": "y"})
    )
    while log != ["3 start"]:
        await asyncio.wait_for(asyncio.sleep(0), STEP)
    call.cancel()
    try:
        await asyncio.wait_for(call, STEP)
        raise AssertionError("a cancelled call returned")
    except asyncio.CancelledError:
        pass
    after = asyncio.ensure_future(peer.request("echo", ["z"]))
    message = await raw.read()
    if STREAMS and message.get("method") == "$/cancelRequest":
        message = await raw.read()
    assert message.get("method") == "echo", message
    await raw.send({"jsonrpc": "2.0", "id": message["id"], "result": "z"})
    assert await asyncio.wait_for(after, STEP) == "z"
    assert log == ["3 start", "3 end"], log
    if STREAMS:
        return "notifications before an answer are handled, in order and on a task, before its call returns"

    # The transport's callback, by hand: one turn of the loop runs the handler, then the caller.
    push = peer._push
    assert push is not None
    log.clear()
    call = asyncio.ensure_future(peer.request("echo", ["w"]))
    request = await raw.read()
    push.feed_data(
        frame({"jsonrpc": "2.0", "method": "note", "params": {"n": 4}})
        + frame({"jsonrpc": "2.0", "id": request["id"], "result": "w"})
    )
    await asyncio.sleep(0)
    assert log == ["4 start", "4 end"], log
    assert call.done() and call.result() == "w", "the answer reached its caller a turn of the loop later"
    return "notifications before an answer are handled, in order and on a task, before its call returns (the same turn of the loop)"


async def main() -> list[str]:
    checks: list[str] = []

    peer, raw = await pair()
    await raw.send_bytes(b"Content-Length: 5\r\n\r\n{oops")
    answer = await raw.read()
    assert answer["id"] is None and answer["error"]["code"] == -32700, answer
    # Not UTF-8 (an encoded lone surrogate), and UTF-8 behind a byte-order mark: not JSON-RPC's.
    for body in [b'{"jsonrpc":"2.0","id":7,"method":"echo","params":["\xed\xa0\x80"]}', b"\xef\xbb\xbf{}"]:
        await raw.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        answer = await raw.read()
        assert answer["id"] is None and answer["error"]["code"] == -32700, (body, answer)
    # A lone surrogate as a JSON escape is JSON: echoed back escaped (it has no UTF-8).
    body = b'{"jsonrpc":"2.0","id":8,"method":"echo","params":["\\ud800"]}'
    await raw.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert (await raw.read()) == {"jsonrpc": "2.0", "id": 8, "result": "\ud800"}
    await raw.send({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": ["hi"]})
    assert (await raw.read()) == {"jsonrpc": "2.0", "id": 1, "result": "hi"}
    checks.append("bad JSON (and a body not in UTF-8) is answered -32700 and the connection goes on")

    await raw.send({"jsonrpc": "2.0", "id": 2, "method": "nope"})
    answer = await raw.read()
    assert answer["error"]["code"] == -32601 and "nope" in answer["error"]["message"], answer
    checks.append("an unknown method is answered -32601")

    await raw.send({"jsonrpc": "2.0", "id": 3, "method": "echo", "params": {"x": 1}})
    assert (await raw.read())["error"]["code"] == -32602
    await raw.send({"jsonrpc": "2.0", "id": 4, "method": "echo", "params": [1, 2]})
    assert (await raw.read())["error"]["code"] == -32602
    checks.append("params of the wrong shape or count are answered -32602")

    await raw.send({"jsonrpc": "2.0", "id": 5, "method": "boom"})
    answer = await raw.read()
    assert answer["error"]["code"] == -32603 and "no such thing" in answer["error"]["message"], answer
    checks.append("a handler's exception is answered -32603 with its message")

    await raw.send({"jsonrpc": "2.0", "id": 6, "method": "slow"})
    await raw.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 6}})
    answer = await raw.read()
    assert answer == {"jsonrpc": "2.0", "id": 6, "error": {"code": -32800, "message": "The request was cancelled."}}, answer
    await raw.send({"jsonrpc": "2.0", "id": 8, "method": "slow"})
    await raw.send({"jsonrpc": "2.0", "id": 9, "method": "echo", "params": ["after"]})
    assert (await raw.read())["id"] == 9  # the slow handler is running by now
    await raw.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": [8]})
    answer = await raw.read()
    assert answer["id"] == 8 and answer["error"]["code"] == -32800, answer
    checks.append("a cancelled handler is answered -32800, before it started or while it runs")

    await raw.send({"jsonrpc": "2.0", "id": 7, "method": "$/enumerator/next", "params": [99]})
    assert (await raw.read())["error"]["code"] == -32001
    checks.append("an unknown enumerator token is answered -32001")

    call = asyncio.ensure_future(peer.request("echo", ["x"]))
    request = await raw.read()
    await raw.send({"jsonrpc": "2.0", "id": 12345, "result": "not ours"})
    await raw.send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": "bad"}})
    try:
        await asyncio.wait_for(call, STEP)
        raise AssertionError("an error answer without an integer code was a result")
    except rt.RpcError as e:
        assert e.code == -32603 and "integer code" in e.message, e
    checks.append("an answer to an id we never sent is ignored; a malformed error is a clear RpcError")

    checks.append(await answers_behind_notifications())

    call = asyncio.ensure_future(peer.request("echo", ["x"]))
    await raw.read()
    await raw.send_bytes(b"Content-Type: application/json\r\n\r\n")
    reason = await closed_with(peer, call)
    assert "without Content-Length" in reason, reason
    checks.append("a header block without Content-Length closes the connection, saying so")

    peer, raw = await pair()
    call = asyncio.ensure_future(peer.request("echo", ["x"]))
    await raw.read()
    await raw.send_bytes(b"Content-Length: 999999999999\r\n\r\n")
    reason = await closed_with(peer, call)
    assert "bytes" in reason, reason
    checks.append("a Content-Length over the limit closes the connection before reading it")

    peer, raw = await pair()
    call = asyncio.ensure_future(peer.request("echo", ["x"]))
    await raw.read()
    raw.writer.close()
    reason = await closed_with(peer, call)
    assert "closed" in reason, reason
    checks.append("the peer's EOF fails pending calls with ConnectionClosed")

    peer, raw = await pair("newline")
    call = asyncio.ensure_future(peer.request("echo", ["x"]))
    line = await asyncio.wait_for(raw.reader.readline(), STEP)
    request = json.loads(line)
    await raw.send_bytes(b"\n\r\n" + json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": "y"}).encode() + b"\r\n")
    assert await asyncio.wait_for(call, STEP) == "y"
    checks.append("newline framing: blank lines skipped, CRLF read")
    return checks


if __name__ == "__main__":
    try:
        result = asyncio.run(main())
    except Exception as e:  # noqa: BLE001 - the report says what failed
        import traceback

        traceback.print_exc()
        print(json.dumps({"ok": False, "failed": f"{type(e).__name__}: {e}"}))
        sys.exit(1)
    print(json.dumps({"ok": True, "checks": result}))
