package httpapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

//go:embed ui/index.html
var indexHTML []byte

// api is one Handler's state.
type api struct {
	c      *client.Client
	prom   http.Handler // nil: no /metrics
	access *access
	// uploads holds a slot per sample upload in progress (putSample).
	uploads chan struct{}
}

// route is one endpoint: its pattern, the scope its token needs ("" for
// none), and its handler. routes below is the one place that says which
// endpoint takes which scope.
type route struct {
	pattern string
	scope   Scope
	handle  func(*api, http.ResponseWriter, *http.Request)
	needs   func(*api) bool // nil: always served
}

var routes = []route{
	// The page holds no data: it asks for a token and calls the API with it.
	{"GET /{$}", "", (*api).index, nil},
	{"GET /healthz", "", (*api).healthz, nil},
	{"GET /ui/{file}", "", (*api).asset, nil}, // the page's scripts and styles (ui.go)
	// Prometheus sends a bearer token from its scrape config (authorization).
	{"GET /metrics", ScopeRead, (*api).metrics, func(a *api) bool { return a.prom != nil }},
	{"GET /v1/jobs", ScopeRead, (*api).list, hasClient},
	{"GET /v1/jobs/{id}", ScopeRead, (*api).status, hasClient},
	{"GET /v1/jobs/{id}/result", ScopeRead, (*api).result, hasClient},
	{"GET /v1/summaries", ScopeRead, (*api).summaries, hasClient},                 // ui.go
	{"GET /v1/jobs/{id}/iterations", ScopeRead, (*api).iterations, hasClient},     // ui.go
	{"GET /v1/jobs/{id}/outputs/{name}", ScopeRead, (*api).output, hasClient},     // ui.go
	{"GET /v1/jobs/{id}/files/{name}", ScopeRead, (*api).codeModeFile, hasClient}, // codemode.go
	{"GET /v1/codemode/tools", ScopeRead, (*api).codeModeTools, hasClient},        // codemode.go
	{"POST /v1/jobs/{id}/ticket", ScopeRead, (*api).ticket, hasClient},
	{"POST /v1/jobs/{id}/cancel", ScopeSubmit, (*api).cancel, hasClient},
	// A bearer token with read, or a ticket from /ticket (EventSource sends
	// no headers): the handler checks either.
	{"GET /v1/jobs/{id}/events", "", (*api).events, hasClient},
}

func hasClient(a *api) bool { return a.c != nil }

// Handler serves the coordinator's HTTP API to the callers o lets in:
//
//	GET  /                      the web UI: jobs, live stage progress, results
//	GET  /healthz               liveness, open to all
//	GET  /metrics               the metrics handler given, if any (read)
//	GET  /v1/jobs               the newest jobs (at most 200), newest first (read)
//	GET  /v1/jobs/{id}          the result object so far (Contract 5 (docs/contracts.md)), ?view=slim (read)
//	GET  /v1/jobs/{id}/result   the final result object; 202 with the result so far while it runs (read)
//	POST /v1/jobs/{id}/ticket   a short-lived ticket for the events of one job (read)
//	POST /v1/jobs/{id}/cancel   cancel a running job; the result object says who and when (submit)
//	GET  /v1/jobs/{id}/events   progress events as Server-Sent Events, ending with the result (read, or ?ticket=);
//	                            each event's id is its sequence, and Last-Event-ID (or ?last_event_id=) resumes after it
//	GET  /ui/{file}             the web UI's scripts and styles
//	GET  /v1/summaries          a page of the job index: ?status=&offset=&limit= (read)
//	GET  /v1/jobs/{id}/iterations  code, tests, report, diagnosis and diffs of each iteration (read)
//	GET  /v1/jobs/{id}/outputs/{name}  a File output, or a Dir output as tar (read)
//	GET  /v1/jobs/{id}/files/{name}    a file a code-mode program wrote (a chart) (read)
//	GET  /v1/codemode/tools?tool=...   tools' descriptions as a code-mode model sees them (read)
//
// and the message API's endpoints (write.go, openapi.json): submit, run,
// task run, sample upload, dead letters; and the operators' (ops.go):
// readiness, the queues and workers, pausing and resuming a pool, the
// caller's scopes. Every error answer is JSON (errors.go).
func Handler(c *client.Client, metrics http.Handler, o Options) http.Handler {
	h, _ := handler(c, metrics, o)
	return h
}

// handler is Handler, and the api it serves (for the tests).
func handler(c *client.Client, metrics http.Handler, o Options) (http.Handler, *api) {
	a := &api{c: c, access: &access{Options: o, tickets: newTickets()}, prom: metrics, uploads: make(chan struct{}, maxUploads)}
	mux := http.NewServeMux()
	mux.HandleFunc("/", noRoute) // what no route takes: a JSON 404 too
	for _, rt := range allRoutes() {
		if rt.needs == nil || rt.needs(a) {
			handle := rt.handle
			mux.HandleFunc(rt.pattern, a.access.require(rt.scope, func(w http.ResponseWriter, r *http.Request) { handle(a, w, r) }))
		}
	}
	return a.access.checkHost(crossOrigin(mux)), a
}

// crossOrigin refuses a state-changing request a browser sends from
// another site (Sec-Fetch-Site, or an Origin that is not this host):
// with AUTOCODER_HTTP_AUTH=none nothing else stops a page the user visits
// from submitting jobs or pausing pools on a loopback API. The web UI is
// same-origin, and clients that are not browsers send neither header.
func crossOrigin(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, messages.CodeForbidden, "a cross-origin request from a browser: refused")
	}))
	return cop.Handler(h)
}

func (a *api) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' blob:") // blob: the charts, fetched with the token
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Write(indexHTML)
}

func (a *api) healthz(w http.ResponseWriter, r *http.Request) {
	w.Write([]byte("ok\n"))
}

func (a *api) metrics(w http.ResponseWriter, r *http.Request) {
	a.prom.ServeHTTP(w, r)
}

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	jobs, err := a.c.List(r.Context(), 200)
	writeResult(w, jobs, err)
}

// status is GET /v1/jobs/{id}: the result object so far (?view=slim: ops.go).
func (a *api) status(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	if view, ok := resultView(w, r); ok {
		res, err := a.c.Status(r.Context(), id)
		writeResult(w, withView(res, view), err)
	}
}

// ticket issues a ticket that opens the job's events without a header.
func (a *api) ticket(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	t, exp := a.access.tickets.issue(id)
	writeResult(w, struct {
		Ticket    string    `json:"ticket"`
		ExpiresAt time.Time `json:"expires_at"`
	}{t, exp}, nil)
}

func (a *api) events(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	if t := r.URL.Query().Get("ticket"); t == "" || !a.access.tickets.valid(t, id) {
		if !a.access.allowed(w, r, ScopeRead) {
			return
		}
	}
	after, ok := lastEventID(w, r)
	if !ok {
		return
	}
	if _, err := a.c.Status(r.Context(), id); err != nil {
		writeClientError(w, err)
		return
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	if flusher != nil {
		// The headers now: a stream resumed after the last event may wait
		// long for the next, and a browser counts it open only then.
		w.WriteHeader(http.StatusOK)
		flusher.Flush()
	}
	send := func(id uint64, event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if id > 0 {
			// Only events have an id: a reconnection resumes after the
			// last event, and the result is sent again at the end.
			fmt.Fprintf(w, "id: %d\n", id)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	res, err := a.c.WatchFrom(r.Context(), id, after, func(seq uint64, e messages.Event) error { return send(seq, string(e.Type), e) })
	if err == nil {
		_ = send(0, "result", res)
	}
}

// jobID is the request's {id}, or a 400 answer when it is not a job id.
func jobID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !bus.ValidJobID(id) {
		writeInvalid(w, &messages.FieldError{Field: "id", Msg: "not a job id (1 to 128 of A-Z a-z 0-9 _ -)"})
		return "", false
	}
	return id, true
}

// writeResult answers 200 with res, or the error of the client (errors.go).
func writeResult(w http.ResponseWriter, res any, err error) {
	if err != nil {
		writeClientError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
