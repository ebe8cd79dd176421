package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// What producers and operators expect of a job system's HTTP API (issue
// 25): a result that says "running" instead of 404 while the job runs, a
// slim view of it, readiness, the queues and workers, pausing a pool, and
// what the caller's token may do.

// opsRoutes are the endpoints of this file; Handler serves them beside
// routes.
var opsRoutes = []route{
	{"GET /readyz", "", (*api).readyz, nil},
	{"GET /v1/whoami", ScopeRead, (*api).whoami, nil},
	{"GET /v1/queues", ScopeRead, (*api).queues, hasClient},
	{"POST /v1/pools/{pool}/pause", ScopeSubmit, (*api).pause, hasClient},
	{"POST /v1/pools/{pool}/resume", ScopeSubmit, (*api).resume, hasClient},
}

// readyTimeout bounds one readiness check.
const readyTimeout = 5 * time.Second

// readyz is GET /readyz: 200 "ok" when Options.Ready says the process can
// do its work (NATS, what was provisioned, the cache), 503 with the part
// that does not answer otherwise. Open to all, like /healthz: a probe has
// no token. Without Ready it answers as /healthz does.
func (a *api) readyz(w http.ResponseWriter, r *http.Request) {
	if a.access.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := a.access.Ready(ctx); err != nil {
			writeError(w, http.StatusServiceUnavailable, messages.CodeNotReady, "not ready: "+err.Error())
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

// whoami is GET /v1/whoami: the caller's token name and scopes, so the web
// UI offers only what the token may do (no Cancel for a read token).
func (a *api) whoami(w http.ResponseWriter, r *http.Request) {
	var me struct {
		Name   string  `json:"name"`
		Scopes []Scope `json:"scopes"`
	}
	me.Name, me.Scopes = "anonymous", []Scope{ScopeRead, ScopeSubmit}
	if !a.access.Open {
		token, _ := bearer(r)
		me.Scopes = nil
		for _, s := range []Scope{ScopeRead, ScopeSubmit} {
			if name, _, granted := a.access.Tokens.Check(token, s); granted {
				me.Name = name
				me.Scopes = append(me.Scopes, s)
			}
		}
	}
	writeJSON(w, http.StatusOK, me)
}

// queues is GET /v1/queues: each pool's queue, workers, capacity and pause.
func (a *api) queues(w http.ResponseWriter, r *http.Request) {
	v, err := a.c.Queues(r.Context())
	writeResult(w, v, err)
}

func (a *api) pause(w http.ResponseWriter, r *http.Request)  { a.switchPool(w, r, true) }
func (a *api) resume(w http.ResponseWriter, r *http.Request) { a.switchPool(w, r, false) }

// switchPool is POST /v1/pools/{pool}/pause and /resume, with an optional
// body {"reason": "..."}: it answers 200 with the pool's switch as now
// stored (who, when, why).
func (a *api) switchPool(w http.ResponseWriter, r *http.Request, paused bool) {
	pool := r.PathValue("pool")
	if !bus.ValidPool(messages.Pool(pool)) {
		writeError(w, http.StatusNotFound, messages.CodeNotFound, "no pool "+strconv.Quote(pool)+" (llm or sandbox)")
		return
	}
	reason, ok := reasonBody(w, r)
	if !ok {
		return
	}
	p, err := a.c.PausePool(r.Context(), pool, paused, "http:"+a.access.caller(r), reason)
	writeResult(w, p, err)
}

// reasonBody reads the optional body {"reason": "..."} of cancel, pause
// and resume; a bad one is answered with 400.
func reasonBody(w http.ResponseWriter, r *http.Request) (string, bool) {
	var body struct {
		Reason string `json:"reason"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxCancelBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(&body)
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		writeBodyError(w, err)
		return "", false
	}
	if err != nil && !errors.Is(err, io.EOF) {
		writeInvalid(w, &messages.FieldError{Field: "reason", Msg: "the body must be {\"reason\": \"...\"} or nothing: " + err.Error()})
		return "", false
	}
	return body.Reason, true
}

// Views of a result object (?view=).
const (
	viewFull = "full"
	viewSlim = "slim"
)

// resultView reads ?view= (full, the default, or slim); a bad one is
// answered with 400.
func resultView(w http.ResponseWriter, r *http.Request) (string, bool) {
	v := r.URL.Query().Get("view")
	if v == "" {
		v = viewFull
	}
	if !slices.Contains([]string{viewFull, viewSlim}, v) {
		writeInvalid(w, &messages.FieldError{Field: "view", Msg: strconv.Quote(v) + " is not full or slim"})
		return "", false
	}
	return v, true
}

// slim is a result object without what makes it large and what a program
// that wants the outcome does not read: the conversation, the data
// context and schemas, the documentation used, the last pytest output,
// the agent's tool trace and code mode's events. The script, its tests,
// the outputs and the stage list stay.
func slim(r *messages.Result) *messages.Result {
	s := *r
	s.ConversationHistory = []messages.ChatMessage{}
	s.DataContext, s.Output = "", ""
	s.GeneratedSchemas = map[string]string{}
	s.ContextUsed = nil
	if r.Agent != nil {
		ag := *r.Agent
		ag.Trace = nil
		s.Agent = &ag
	}
	if r.CodeMode != nil {
		cm := *r.CodeMode
		cm.Events = nil
		s.CodeMode = &cm
	}
	return &s
}

// withView is res in view v.
func withView(res *messages.Result, v string) *messages.Result {
	if res == nil || v != viewSlim {
		return res
	}
	return slim(res)
}

// retryAfterRunning is the Retry-After of a result asked for while the
// job runs, in seconds.
const retryAfterRunning = "2"

// result is GET /v1/jobs/{id}/result: 200 with the result object of a
// finished job; 202 with the result so far (status running) and
// Retry-After while it runs; 404 for no such job.
func (a *api) result(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	view, ok := resultView(w, r)
	if !ok {
		return
	}
	res, err := a.c.Status(r.Context(), id)
	if err != nil {
		writeClientError(w, err)
		return
	}
	status := http.StatusOK
	if res.Status == messages.StatusRunning {
		status = http.StatusAccepted
		w.Header().Set("Retry-After", retryAfterRunning)
	}
	writeJSON(w, status, withView(res, view))
}
