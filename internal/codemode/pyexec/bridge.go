package pyexec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/autocoder/autocoder/internal/codemode"
)

// The bridge is the worker's end of a program's tool calls: it reads the
// prelude's JSON lines from the program's stdout and answers on its
// stdin. Nothing the program writes is trusted: every limit is enforced
// here, and a program that breaks one (or the protocol) is stopped.
//
// From the program, one object per line:
//
//	{"op":"call","id":N,"tool":NAME,"args":{...},"line":L}
//	{"op":"print","data":TEXT,"cut":BOOL}
//	{"op":"done","ok":true,"value":V,"has_value":BOOL}
//	{"op":"done","ok":false,"kind":K,"line":L,"col":C,"msg":M,"trace":T}
//
// To the program, one answer per call, by id:
//
//	{"id":N,"result":V} | {"id":N,"error":MSG} | {"id":N,"type_error":MSG}

// errStop is the bridge's error when it stopped the program (a limit, a
// protocol violation): the run's outcome is the bridge's failure.
var errStop = errors.New("pyexec: the bridge stopped the program")

// message is one line from the program.
type message struct {
	Op       string          `json:"op"`
	ID       int64           `json:"id"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
	Line     int             `json:"line"`
	Col      int             `json:"col"`
	Data     string          `json:"data"`
	Cut      bool            `json:"cut"`
	OK       bool            `json:"ok"`
	Value    json.RawMessage `json:"value"`
	HasValue bool            `json:"has_value"`
	Kind     string          `json:"kind"`
	Msg      string          `json:"msg"`
	Trace    string          `json:"trace"`
}

// answer is one line to the program.
type answer struct {
	ID        int64           `json:"id"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	TypeError string          `json:"type_error,omitempty"`
}

type bridge struct {
	tools  *codemode.Registry
	limits Limits

	mu        sync.Mutex
	out       strings.Builder
	truncated bool
	calls     int
	pending   map[int64]string // calls in flight: id -> tool
	done      *message
	failure   *codemode.Error // set when the bridge stopped the program

	stop     chan struct{} // closed with failure
	stopOnce sync.Once
	wmu      sync.Mutex // one answer line at a time
	stdin    io.Writer
	slots    chan struct{}
	calling  sync.WaitGroup
	reading  sync.WaitGroup
}

func newBridge(tools *codemode.Registry, limits Limits) *bridge {
	return &bridge{tools: tools, limits: limits, pending: map[int64]string{},
		stop: make(chan struct{}), slots: make(chan struct{}, limits.MaxParallel)}
}

// run is the sandbox.StdioFunc: it reads until EOF, or returns errStop as
// soon as the bridge stopped the program (the sandbox then kills it).
func (b *bridge) run(ctx context.Context, stdin io.WriteCloser, stdout io.Reader) error {
	b.stdin = stdin
	read := make(chan struct{})
	b.reading.Add(1)
	go func() {
		defer b.reading.Done()
		defer close(read)
		b.read(ctx, stdout)
	}()
	select {
	case <-read:
		b.calling.Wait()
		return nil
	case <-b.stop:
		return errStop
	}
}

// wait waits for what the bridge started (after the run: the program is
// gone, so every read ends).
func (b *bridge) wait() {
	b.reading.Wait()
	b.calling.Wait()
}

// fail stops the program with a limit or protocol error; the first wins.
func (b *bridge) fail(e *codemode.Error) {
	b.stopOnce.Do(func() {
		b.mu.Lock()
		b.failure = e
		b.mu.Unlock()
		close(b.stop)
	})
}

func (b *bridge) stopped() bool {
	select {
	case <-b.stop:
		return true
	default:
		return false
	}
}

func (b *bridge) read(ctx context.Context, stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 64<<10)
	maxLine := b.limits.maxLine()
	for {
		line, err := readLine(r, maxLine)
		if errors.Is(err, errLineTooLong) {
			b.fail(b.tooLong(line))
			_, _ = io.Copy(io.Discard, r) // read on to EOF: the backend waits for it
			return
		}
		if len(bytes.TrimSpace(line)) > 0 && !b.stopped() {
			b.handle(ctx, line)
		}
		if err != nil {
			return
		}
	}
}

// tooLong names the limit a line over the longest allowed breaks, by the
// operation it starts with.
func (b *bridge) tooLong(head []byte) *codemode.Error {
	switch {
	case bytes.HasPrefix(head, []byte(`{"op":"call"`)):
		return limitError(0, "tool call limit: a tool call's arguments are over the limit of %d bytes", b.limits.MaxArgBytes)
	case bytes.HasPrefix(head, []byte(`{"op":"done"`)):
		return limitError(0, "value limit: the last expression's value is over the limit of %d bytes as JSON; return a smaller value, e.g. a summary or a slice", b.limits.MaxValueBytes)
	}
	return limitError(0, "the program wrote a line of over %d bytes on the tool bridge", b.limits.maxLine())
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most max bytes; past that it returns the
// line's first bytes and errLineTooLong.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return append(line, chunk[:min(len(chunk), 64)]...), errLineTooLong
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

func (b *bridge) handle(ctx context.Context, line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		b.fail(&codemode.Error{Kind: codemode.KindRuntime, Msg: "the program wrote something that is not a bridge message on the tool bridge: " + truncate(string(line), 80)})
		return
	}
	switch m.Op {
	case "print":
		b.print(m.Data, m.Cut)
	case "call":
		b.call(ctx, m)
	case "done":
		b.mu.Lock()
		if b.done == nil {
			b.done = &m
		}
		b.mu.Unlock()
	default:
		b.fail(&codemode.Error{Kind: codemode.KindRuntime, Msg: fmt.Sprintf("unknown bridge message %q", truncate(m.Op, 40))})
	}
}

// print keeps output up to the cap and notes, once, that it cut the rest.
func (b *bridge) print(s string, cut bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.truncated {
		return
	}
	room := b.limits.MaxOutputBytes - b.out.Len()
	if len(s) > room {
		s, cut = strings.ToValidUTF8(s[:max(room, 0)], ""), true // not a character cut in two
	}
	b.out.WriteString(s)
	if cut {
		fmt.Fprintf(&b.out, "\n[output truncated at %d bytes]\n", b.limits.MaxOutputBytes)
		b.truncated = true
	}
}

func (b *bridge) output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.String()
}

// call starts one tool call; the answer is written when it returns.
func (b *bridge) call(ctx context.Context, m message) {
	b.mu.Lock()
	if _, twice := b.pending[m.ID]; twice {
		b.mu.Unlock()
		// The prelude numbers its calls; a number in flight twice comes
		// from a forked copy of it, whose answers would go astray.
		b.fail(&codemode.Error{Kind: codemode.KindRuntime, Line: m.Line, Msg: fmt.Sprintf(
			"two tool calls numbered %d at once: tools can be called from the program's own process only", m.ID)})
		return
	}
	b.calls++
	n := b.calls
	if n <= b.limits.MaxToolCalls {
		b.pending[m.ID] = m.Tool
	}
	b.mu.Unlock()
	if n > b.limits.MaxToolCalls {
		b.fail(limitError(m.Line, "tool call limit: the program made more than %d tool calls; call fewer tools (e.g. ask for more per call)", b.limits.MaxToolCalls))
		return
	}
	if len(m.Args) > b.limits.MaxArgBytes {
		b.fail(limitError(m.Line, "tool call limit: the arguments of %s are %d bytes, over the limit of %d", m.Tool, len(m.Args), b.limits.MaxArgBytes))
		return
	}
	b.calling.Add(1)
	go func() {
		defer b.calling.Done()
		select {
		case b.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-b.slots }()
		a, failure := b.answer(ctx, m)
		if ctx.Err() != nil {
			return // the run ended during the call: it stays pending, for the error to name
		}
		b.mu.Lock()
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if failure != nil {
			b.fail(failure)
			return
		}
		b.send(a)
	}()
}

// answer runs the call: the tool's result or error, or a limit failure.
func (b *bridge) answer(ctx context.Context, m message) (answer, *codemode.Error) {
	t, ok := b.tools.Tool(m.Tool)
	if !ok {
		return answer{ID: m.ID, TypeError: fmt.Sprintf("unknown tool %s; known tools: %s", m.Tool, strings.Join(b.tools.Names(), ", "))}, nil
	}
	args, err := bindArgs(t, m.Args)
	if err != nil {
		return answer{ID: m.ID, TypeError: err.Error()}, nil
	}
	res, err := callTool(ctx, t, args)
	if err != nil {
		if ctx.Err() != nil {
			return answer{}, nil // the run is over: no one waits for the answer
		}
		return answer{ID: m.ID, Error: err.Error()}, nil
	}
	data, err := codemode.MarshalResult(res) // a float stays a float (100.0)
	if err != nil {
		return answer{ID: m.ID, Error: "the tool's result is not JSON: " + err.Error()}, nil
	}
	if len(data) > b.limits.MaxResultBytes {
		return answer{}, limitError(m.Line, "tool result limit: the result of %s is %d bytes, over the limit of %d; ask the tool for less", m.Tool, len(data), b.limits.MaxResultBytes)
	}
	return answer{ID: m.ID, Result: data}, nil
}

func (b *bridge) send(a answer) {
	if a.ID == 0 {
		return
	}
	line, err := json.Marshal(a)
	if err != nil {
		return
	}
	b.wmu.Lock()
	defer b.wmu.Unlock()
	_, _ = b.stdin.Write(append(line, '\n')) // a program that has gone needs no answer
}

// waiting names the tools of the calls in flight, for a timeout's message.
func (b *bridge) waiting() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[string]bool{}
	var names []string
	for _, t := range b.pending {
		if !seen[t] {
			seen[t] = true
			names = append(names, t)
		}
	}
	sort.Strings(names)
	return names
}

func limitError(line int, format string, args ...any) *codemode.Error {
	return &codemode.Error{Kind: codemode.KindLimit, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// callTool runs a tool's function, turning a panic into an error so that
// a faulty tool cannot take the worker down.
func callTool(ctx context.Context, t codemode.Tool, args map[string]any) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool panicked: %v", p)
		}
	}()
	return t.Func(ctx, args)
}
