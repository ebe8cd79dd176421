package httpapi

import (
	"context"
	"errors"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// codeModeTools answers GET /v1/codemode/tools?tool=a&tool=alias=b: the
// tools' descriptions as a code-mode job's model sees them.
func (a *api) codeModeTools(w http.ResponseWriter, r *http.Request) {
	entries := r.URL.Query()["tool"]
	for _, e := range entries {
		if _, err := messages.ParseToolRef(e); err != nil {
			writeError(w, http.StatusBadRequest, messages.CodeInvalid, "tool: "+err.Error())
			return
		}
	}
	if len(entries) == 0 || len(entries) > client.MaxListedTools {
		writeError(w, http.StatusBadRequest, messages.CodeInvalid, "give between 1 and "+strconv.Itoa(client.MaxListedTools)+" tools as ?tool=name or ?tool=alias=served_name")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	desc, err := a.c.CodeModeTools(ctx, entries)
	if err != nil {
		status, code := http.StatusServiceUnavailable, messages.CodeUnavailable
		if strings.Contains(err.Error(), "no process serves the tool") {
			status, code = http.StatusNotFound, messages.CodeNotFound
		}
		writeError(w, status, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(desc, '\n'))
}

// codeModeFile answers GET /v1/jobs/{id}/files/{name}: a file a code-mode
// program wrote under /var/outputs (a chart, a table). It is served as an
// attachment-safe download: an SVG can hold script, so nothing in it may
// run in the page's origin.
func (a *api) codeModeFile(w http.ResponseWriter, r *http.Request) {
	id, ok := jobID(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	// A file in a folder comes as one segment with its slash escaped.
	if name == "" || path.Clean(name) != name || path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
		writeError(w, http.StatusBadRequest, messages.CodeInvalid, "invalid file name")
		return
	}
	res, err := a.c.Result(r.Context(), id)
	if err != nil {
		writeResult(w, nil, err)
		return
	}
	started := false
	err = a.c.WriteCodeModeFile(r.Context(), res, name, func(f messages.CodeModeFile) {
		started = true
		w.Header().Set("Content-Type", f.ContentType)
		w.Header().Set("Content-Length", strconv.FormatInt(f.Size, 10))
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	}, w)
	switch {
	case errors.Is(err, client.ErrNoFile):
		writeError(w, http.StatusNotFound, messages.CodeNotFound, "the job has no stored file "+name)
	case err != nil && !started:
		writeError(w, http.StatusServiceUnavailable, messages.CodeUnavailable, err.Error())
	case err != nil:
		panic(http.ErrAbortHandler) // bytes went out: cut the response
	}
}
