package fakellm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Request formats, as recorded in Request.Format.
const (
	FormatJSONSchema = "json_schema"
	FormatJSONObject = "json_object"
	FormatText       = "text" // no response_format, or type text
)

// NoSchema is the schema name of requests that name none: plain chat and
// tool calls. Script them with s.On(fakellm.NoSchema, ...).
const NoSchema = ""

// Request is a chat completion request as the server received it.
type Request struct {
	Model string
	// SchemaName is response_format.json_schema.name for json_schema
	// requests; otherwise the name on a "Schema name: <name>" line of a
	// system message (the convention of internal/llm's fallback), or
	// NoSchema.
	SchemaName string
	Format     string          // FormatJSONSchema, FormatJSONObject or FormatText
	Schema     json.RawMessage // json_schema requests only
	Strict     bool            // json_schema.strict
	Messages   []Message
	Tools      []Tool
	MaxTokens  int    // max_completion_tokens, or else max_tokens
	APIKey     string // the bearer token, if any
	// Temperature, TopP and Seed are the sampling settings sent (nil: none).
	Temperature *float64
	TopP        *float64
	Seed        *int64
}

// Message is one request message. Content parts (multi-content) are joined.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
}

// Tool is a function tool offered in a request.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is a function call, in a request (assistant history) or a reply.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Option configures New and Listen.
type Option func(*options)

type options struct {
	refuse map[string]bool // response_format types answered with a 400
}

// RefuseJSONSchema makes the server answer json_schema requests with a 400
// mentioning response_format, like servers without structured outputs.
func RefuseJSONSchema() Option {
	return func(o *options) { o.refuse[FormatJSONSchema] = true }
}

// RefuseJSONObject makes the server answer json_object requests with a 400
// mentioning response_format, like servers without JSON mode.
func RefuseJSONObject() Option {
	return func(o *options) { o.refuse[FormatJSONObject] = true }
}

// Server is a fake OpenAI-compatible chat completions server over real HTTP.
// It is safe for concurrent use.
type Server struct {
	url       string
	srv       *http.Server
	refuse    map[string]bool // read-only after Listen
	closed    chan struct{}   // closed by Close: delayed replies stop waiting
	serveDone chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	queues   map[string]*queue
	handler  func(Request) Reply
	requests []Request
	seq      int
	models   []string
}

type queue struct {
	replies []Reply
	next    int
}

// New starts a server on a free port of 127.0.0.1. Like httptest.NewServer
// it panics if it cannot listen, which only happens on a broken machine; use
// Listen to get the error instead.
func New(opts ...Option) *Server {
	s, err := Listen("127.0.0.1:0", opts...)
	if err != nil {
		panic(fmt.Sprintf("fakellm: %v", err))
	}
	return s
}

// Listen starts a server on addr (host:port; port 0 picks a free one).
func Listen(addr string, opts ...Option) (*Server, error) {
	o := options{refuse: map[string]bool{}}
	for _, opt := range opts {
		opt(&o)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := &Server{
		url:       "http://" + ln.Addr().String() + "/v1",
		refuse:    o.refuse,
		closed:    make(chan struct{}),
		serveDone: make(chan struct{}),
		queues:    map[string]*queue{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", s.listModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "", fmt.Sprintf("fakellm: no route for %s %s", r.Method, r.URL.Path))
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.serveDone)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	return s, nil
}

// URL is the API root to use as OPENAI_BASE_URL; it ends in /v1.
func (s *Server) URL() string { return s.url }

// Close stops the server: delayed replies are cut short, in-flight requests
// finish, and Close returns when the server's goroutines are gone. It is safe
// to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			_ = s.srv.Close() // a Handle func that does not return
		}
		<-s.serveDone
	})
}

// On queues replies for requests with that schema name (NoSchema for plain
// chat and tool calls). They are served in order; once the queue is used up
// its last reply repeats, so a single reply answers every call. Calling On
// again for the same name appends to the queue.
func (s *Server) On(schemaName string, replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[schemaName]
	if q == nil {
		q = &queue{}
		s.queues[schemaName] = q
	}
	q.replies = append(q.replies, replies...)
}

// Handle answers every request whose schema name has no queued replies (see
// On). Without either, a request gets a 400 saying nothing is scripted.
func (s *Server) Handle(fn func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = fn
}

// Requests returns the requests received so far, in order, including the
// ones answered with an error.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "", "fakellm: reading request: "+err.Error())
		return
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, "", "fakellm: request body is not a chat completion request: "+err.Error())
		return
	}
	req, err := wr.request(r.Header.Get("Authorization"))
	s.record(req)
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, "", "fakellm: "+err.Error())
		return
	case wr.Stream:
		writeError(w, http.StatusBadRequest, "stream", "fakellm: streaming is not supported")
		return
	case s.refuse[req.Format]:
		writeError(w, http.StatusBadRequest, "response_format",
			fmt.Sprintf("response_format type %q is not supported by this server (fakellm)", req.Format))
		return
	case req.Format == FormatJSONObject && !mentionsJSON(req.Messages):
		// OpenAI's own rule; it catches clients that forget to ask for JSON.
		writeError(w, http.StatusBadRequest, "messages",
			"'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.")
		return
	}

	reply, ok := s.pick(req)
	if !ok {
		writeError(w, http.StatusBadRequest, "",
			fmt.Sprintf("fakellm: no reply scripted for schema name %q (format %s); use Server.On or Server.Handle", req.SchemaName, req.Format))
		return
	}
	if reply.delay > 0 {
		t := time.NewTimer(reply.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return // the client is gone
		case <-s.closed:
			writeError(w, http.StatusServiceUnavailable, "", "fakellm: server closing")
			return
		}
	}
	s.write(w, req, reply)
}

func (s *Server) record(req Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if req.Model != "" && !slices.Contains(s.models, req.Model) {
		s.models = append(s.models, req.Model)
	}
}

// pick chooses the reply: the schema's queue first, then the Handle func.
func (s *Server) pick(req Request) (Reply, bool) {
	s.mu.Lock()
	q, h := s.queues[req.SchemaName], s.handler
	if q != nil && len(q.replies) > 0 {
		r := q.replies[min(q.next, len(q.replies)-1)]
		if q.next < len(q.replies) {
			q.next++
		}
		s.mu.Unlock()
		return r, true
	}
	s.mu.Unlock()
	if h == nil {
		return Reply{}, false
	}
	return h(req), true // outside the lock: fn may call Requests or On
}

func (s *Server) nextID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

func (s *Server) write(w http.ResponseWriter, req Request, r Reply) {
	switch r.kind {
	case kindDrop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		writeError(w, http.StatusBadGateway, "", "fakellm: cannot drop the connection")
		return
	case kindStatus:
		if r.retryAfter != "" {
			w.Header().Set("Retry-After", r.retryAfter)
		}
		msg := r.errMessage
		if msg == "" {
			msg = http.StatusText(r.status) + " (fakellm scripted)"
		}
		writeError(w, r.status, "", msg)
		return
	case kindOversized:
		s.writeOversized(w, req, r.size)
		return
	}

	msg := wireOutMessage{Role: "assistant"}
	finish := "stop"
	switch r.kind {
	case kindTruncated:
		msg.Content, finish = &r.content, "length"
	case kindToolCalls:
		finish = "tool_calls"
		for _, tc := range r.toolCalls {
			if tc.ID == "" {
				tc.ID = fmt.Sprintf("call_%d", s.nextID())
			}
			msg.ToolCalls = append(msg.ToolCalls, wireToolCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments}})
		}
	default:
		msg.Content = &r.content
	}
	prompt, completion := estimateTokens(req, r)
	if r.usage != nil {
		prompt, completion = r.usage[0], r.usage[1]
	}
	model := req.Model
	if model == "" {
		model = "fakellm"
	}
	writeJSON(w, http.StatusOK, wireResponse{
		ID:                fmt.Sprintf("chatcmpl-fakellm-%d", s.nextID()),
		Object:            "chat.completion",
		Created:           time.Now().Unix(),
		Model:             model,
		Choices:           []wireChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:             wireUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion},
		SystemFingerprint: "fakellm",
	})
}

// writeOversized streams a reply whose content is n bytes of "x", in the
// shape write gives, without building it in memory.
func (s *Server) writeOversized(w http.ResponseWriter, req Request, n int64) {
	head := fmt.Sprintf(`{"id":"chatcmpl-fakellm-%d","object":"chat.completion","created":%d,"model":%q,`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":"`, s.nextID(), time.Now().Unix(), cmp.Or(req.Model, "fakellm"))
	tail := fmt.Sprintf(`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":%d,"total_tokens":%d},`+
		`"system_fingerprint":"fakellm"}`, n/4, n/4+1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, head); err != nil {
		return
	}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for left := n; left > 0; left -= int64(len(chunk)) {
		if _, err := w.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
			return // the client stopped reading
		}
	}
	_, _ = io.WriteString(w, tail)
}

func (s *Server) listModels(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	ids := append([]string{"fakellm"}, s.models...)
	s.mu.Unlock()
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	for _, id := range ids {
		list.Data = append(list.Data, model{ID: id, Object: "model", OwnedBy: "fakellm"})
	}
	writeJSON(w, http.StatusOK, list)
}

// estimateTokens is the default usage: about four characters per token.
func estimateTokens(req Request, r Reply) (prompt, completion int) {
	for _, m := range req.Messages {
		prompt += len(m.Content)
		for _, tc := range m.ToolCalls {
			prompt += len(tc.Arguments)
		}
	}
	completion = len(r.content)
	for _, tc := range r.toolCalls {
		completion += len(tc.Name) + len(tc.Arguments)
	}
	return max(prompt/4, 1), max(completion/4, 1)
}

func mentionsJSON(msgs []Message) bool {
	for _, m := range msgs {
		if strings.Contains(strings.ToLower(m.Content), "json") {
			return true
		}
	}
	return false
}
