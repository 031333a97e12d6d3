package bridge

// The generated runtime against a peer written by hand on raw bytes (net.Pipe): bad input gets a
// clear answer or a clear close reason, never a hang. Run by tests/sdk_bridge.rs (`go test`).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

type rawPeer struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func (p *rawPeer) sendBytes(b string) {
	_ = p.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := p.conn.Write([]byte(b)); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

func (p *rawPeer) send(m any) {
	body, _ := json.Marshal(m)
	p.sendBytes("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
}

func (p *rawPeer) read() map[string]any {
	_ = p.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	length := 0
	for {
		line, err := p.r.ReadString('\n')
		if err != nil {
			p.t.Fatalf("read: %v", err)
		}
		if line == "\r\n" {
			break
		}
		if name, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "content-length") {
			length, _ = strconv.Atoi(strings.TrimSpace(value))
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(p.r, body); err != nil {
		p.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		p.t.Fatalf("not JSON: %s", body)
	}
	return m
}

func code(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

func pair(t *testing.T, framing Framing) (*Peer, *rawPeer) {
	a, b := net.Pipe()
	peer := NewPeer(a, a, framing, DefaultProfile())
	peer.OnRequest("echo", func(_ context.Context, params json.RawMessage) (any, error) {
		p, err := Params(params, []string{"value"}, false)
		if err != nil {
			return nil, err
		}
		return Decode[string](p[0])
	})
	peer.OnRequest("slow", func(ctx context.Context, _ json.RawMessage) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	peer.Start()
	t.Cleanup(func() { _ = peer.Close(); _ = b.Close() })
	return peer, &rawPeer{t: t, conn: b, r: bufio.NewReader(b)}
}

func TestRuntimeAnswersBadInput(t *testing.T) {
	_, raw := pair(t, ContentLength)
	raw.sendBytes("Content-Length: 5\r\n\r\n{oops")
	if m := raw.read(); code(m) != -32700 || m["id"] != nil {
		t.Fatalf("bad JSON: %v", m)
	}
	raw.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "nope"})
	if m := raw.read(); code(m) != -32601 {
		t.Fatalf("unknown method: %v", m)
	}
	raw.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "echo", "params": []any{1}})
	if m := raw.read(); code(m) != -32602 {
		t.Fatalf("a param of the wrong type: %v", m)
	}
	raw.send(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "echo", "params": []any{"a", "b"}})
	if m := raw.read(); code(m) != -32602 {
		t.Fatalf("too many params: %v", m)
	}
	raw.send(map[string]any{"jsonrpc": "2.0", "id": 4, "method": "slow"})
	raw.send(map[string]any{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": map[string]any{"id": 4}})
	if m := raw.read(); code(m) != -32800 || m["id"] != float64(4) {
		t.Fatalf("a cancel: %v", m)
	}
	raw.send(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "$/enumerator/next", "params": []any{99}})
	if m := raw.read(); code(m) != -32001 {
		t.Fatalf("an unknown token: %v", m)
	}
	raw.send(map[string]any{"jsonrpc": "2.0", "id": 6, "method": "echo", "params": []any{"still here"}})
	if m := raw.read(); m["result"] != "still here" {
		t.Fatalf("the connection did not go on: %v", m)
	}
}

func TestRuntimeCallsEndWithTheConnection(t *testing.T) {
	for _, tc := range []struct{ name, bytes, reason string }{
		{"no Content-Length", "Content-Type: x\r\n\r\n", "without Content-Length"},
		{"over the limit", "Content-Length: 999999999999\r\n\r\n", "Content-Length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer, raw := pair(t, ContentLength)
			done := make(chan error, 1)
			go func() { done <- peer.Request(context.Background(), "echo", []any{"x"}, nil, nil) }()
			raw.read()
			raw.sendBytes(tc.bytes)
			select {
			case err := <-done:
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("the pending call ended with %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the pending call did not end")
			}
			<-peer.Done()
			if reason := fmt.Sprint(peer.reason); !strings.Contains(reason, tc.reason) {
				t.Fatalf("closed because %q", reason)
			}
		})
	}
}

func TestRuntimeReadsNewlineFramingAndTypedErrors(t *testing.T) {
	peer, raw := pair(t, Newline)
	done := make(chan error, 1)
	go func() {
		done <- peer.Request(context.Background(), "session/fail", nil, nil, typedErrors{-32050: newToolFailedError})
	}()
	_ = raw.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := raw.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var request map[string]any
	_ = json.Unmarshal([]byte(line), &request)
	answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": request["id"], "error": map[string]any{
		"code": -32050, "message": "a tool failed", "data": map[string]any{"tool": "t", "reason": "r"},
	}})
	raw.sendBytes("\n\r\n" + string(answer) + "\r\n")
	err = <-done
	var failed *ToolFailedError
	if !errors.As(err, &failed) || failed.Data != (BridgeError{Tool: "t", Reason: "r"}) {
		t.Fatalf("the typed error: %#v", err)
	}
}

func TestRuntimeFindsTheMembersOfAMessageInOnePass(t *testing.T) {
	peer, raw := pair(t, ContentLength)
	peer.OnDecodedRequest("pair", func(params json.RawMessage) (Call, error) {
		var p struct {
			A int    `json:"a"`
			B string `json:"b"`
		}
		if err := DecodeParams(params, &p, &p.A, &p.B); err != nil {
			return nil, err
		}
		return func(context.Context) (any, error) { return strconv.Itoa(p.A) + p.B, nil }, nil
	})
	frame := func(body string) { raw.sendBytes("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body) }
	for _, tc := range []struct{ body, want string }{
		{`[{"jsonrpc":"2.0","id":1,"method":"echo"}]`, "-32600 <nil>"},
		{`"a string"`, "-32600 <nil>"},
		{`{"jsonrpc":"2.0","id":7,"method":5}`, "-32600 7"},
		{`{"jsonrpc":"2.0","id":8,"meth\u006fd":"echo","params":["escaped key"]}`, "escaped key"},
		{` { "jsonrpc" : "2.0" , "id" : 9 , "method" : "ec\u0068o" , "params" : [ "spaced, {escaped} \"method\"" ] } `, `spaced, {escaped} "method"`},
		{`{"jsonrpc":"2.0","params":{"b":"x","a":1,"c":[{"d":"}"}]},"id":"s","method":"pair"}`, "1x"},
		{`{"jsonrpc":"2.0","id":10,"method":"pair","params":[2,"y"]}`, "2y"},
		{`{"jsonrpc":"2.0","id":11,"method":"pair","params":{"a":"no"}}`, "-32602 11"},
		{`{"jsonrpc":"2.0","id":12,"method":"pair","params":[1,"x",3]}`, "-32602 12"},
		{`{"jsonrpc":"2.0","id":13,"method":"pair","params":"neither"}`, "-32602 13"},
		{`{"jsonrpc":"2.0","id":14,"method":"pair"}`, "0"},
	} {
		frame(tc.body)
		m := raw.read()
		got := fmt.Sprint(m["result"])
		if _, failed := m["error"]; failed {
			got = fmt.Sprint(code(m), " ", m["id"])
		}
		if got != tc.want {
			t.Fatalf("%s: answered %v", tc.body, m)
		}
	}
	// An answer whose error is not an error object fails its call clearly.
	done := make(chan error, 1)
	go func() { done <- peer.Request(context.Background(), "x", nil, nil, nil) }()
	request := raw.read()
	frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"error":"broken"}`, request["id"]))
	var rpc *RpcError
	if err := <-done; !errors.As(err, &rpc) || rpc.Code != -32603 || !strings.Contains(rpc.Message, "broken") {
		t.Fatalf("the call ended with %v", err)
	}
}
