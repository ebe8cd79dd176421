package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The named tasks over HTTP, as `submit task register|list|show` keep
// them: a finished job's script under a name, with the settings of its
// runs as defaults (POST /v1/tasks/{name}/run lays a run's own over them).

// taskRoutes are the task endpoints; Handler serves them beside routes.
var taskRoutes = []route{
	{"GET /v1/tasks", ScopeRead, (*api).tasks, hasClient},
	{"GET /v1/tasks/{name}", ScopeRead, (*api).task, hasClient},
	{"POST /v1/tasks/{name}", ScopeSubmit, (*api).registerTask, hasClient},
	{"GET /v1/jobs/{id}/samples/{name}", ScopeRead, (*api).sample, hasClient}, // ui.go
}

// taskBody is the body of POST /v1/tasks/{name}.
type taskBody struct {
	JobID       string               `json:"job_id"`
	Description string               `json:"description,omitempty"`
	Defaults    *messages.RunOptions `json:"defaults,omitempty"`
}

func (a *api) tasks(w http.ResponseWriter, r *http.Request) {
	ts, err := a.c.Tasks(r.Context())
	if ts == nil {
		ts = []messages.Task{}
	}
	writeResult(w, ts, err)
}

func (a *api) task(w http.ResponseWriter, r *http.Request) {
	t, err := a.c.Task(r.Context(), r.PathValue("name"))
	if errors.Is(err, client.ErrNoTask) {
		writeError(w, http.StatusNotFound, messages.CodeNotFound, "no such task")
		return
	}
	writeResult(w, t, err)
}

// registerTask is POST /v1/tasks/{name}: 201 with the task, 400 with the
// field when the name, the job or a default is wrong, 403 when the name
// is another token's (or a producer's) task.
func (a *api) registerTask(w http.ResponseWriter, r *http.Request) {
	var body taskBody
	if !decodeBody(w, r, &body) {
		return
	}
	if !messages.ValidJobID(body.JobID) {
		writeReply(w, messages.ReplyOf("", &messages.FieldError{Field: "job_id", Msg: "must be the id of a job that succeeded"}), nil)
		return
	}
	// The task is the token's: another token cannot replace it
	// (internal/coordinator/tasks.go).
	t, err := a.c.ForOwner("http:"+a.access.caller(r)).RegisterTask(r.Context(), r.PathValue("name"), body.JobID, body.Description, body.Defaults)
	var fe *messages.FieldError
	switch {
	case errors.Is(err, client.ErrTaskForbidden):
		writeError(w, http.StatusForbidden, messages.CodeForbidden, err.Error())
	case errors.As(err, &fe):
		if fe.Field == "job" {
			fe = &messages.FieldError{Field: "job_id", Msg: fe.Msg}
		}
		if rest, ok := strings.CutPrefix(fe.Field, "options."); ok { // the defaults' fields, as the body names them
			fe = &messages.FieldError{Field: "defaults." + rest, Msg: fe.Msg}
		}
		writeReply(w, messages.ReplyOf("", fe), nil)
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, messages.CodeUnavailable, err.Error())
	default:
		writeJSON(w, http.StatusCreated, t)
	}
}
