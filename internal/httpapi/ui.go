package httpapi

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The web UI is plain ES modules and CSS under ui/, embedded: no build
// step. The page and its assets hold no data; everything comes from the
// API with the token the page asks for.
//
//go:embed ui/*.js ui/*.css
var uiFiles embed.FS

// asset serves ui/{file}.
func (a *api) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := fs.ReadFile(uiFiles, "ui/"+name)
	if err != nil || strings.Contains(name, "/") {
		writeError(w, http.StatusNotFound, messages.CodeNotFound, "no such file of the web UI")
		return
	}
	w.Header().Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(b)
}

// maxSearchBytes bounds the text a job list is searched for.
const maxSearchBytes = 200

// summaries serves a page of the job index:
// ?status=running&q=sales&sort=newest&since=2026-11-01&until=2026-12-01&offset=0&limit=50.
// since and until are dates (YYYY-MM-DD, from the start of that day, UTC)
// or RFC 3339 times; until is exclusive.
func (a *api) summaries(w http.ResponseWriter, r *http.Request) {
	q, err := summaryQuery(r.URL.Query())
	if err != nil {
		writeInvalid(w, err)
		return
	}
	page, err := a.c.Summaries(r.Context(), q)
	writeResult(w, page, err)
}

// summaryQuery reads the query of GET /v1/summaries; errors name the
// parameter (*messages.FieldError).
func summaryQuery(v url.Values) (client.SummaryQuery, error) {
	q := client.SummaryQuery{Status: messages.JobStatus(v.Get("status")), Text: strings.TrimSpace(v.Get("q")), Sort: v.Get("sort")}
	if q.Status != "" && !q.Status.Valid() {
		return q, &messages.FieldError{Field: "status", Msg: fmt.Sprintf("%q is not one of %v", q.Status, messages.Statuses())}
	}
	if len(q.Text) > maxSearchBytes {
		return q, &messages.FieldError{Field: "q", Msg: fmt.Sprintf("is %d bytes, more than %d", len(q.Text), maxSearchBytes)}
	}
	if q.Sort != "" && !slices.Contains(client.SummarySorts(), q.Sort) {
		return q, &messages.FieldError{Field: "sort", Msg: fmt.Sprintf("%q is not one of %s", q.Sort, strings.Join(client.SummarySorts(), ", "))}
	}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"offset", &q.Offset}, {"limit", &q.Limit}} {
		if s := v.Get(p.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return q, &messages.FieldError{Field: p.name, Msg: "must be a number, 0 or more"}
			}
			*p.dst = n
		}
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if s := v.Get(p.name); s != "" {
			t, err := parseWhen(s)
			if err != nil {
				return q, &messages.FieldError{Field: p.name, Msg: "must be a date (2026-11-24) or an RFC 3339 time (2026-11-24T12:00:00Z)"}
			}
			*p.dst = t
		}
	}
	return q, nil
}

// parseWhen reads a date (the start of that day, UTC) or an RFC 3339 time.
func parseWhen(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, s)
}

// iterationView is an iteration with line diffs of its code and tests
// against the iteration before it (unified, 3 lines of context).
type iterationView struct {
	messages.Iteration
	CodeDiff  string `json:"code_diff,omitempty"`
	TestsDiff string `json:"tests_diff,omitempty"`
}

// iterations serves a job's iteration log with diffs.
func (a *api) iterations(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	its, err := a.c.Iterations(r.Context(), id)
	if err != nil {
		writeClientError(w, err)
		return
	}
	writeResult(w, withDiffs(its), nil)
}

func withDiffs(its []messages.Iteration) []iterationView {
	out := make([]iterationView, len(its))
	for i, it := range its {
		out[i].Iteration = it
		if i == 0 {
			continue
		}
		prev := its[i-1]
		out[i].CodeDiff = lineDiff(prev.Code, it.Code, prev.Iteration, it.Iteration, "solution.py")
		out[i].TestsDiff = lineDiff(prev.Tests, it.Tests, prev.Iteration, it.Iteration, "test_solution.py")
	}
	return out
}

// lineDiff is a unified diff of a and b, "" when they are equal.
func lineDiff(a, b string, from, to int, file string) string {
	if a == b {
		return ""
	}
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: splitLines(a), B: splitLines(b),
		FromFile: "iteration " + strconv.Itoa(from) + "/" + file, ToFile: "iteration " + strconv.Itoa(to) + "/" + file, Context: 3,
	})
	if err != nil {
		return ""
	}
	return d
}

// splitLines splits s after each newline; a last line without one gets
// one, so it compares equal to the same line followed by more.
// (difflib.SplitLines adds an empty last line to every text that ends in
// a newline, which every diff would show as context.)
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] += "\n"
	}
	return lines
}

// output serves a File output's content or a Dir output as a tar archive.
func (a *api) output(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	if !messages.ValidName(name) {
		writeInvalid(w, &messages.FieldError{Field: "name", Msg: "not an output name"})
		return
	}
	// Status, not Result: a running job back in repair after an acceptance
	// run that failed lists that run's outputs, and the UI offers them.
	res, err := a.c.Status(r.Context(), id)
	if err != nil {
		writeClientError(w, err)
		return
	}
	started := false
	err = a.c.WriteOutput(r.Context(), res, name, func(t messages.Type) {
		started = true
		file, ctype := name, "application/octet-stream"
		if t == messages.TypeDir {
			file, ctype = name+".tar", "application/x-tar"
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": file}))
	}, w)
	switch {
	case errors.Is(err, client.ErrNoOutput):
		writeError(w, http.StatusNotFound, messages.CodeNotFound, "the job has no stored File or Dir output "+name)
	case err != nil && !started:
		writeError(w, http.StatusServiceUnavailable, messages.CodeUnavailable, err.Error())
	case err != nil:
		panic(http.ErrAbortHandler) // bytes went out: cut the response so the download is not taken as whole
	}
}

// sample is GET /v1/jobs/{id}/samples/{name}: an original sample of the
// job (the result's original_samples), as a file.
func (a *api) sample(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	if !messages.ValidName(name) {
		writeError(w, http.StatusBadRequest, messages.CodeInvalid, "invalid sample name")
		return
	}
	res, err := a.c.Status(r.Context(), id) // a running job's samples too
	if err != nil {
		writeResult(w, nil, err)
		return
	}
	started := false
	err = a.c.WriteSample(r.Context(), res, name, func(file string) {
		started = true
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": file}))
	}, w)
	switch {
	case errors.Is(err, client.ErrNoSample):
		writeError(w, http.StatusNotFound, messages.CodeNotFound, "the job has no original sample "+name)
	case err != nil && !started:
		writeError(w, http.StatusServiceUnavailable, messages.CodeUnavailable, err.Error())
	case err != nil:
		panic(http.ErrAbortHandler) // bytes went out: cut the response so the download is not taken as whole
	}
}

// lastEventID is where an events stream resumes: the Last-Event-ID header
// a browser's EventSource sends when it reconnects, or ?last_event_id=
// for a page that opens a new EventSource itself (with a new ticket).
func lastEventID(w http.ResponseWriter, r *http.Request) (uint64, bool) {
	v := r.Header.Get("Last-Event-ID")
	if q := r.URL.Query().Get("last_event_id"); q != "" {
		v = q
	}
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		writeInvalid(w, &messages.FieldError{Field: "last_event_id", Msg: "Last-Event-ID must be an event id (a number)"})
		return 0, false
	}
	return n, true
}
