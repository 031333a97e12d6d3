// The Go side of examples/sdk_bridge/: spawns the Rust CLI through the generated package
// `bridge` and drives it. Nothing but the standard library and that package.
//
//	go run ./drive [-transport stdio|tcp] [-framing content-length|newline] [-mode check|hang|bench] CLI
//
// `check` prints one JSON line, {"ok":true,"checks":[..]}, and exits 0 (or {"ok":false,..} and
// exits 1). `hang` prints {"cli_pid":N}, then {"in_call":true} once a long call is under way,
// and waits (for a test to SIGKILL it). `bench` prints p50 latencies of the generated client and
// of a client written by hand on the raw pipes (or a raw net.Conn with -transport tcp). Every wait is bounded.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"sdkbridge/bridge"
)

const step = 10 * time.Second

// tools is what this side serves: the `echo` tool, and a log of the turn's events.
type tools struct {
	mu     sync.Mutex
	log    []string
	events []bridge.TurnEvent
}

func (t *tools) CallTool(_ context.Context, name string, input string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.log = append(t.log, "tool "+name)
	if name != "echo" {
		return "", &bridge.RpcError{Code: -32602, Message: "no tool " + name}
	}
	return strings.ToUpper(input), nil
}

func (t *tools) Event(_ context.Context, event bridge.TurnEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.log = append(t.log, "event "+event.Kind)
	t.events = append(t.events, event)
}

func bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), step)
}

func options(transport string, framing string) bridge.SpawnOptions {
	o := bridge.SpawnOptions{Stderr: os.Stderr}
	if framing == "newline" {
		o.Framing = bridge.Newline
	}
	if transport == "tcp" {
		o.Transport = bridge.TCP
	}
	return o
}

func check(cli string, transport string, framing string) ([]string, error) {
	var checks []string
	t := &tools{}
	ctx, cancel := bounded()
	defer cancel()
	sdk, err := bridge.Spawn(ctx, cli, []string{"--framing", framing}, options(transport, framing), t)
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	defer sdk.Stop()
	session := sdk.Session

	if pong, err := session.Ping(ctx); err != nil || pong != "pong" {
		return nil, fmt.Errorf("ping: %q %v", pong, err)
	}
	checks = append(checks, "ping")

	summary, err := session.Turn(ctx, "hello big world")
	if err != nil {
		return nil, fmt.Errorf("turn: %w", err)
	}
	t.mu.Lock()
	t.log = append(t.log, "answer")
	log := append([]string(nil), t.log...)
	events := append([]bridge.TurnEvent(nil), t.events...)
	t.mu.Unlock()
	want := []string{"event started", "event text", "event text", "event text", "tool echo", "event toolOutput", "event finished", "answer"}
	if !reflect.DeepEqual(log, want) {
		return nil, fmt.Errorf("turn: the order was %v", log)
	}
	if summary != (bridge.TurnSummary{Turn: 1, Events: 6, ToolOutput: "HELLO BIG WORLD"}) {
		return nil, fmt.Errorf("turn: %+v", summary)
	}
	checks = append(checks, "turn: every event before the answer, the tool call answered")

	history := session.History(ctx)
	var pulled []bridge.TurnEvent
	for {
		event, ok, err := history.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		if !ok {
			break
		}
		pulled = append(pulled, event)
	}
	if !reflect.DeepEqual(pulled, events) {
		return nil, fmt.Errorf("history: %+v", pulled)
	}
	checks = append(checks, "history: a stream pulled to its end")

	callCtx, cancelCall := context.WithCancel(ctx)
	defer cancelCall()
	first := make(chan bridge.Step, 1)
	result := make(chan error, 1)
	go func() {
		_, err := session.LongTask(callCtx, 100000, func(s bridge.Step) {
			select {
			case first <- s:
			default:
			}
		})
		result <- err
	}()
	select {
	case s := <-first:
		if s != (bridge.Step{Done: 1, Total: 100000}) {
			return nil, fmt.Errorf("long task: the first report was %+v", s)
		}
	case <-ctx.Done():
		return nil, errors.New("long task: no progress report")
	}
	started := time.Now()
	cancelCall()
	var callErr error
	select {
	case callErr = <-result:
	case <-ctx.Done():
		return nil, errors.New("long task: no answer to the cancel")
	}
	elapsed := time.Since(started)
	var rpcErr *bridge.RpcError
	if !errors.As(callErr, &rpcErr) || rpcErr.Code != bridge.CodeRequestCancelled || !errors.Is(callErr, context.Canceled) {
		return nil, fmt.Errorf("long task: the cancel was answered %v", callErr)
	}
	if elapsed >= time.Second {
		return nil, fmt.Errorf("long task: the cancel was answered after %v", elapsed)
	}
	checks = append(checks, fmt.Sprintf("cancel: answered -32800 after %.1f ms", float64(elapsed.Microseconds())/1000))
	checks = append(checks, "task cancel")

	err = session.Fail(ctx, "grep")
	var failed *bridge.ToolFailedError
	if !errors.As(err, &failed) || failed.RpcCode() != -32050 || failed.Message != "a tool failed" ||
		failed.Data != (bridge.BridgeError{Tool: "grep", Reason: "it was asked to fail"}) {
		return nil, fmt.Errorf("fail: %#v", err)
	}
	checks = append(checks, "typed error with its data")

	const big = int64(9007199254740993)
	if sum, err := session.Add(ctx, big, 0); err != nil || sum != big {
		return nil, fmt.Errorf("add: %d %v", sum, err)
	}
	if _, err := session.Add(ctx, 1<<62, 1<<62); !errors.As(err, &failed) || failed.Data.Tool != "add" {
		return nil, fmt.Errorf("add overflow: %v", err)
	}
	checks = append(checks, "64-bit integers")

	status, err := sdk.Stop()
	if err != nil || status != 0 {
		return nil, fmt.Errorf("stop: status %d, %v", status, err)
	}
	checks = append(checks, "stop: exit status 0")
	return checks, nil
}

func hang(cli string, transport string) error {
	ctx, cancel := bounded()
	defer cancel()
	sdk, err := bridge.Spawn(ctx, cli, nil, options(transport, "content-length"), &tools{})
	if err != nil {
		return err
	}
	fmt.Printf("{\"cli_pid\":%d}\n", sdk.Child.Cmd.Process.Pid)
	first := make(chan struct{}, 1)
	go func() {
		_, _ = sdk.Session.LongTask(context.Background(), 1000000, func(bridge.Step) {
			select {
			case first <- struct{}{}:
			default:
			}
		})
	}()
	select {
	case <-first:
	case <-ctx.Done():
		return errors.New("no progress report")
	}
	fmt.Println("{\"in_call\":true}")
	time.Sleep(60 * time.Second)
	return nil
}

func p50(samples []time.Duration) float64 {
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	return float64(samples[len(samples)/2].Nanoseconds()) / 1000
}

// raw is the same client written by hand on the child's pipes: Content-Length frames, no runtime.
type raw struct {
	r  *bufio.Reader
	w  io.Writer
	id int
}

func (c *raw) send(m map[string]any) {
	body, _ := json.Marshal(m)
	_, _ = c.w.Write(append([]byte("Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), body...))
}

func (c *raw) read() map[string]any {
	length := 0
	for {
		line, _ := c.r.ReadString('\n')
		if line == "\r\n" || line == "" {
			break
		}
		if name, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "content-length") {
			length, _ = strconv.Atoi(strings.TrimSpace(value))
		}
	}
	body := make([]byte, length)
	_, _ = io.ReadFull(c.r, body)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	return m
}

func (c *raw) call(method string, params any) any {
	c.id++
	c.send(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	for {
		m := c.read()
		if _, isCall := m["method"]; isCall {
			if id, ok := m["id"]; ok {
				input := m["params"].(map[string]any)["input"].(string)
				c.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": strings.ToUpper(input)})
			}
			continue
		}
		if id, _ := m["id"].(float64); int(id) == c.id {
			return m["result"]
		}
	}
}

// bench times both clients, each on a CLI of its own, on the same transport, in alternating calls.
func bench(cli string, pings int, turns int, transport string) (map[string]float64, error) {
	ctx := context.Background()
	t := &tools{}
	sdk, err := bridge.Spawn(ctx, cli, nil, options(transport, "content-length"), t)
	if err != nil {
		return nil, err
	}
	defer sdk.Stop()
	var args []string
	if transport == "tcp" {
		args = []string{"--listen", "127.0.0.1:0"}
	}
	cmd := exec.Command(cli, args...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &raw{r: bufio.NewReader(stdout), w: stdin}
	if transport == "tcp" {
		// The address line, then a plain net.Conn (Go sets TCP_NODELAY by default).
		line, err := c.r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("no address line: %w", err)
		}
		conn, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSpace(line), bridge.AddressLinePrefix))
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		c = &raw{r: bufio.NewReader(conn), w: conn}
	}
	var ping, turn, rawPing, rawTurn []time.Duration
	// One call of each in turn, so that the machine's load falls on both alike.
	for i := 0; i < pings; i++ {
		start := time.Now()
		if _, err := sdk.Session.Ping(ctx); err != nil {
			return nil, err
		}
		ping = append(ping, time.Since(start))
		start = time.Now()
		c.call("session/ping", nil)
		rawPing = append(rawPing, time.Since(start))
	}
	for i := 0; i < turns; i++ {
		t.mu.Lock()
		t.log, t.events = nil, nil
		t.mu.Unlock()
		start := time.Now()
		if _, err := sdk.Session.Turn(ctx, "hello big world"); err != nil {
			return nil, err
		}
		turn = append(turn, time.Since(start))
		start = time.Now()
		c.call("session/turn", map[string]any{"prompt": "hello big world"})
		rawTurn = append(rawTurn, time.Since(start))
	}
	_ = stdin.Close()
	_ = cmd.Wait()
	return map[string]float64{
		"ping_p50_us": p50(ping), "raw_ping_p50_us": p50(rawPing),
		"turn_p50_us": p50(turn), "raw_turn_p50_us": p50(rawTurn),
	}, nil
}

func main() {
	transport := flag.String("transport", "stdio", "stdio or tcp")
	mode := flag.String("mode", "check", "check, hang or bench")
	framing := flag.String("framing", "content-length", "content-length or newline")
	pings := flag.Int("pings", 1000, "pings to time")
	turns := flag.Int("turns", 200, "turns to time")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: drive [-transport stdio|tcp] [-mode check|hang|bench] CLI")
		os.Exit(2)
	}
	cli := flag.Arg(0)
	switch *mode {
	case "hang":
		if err := hang(cli, *transport); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "bench":
		numbers, err := bench(cli, *pings, *turns, *transport)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out, _ := json.Marshal(numbers)
		fmt.Println(string(out))
	default:
		checks, err := check(cli, *transport, *framing)
		if err != nil {
			out, _ := json.Marshal(map[string]any{"ok": false, "failed": err.Error()})
			fmt.Println(string(out))
			os.Exit(1)
		}
		out, _ := json.Marshal(map[string]any{"ok": true, "checks": checks})
		fmt.Println(string(out))
	}
}
