#!/usr/bin/env python3
"""Writes the hand-made seed corpus under fuzz/seeds/ (committed; re-run after editing).

Every target reads its first byte as a control byte (decoders: chunk sizes; connection: bit 0 is
the framing, 0 = Content-Length, 1 = newline, the rest chunk sizes), then the peer's bytes."""
import json, os, shutil

HERE = os.path.dirname(os.path.abspath(__file__))

def cl(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body

def nl(body: bytes) -> bytes:
    return body + b"\n"

REQ = b'{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}'
REQ_S = b'{"jsonrpc":"2.0","id":"a","method":"echo","params":{"x":[1,{"y":null}]}}'
NOTE = b'{"jsonrpc":"2.0","method":"note","params":{"n":1}}'
RESP = b'{"jsonrpc":"2.0","id":0,"result":{"ok":true}}'
ERR = b'{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"no","data":[1]}}'
BATCH = b'[' + REQ + b',' + NOTE + b',{"jsonrpc":"2.0","id":2,"method":"add","params":[3,4]},5]'
CANCEL = b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}}'
WAIT = b'{"jsonrpc":"2.0","id":7,"method":"wait"}'
CALLBACK = b'{"jsonrpc":"2.0","id":8,"method":"callback"}'
COUNT = b'{"jsonrpc":"2.0","id":9,"method":"count","params":[2]}'
NEXT = b'{"jsonrpc":"2.0","id":10,"method":"$/enumerator/next","params":[0]}'
ABORT = b'{"jsonrpc":"2.0","method":"$/enumerator/abort","params":[0]}'
PANIC = b'{"jsonrpc":"2.0","id":11,"method":"panic"}'
PROGRESS = b'{"jsonrpc":"2.0","method":"$/progress","params":{"token":0,"value":1}}'
DEEP = b'{"jsonrpc":"2.0","id":12,"method":"echo","params":' + b"[" * 300 + b"]" * 300 + b"}"
BAD_UTF8 = b'{"jsonrpc":"2.0","id":13,"method":"echo","params":["\xff\xfe"]}'
NOT_JSON = b'{"jsonrpc":"2.0","id":'
EMPTY_BATCH = b"[]"
MESSAGES = [REQ, REQ_S, NOTE, RESP, ERR, BATCH, CANCEL, WAIT, CALLBACK, COUNT, NEXT, ABORT, PANIC, PROGRESS, DEEP,
            BAD_UTF8, NOT_JSON, EMPTY_BATCH]

def write(target: str, name: str, data: bytes):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

shutil.rmtree(os.path.join(HERE, "seeds"), ignore_errors=True)

# Content-Length decoder (limits: 100-byte messages, 64-byte header blocks).
write("frame_content_length", "valid", b"\x30" + cl(b"{}") + cl(b"[1]"))
write("frame_content_length", "headers", b"\x11" + b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}")
write("frame_content_length", "truncated_body", b"\x00" + b"Content-Length: 10\r\n\r\n{\"a\"")
write("frame_content_length", "truncated_header", b"\x00" + b"Content-Len")
write("frame_content_length", "huge_length", b"\x00" + b"Content-Length: 99999999999999999999\r\n\r\n{")
write("frame_content_length", "over_limit", b"\x00" + b"Content-Length: 101\r\n\r\n" + b"x" * 101)
write("frame_content_length", "at_limit", b"\x00" + cl(b"y" * 100))
write("frame_content_length", "long_header", b"\x00" + b"X-Long: " + b"a" * 60 + b"\r\n\r\n")
write("frame_content_length", "lf_only", b"\x00" + b"Content-Length: 2\n\n{}")
write("frame_content_length", "conflict", b"\x00" + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}")
write("frame_content_length", "charset", b"\x00" + b"Content-Length: 2\r\nContent-Type: x; charset=latin1\r\n\r\n{}")
write("frame_content_length", "invalid_utf8", b"\x00" + cl(b'["\xff"]'))

# Newline decoder (limit: 100-byte lines).
write("frame_newline", "valid", b"\x30" + nl(b"{}") + b"\r\n\n" + nl(b"[1]") + b"  \n" + b'{"a":1}')
write("frame_newline", "crlf", b"\x21" + b"{}\r\n[2]\r\n")
write("frame_newline", "over_limit", b"\x00" + b"x" * 150 + b"\n{}\n")
write("frame_newline", "at_limit", b"\x00" + b"y" * 100 + b"\r\n" + b"z" * 101 + b"\n")
write("frame_newline", "blank_long", b"\x00" + b" " * 120 + b"\n{}\n")
write("frame_newline", "invalid_utf8", b"\x00" + b'["\xff"]\n')
write("frame_newline", "no_final_newline", b"\x00" + b"{}\n[1]")

# Message parsing (no control byte: the input is one frame body).
for i, m in enumerate(MESSAGES):
    write("parse_message", "m%02d" % i, m)
write("parse_message", "deep_object", b'{"a":' * 200 + b"1" + b"}" * 200)
write("parse_message", "bom", b"\xef\xbb\xbf" + REQ)
write("parse_message", "null_id", b'{"jsonrpc":"2.0","id":null,"method":"m"}')
write("parse_message", "both", b'{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}')
write("parse_message", "bad_error", b'{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}')
write("parse_message", "float_id", b'{"jsonrpc":"2.0","id":1.5e3,"method":"m"}')

# The whole connection: one stream per framing with everything, and a few pathologies.
everything = [REQ, REQ_S, NOTE, RESP, ERR, BATCH, WAIT, CANCEL, CALLBACK, COUNT, NEXT, NEXT, ABORT, PANIC, PROGRESS,
              DEEP, BAD_UTF8, NOT_JSON, EMPTY_BATCH, REQ]
write("connection", "cl_everything", b"\xf0" + b"".join(cl(m) for m in everything))
write("connection", "nl_everything", b"\xf1" + b"".join(nl(m) for m in everything))
write("connection", "cl_huge_length", b"\x00" + cl(REQ) + b"Content-Length: 1073741824\r\n\r\n{")
write("connection", "cl_truncated", b"\x00" + cl(REQ) + b"Content-Length: 50\r\n\r\n{\"jsonrpc\"")
write("connection", "nl_over_limit", b"\x01" + b"[" * 1200 + b"\n" + nl(REQ))
write("connection", "cl_flood", b"\x00" + cl(CALLBACK) + b"".join(cl(NOTE) for _ in range(80)))
write("connection", "nl_flood_requests", b"\x01" + b"".join(nl(b'{"jsonrpc":"2.0","id":%d,"method":"wait"}' % i) for i in range(40)))
write("connection", "nl_duplicate_ids", b"\x01" + nl(WAIT) + nl(WAIT) + nl(CANCEL))
write("connection", "cl_stream", b"\x20" + cl(COUNT) + b"".join(cl(b'{"jsonrpc":"2.0","id":%d,"method":"$/enumerator/next","params":[%d]}' % (20 + i, i % 2)) for i in range(6)))

# The hidden-shape attacks of the README's limits table (examples/attack.rs), each in both
# framings: what a peer can make us hold or redo without looking like much.
def req(id_text: bytes, method: bytes, params: bytes = b"[]") -> bytes:
    return b'{"jsonrpc":"2.0","id":' + id_text + b',"method":"' + method + b'","params":' + params + b"}"

pad = b'"' + b"p" * 250 + b'"'
hidden = {
    # Request ids kept as spelled: big, fractional, exponent, negative zero, a string that reads as a number.
    "ids_as_spelled": [req(b"18446744073709551617", b"add", b"[1,2]"), req(b"1.50", b"add", b"[1,2]"),
                       req(b"1e2", b"add", b"[1,2]"), req(b"-0", b"add", b"[1,2]"), req(b'"1"', b"add", b"[1,2]"),
                       req(b"1", b"add", b"[1,2]")],
    # Message shape: arrays and scalars where a message belongs, alone and in a batch.
    "shapes": [b'["2.0",1,"echo",[5]]', b"5", b'"x"', b"null", b"[1,\"x\",null,[]]", b"{}"],
    # A batch one over max_batch_len (8), refused whole; one at the limit.
    "batch_over_length": [b"[" + b",".join([REQ] * 9) + b"]", b"[" + b",".join([NOTE] * 8) + b"]"],
    # A batch whose answer passes the message size (1 KiB): members' answers replaced by -32603.
    "batch_answer_over_size": [b"[" + b",".join(req(b"%d" % i, b"echo", b"[" + pad + b"]") for i in range(6)) + b"]"],
    # Requests whose params add up past max_concurrent_request_bytes (2 KiB), held while they wait.
    "request_bytes": [req(b"%d" % i, b"echo", b"[" + pad * 1 + b"," + pad + b"," + pad + b"]") for i in range(4)],
    # A request cancelled while it waits for a permit (4 run at once): answered when the cancel is read.
    "cancel_before_start": [req(b"%d" % i, b"wait") for i in range(5)]
                           + [b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":4}}'],
    # Reading on past the read-ahead while our call is pending: buffered inbound over 64 messages.
    "readahead_with_a_pending_call": [CALLBACK] + [NOTE] * 70,
    # Unread progress reports for our token, and progress for tokens nobody has.
    "progress_flood": [CALLBACK] + [PROGRESS] * 40
                      + [b'{"jsonrpc":"2.0","method":"$/progress","params":{"token":"nobody","value":1}}'] * 10,
    # Streams offered past max_offered_streams (8).
    "streams_over_limit": [req(b"%d" % (100 + i), b"count", b"[200]") for i in range(10)],
    # An error object of the wrong shape answering our call (the callback's ping, our id 0).
    "malformed_error_answer": [CALLBACK, b'{"jsonrpc":"2.0","id":0,"error":[-32050,"x"]}',
                               b'{"jsonrpc":"2.0","id":0,"result":1,"error":{"code":1,"message":"both"}}'],
    # Nesting past serde_json's 128 into a typed decode (-32602), and raw (kept, skipped).
    "deep_typed": [req(b"30", b"add", b"[" * 200 + b"]" * 200), req(b"31", b"echo", b"[" + b"{\"a\":" * 150 + b"1" + b"}" * 150 + b"]")],
    # Duplicate and colliding ids in flight.
    "ids_in_flight": [req(b"7", b"wait"), req(b"7", b"wait"), req(b'"7"', b"wait"), req(b"7.0", b"wait")],
}
for name, messages in hidden.items():
    write("connection", "cl_" + name, b"\x00" + b"".join(cl(m) for m in messages))
    write("connection", "nl_" + name, b"\x01" + b"".join(nl(m) for m in messages))
# Framing-level shapes: a header block past 256 bytes, a blank line past the message size, a
# line past it that is valid JSON.
write("connection", "cl_header_block", b"\x00" + b"X-Pad: " + b"h" * 300 + b"\r\n" + cl(REQ))
write("connection", "nl_blank_over_limit", b"\x01" + b" " * 1200 + b"\n" + nl(REQ))
write("connection", "nl_line_over_limit", b"\x01" + req(b"40", b"echo", b'["' + b"q" * 1200 + b'"]') + b"\n" + nl(REQ))
