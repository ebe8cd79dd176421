package codemode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Tools served by other processes are NATS services of the micro framework:
// one service per tool, named like the tool, with one endpoint "call" on
// ToolSubject(name). The endpoint's metadata carries the doc, the
// parameters (JSON) and whether results may be cached, so a client needs
// only the name: DiscoverTool asks $SRV.INFO.<name> and builds a Tool that
// sends the arguments as a JSON object and reads back {"result": ...} or
// {"error": "..."}. Running several processes of one tool spreads the calls
// over them (the endpoint's queue group).

// ToolSubject is the subject a NATS tool answers on: autocoder.tool.<name>.
func ToolSubject(name string) string { return "autocoder.tool." + name }

// Endpoint metadata keys of a served tool.
const (
	metaDoc       = "doc"
	metaParams    = "params"
	metaCacheable = "cacheable"
	callEndpoint  = "call"
)

// toolReply is the body of a tool's answer.
type toolReply struct {
	Result any    `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ServeTool serves t on nc as a micro service until the service is
// stopped (or nc closed). The tool's errors are sent back as {"error"}
// replies, so the calling program gets them as error values.
func ServeTool(nc *nats.Conn, t Tool) (micro.Service, error) {
	if err := NewRegistry().Register(t); err != nil {
		return nil, err
	}
	params, err := json.Marshal(paramsOrEmpty(t.Params))
	if err != nil {
		return nil, fmt.Errorf("codemode: tool %s: %w", t.Name, err)
	}
	svc, err := micro.AddService(nc, micro.Config{
		Name: t.Name, Version: "1.0.0", Description: t.Doc,
		Metadata: map[string]string{"kind": "autocoder-tool"},
	})
	if err != nil {
		return nil, fmt.Errorf("codemode: serve tool %s: %w", t.Name, err)
	}
	meta := map[string]string{metaDoc: t.Doc, metaParams: string(params), metaCacheable: strconv.FormatBool(!t.NoCache)}
	handler := micro.HandlerFunc(func(req micro.Request) {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout(req.Headers()))
		defer cancel()
		respond(nc, req, serveCall(ctx, &t, req.Data()))
	})
	if err := svc.AddEndpoint(callEndpoint, handler, micro.WithEndpointSubject(ToolSubject(t.Name)), micro.WithEndpointMetadata(meta)); err != nil {
		_ = svc.Stop()
		return nil, fmt.Errorf("codemode: serve tool %s: %w", t.Name, err)
	}
	// Return once the server has the service's subscriptions, so a
	// discovery that follows finds the tool (not "no responders").
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		_ = svc.Stop()
		return nil, fmt.Errorf("codemode: serve tool %s: %w", t.Name, err)
	}
	return svc, nil
}

// MaxServedCallTime bounds one call of a served tool: the caller's
// remaining time (the timeoutHeader of its request) when it sends one,
// and never more than this.
const MaxServedCallTime = 5 * time.Minute

// timeoutHeader carries the caller's remaining time for a call, in
// milliseconds: the served tool's context ends when the caller stops
// waiting.
const timeoutHeader = "Autocoder-Timeout-Ms"

// callTimeout is how long a served call may run: the caller's remaining
// time, at most MaxServedCallTime.
func callTimeout(h micro.Headers) time.Duration {
	d := MaxServedCallTime
	if ms, err := strconv.ParseInt(h.Get(timeoutHeader), 10, 64); err == nil && ms > 0 && ms < d.Milliseconds() {
		d = time.Duration(ms) * time.Millisecond
	}
	return d
}

// serveCall runs one call of a served tool, its arguments checked and
// converted by the tool's declared parameters (a float parameter gets a
// float64 even for 100). ctx ends when the caller stops waiting (see
// callTimeout).
func serveCall(ctx context.Context, t *Tool, data []byte) toolReply {
	args, err := BindJSONArgs(*t, data)
	if err != nil {
		return toolReply{Error: err.Error()}
	}
	res, err := t.call(ctx, args)
	if err != nil {
		return toolReply{Error: err.Error()}
	}
	if _, err := json.Marshal(res); err != nil {
		return toolReply{Error: fmt.Sprintf("result is not JSON-able: %v", err)}
	}
	return toolReply{Result: keepFloats(res)} // 100.0 stays a float on the wire
}

// respond sends a call's reply; one larger than the connection may carry
// becomes an error reply saying so, so that the caller is not left
// waiting for an answer that never comes.
func respond(nc *nats.Conn, req micro.Request, r toolReply) {
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(toolReply{Error: "the result is not JSON-able: " + err.Error()})
	}
	if limit := nc.MaxPayload(); limit > 0 && int64(len(b)) > limit-1024 {
		b, _ = json.Marshal(toolReply{Error: fmt.Sprintf("the result is %d bytes, over the %d bytes a NATS message carries; ask for less", len(b), limit)})
	}
	_ = req.Respond(b)
}

// DiscoverTool finds the tool served as name on nc and returns a Tool that
// calls it. It fails when no process serves it, naming the tool.
func DiscoverTool(ctx context.Context, nc *nats.Conn, name string) (Tool, error) {
	if !isIdentifier(name) {
		return Tool{}, fmt.Errorf("codemode: tool name %q is not an identifier", name)
	}
	subject, err := micro.ControlSubject(micro.InfoVerb, name, "")
	if err != nil {
		return Tool{}, fmt.Errorf("codemode: tool %s: %w", name, err)
	}
	msg, err := toolRequest(ctx, nc, subject, nil)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return Tool{}, fmt.Errorf("codemode: no process serves the tool %s on NATS", name)
		}
		return Tool{}, fmt.Errorf("codemode: discover tool %s: %w", name, err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		return Tool{}, fmt.Errorf("codemode: tool %s: malformed service info: %w", name, err)
	}
	for _, ep := range info.Endpoints {
		if ep.Name == callEndpoint {
			return remoteTool(nc, name, ep)
		}
	}
	return Tool{}, fmt.Errorf("codemode: service %s has no %q endpoint: not a tool", name, callEndpoint)
}

func remoteTool(nc *nats.Conn, name string, ep micro.EndpointInfo) (Tool, error) {
	var params []Param
	if p := ep.Metadata[metaParams]; p != "" {
		if err := json.Unmarshal([]byte(p), &params); err != nil {
			return Tool{}, fmt.Errorf("codemode: tool %s: malformed params: %w", name, err)
		}
	}
	subject := ep.Subject
	t := Tool{Name: name, Doc: ep.Metadata[metaDoc], Params: params, NoCache: ep.Metadata[metaCacheable] == "false",
		Func: func(ctx context.Context, args map[string]any) (any, error) {
			return callRemote(ctx, nc, subject, args)
		}}
	// The parameters are checked here; the name where the tool is
	// registered, under an alias if the served name is refused there.
	probe := t
	probe.Name = "served_tool"
	if err := NewRegistry().Register(probe); err != nil {
		return Tool{}, fmt.Errorf("codemode: tool %s: %w", name, err)
	}
	return t, nil
}

// ToolCallError is a served tool's own failure, as opposed to a failure
// to reach it.
type ToolCallError struct{ Msg string }

func (e *ToolCallError) Error() string { return e.Msg }

func callRemote(ctx context.Context, nc *nats.Conn, subject string, args map[string]any) (any, error) {
	body, err := MarshalResult(args)
	if err != nil {
		return nil, err
	}
	msg, err := toolRequest(ctx, nc, subject, body)
	if err != nil {
		return nil, fmt.Errorf("calling the tool over NATS: %w", err)
	}
	var r toolReply
	if err := decodeJSON(msg.Data, &r); err != nil {
		return nil, fmt.Errorf("malformed reply from the tool: %w", err)
	}
	if r.Error != "" {
		return nil, &ToolCallError{Msg: r.Error}
	}
	return r.Result, nil
}

// ToolInboxToken is the token after the connection's inbox prefix of the
// inboxes tool requests are answered on: <prefix>.tools.<id>. A tool
// server may publish there and nowhere else (internal/bus's permissions),
// so it cannot answer a caller's other requests (a JetStream read, an API
// reply) in the service's place.
const ToolInboxToken = "tools"

// toolRequest sends a request to a tool (a call or a description) and
// waits for the answer on an inbox of its own, under ToolInboxToken.
func toolRequest(ctx context.Context, nc *nats.Conn, subject string, body []byte) (*nats.Msg, error) {
	inbox := nc.NewInbox() // <prefix>.<id>
	i := strings.LastIndexByte(inbox, '.')
	inbox = inbox[:i] + "." + ToolInboxToken + inbox[i:]
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	req := &nats.Msg{Subject: subject, Reply: inbox, Data: body}
	if deadline, ok := ctx.Deadline(); ok {
		req.Header = nats.Header{}
		req.Header.Set(timeoutHeader, strconv.FormatInt(max(time.Until(deadline).Milliseconds(), 1), 10))
	}
	if err := nc.PublishMsg(req); err != nil {
		return nil, err
	}
	msg, err := sub.NextMsgWithContext(ctx)
	if err != nil {
		return nil, err
	}
	if len(msg.Data) == 0 && msg.Header.Get("Status") == "503" {
		return nil, nats.ErrNoResponders
	}
	return msg, nil
}

// DiscoverTools discovers every name and registers the tools in a new
// registry.
func DiscoverTools(ctx context.Context, nc *nats.Conn, names []string) (*Registry, error) {
	reg := NewRegistry()
	for _, n := range names {
		t, err := DiscoverTool(ctx, nc, n)
		if err != nil {
			return nil, err
		}
		if err := reg.Register(t); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// DiscoverToolRefs discovers the tools of a job's entries (a served name,
// or alias=served_name) and registers each under the name the program
// calls: the tools a code-mode job's programs see.
func DiscoverToolRefs(ctx context.Context, nc *nats.Conn, entries []string) (*Registry, error) {
	reg := NewRegistry()
	for _, entry := range entries {
		ref, err := messages.ParseToolRef(entry)
		if err != nil {
			return nil, fmt.Errorf("codemode: tools: %w", err)
		}
		t, err := DiscoverTool(ctx, nc, ref.Served)
		if err != nil {
			return nil, err
		}
		t.Name = ref.Alias
		if err := reg.Register(t); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// decodeJSON decodes with numbers kept as json.Number, so that a whole
// number reaches the program as an int.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func paramsOrEmpty(p []Param) []Param {
	if p == nil {
		return []Param{}
	}
	return p
}
