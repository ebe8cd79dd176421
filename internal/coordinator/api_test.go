package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// apiCoordinator is a coordinator with the message API's resources,
// serving the API subjects until the test ends.
func (e *env) apiCoordinator(t *testing.T) *coordinator.Coordinator {
	t.Helper()
	c, err := coordinator.New(coordinator.Config{States: e.res.JobState, Results: e.res.JobResults, Publisher: e.pub,
		Now: func() time.Time { return t0 }, DefaultModel: "test-model", Resources: e.res, JS: e.js})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- c.ServeAPI(ctx, func() { close(ready) }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeAPI: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("ServeAPI: %v", err)
	}
	return c
}

// request sends a raw request on subject and decodes the answer.
func (e *env) request(t *testing.T, subject, body string, reply any) {
	t.Helper()
	m, err := e.js.Conn().Request(subject, []byte(body), testTimeout)
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	if err := json.Unmarshal(m.Data, reply); err != nil {
		t.Fatalf("answer %q: %v", m.Data, err)
	}
}

// TestAPISubmitAnswersAtOnce: the submit subject answers each request
// with the job ID, or with the error and the field it is about, before
// anything is queued; only valid requests reach the jobs stream.
func TestAPISubmitAnswersAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.apiCoordinator(t)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-existing", answerSpec())); err != nil {
		t.Fatal(err)
	}
	missing := "sha256:" + strings.Repeat("ab", 32) + ".csv"
	tests := []struct {
		name, body        string
		wantField, wantID string
		wantErr           string
	}{
		{"valid, an ID is made", `{"v":1,"spec":{"prompt":"p","outputs":{"a":"int"}}}`, "", "", ""},
		{"valid, own ID", `{"v":1,"job_id":"job-mine","spec":{"prompt":"p","outputs":{"a":"int"}},"reply_to":"autocoder.replies.me"}`, "", "job-mine", ""},
		{"an existing job is not queued again", `{"v":1,"job_id":"job-existing","spec":{"prompt":"p"}}`, "", "job-existing", ""},
		{"bad output type", `{"v":1,"spec":{"prompt":"p","outputs":{"a":"complex"}}}`, "spec.outputs.a", "", "unsupported type"},
		{"unknown spec field", `{"v":1,"spec":{"prompt":"p","promt":"x"}}`, "spec.promt", "", "unknown field"},
		{"unknown request field", `{"v":1,"spec":{"prompt":"p"},"jobid":"x"}`, "jobid", "", "unknown field"},
		{"wrong type", `{"v":1,"spec":{"prompt":"p","options":{"max_iterations":"ten"}}}`, "spec.options.max_iterations", "", "integer"},
		{"no spec", `{"v":1}`, "spec", "", "missing"},
		{"spec and run", `{"v":1,"spec":{"prompt":"p"},"run":{"from_job":"j"}}`, "run", "", "not both"},
		{"bad job id", `{"v":1,"job_id":"a.b","spec":{"prompt":"p"}}`, "job_id", "", "characters"},
		{"reply_to outside autocoder.replies", `{"v":1,"spec":{"prompt":"p"},"reply_to":"autocoder.stage.llm.plan"}`, "reply_to", "", "autocoder.replies."},
		{"reply_to wildcard", `{"v":1,"spec":{"prompt":"p"},"reply_to":"autocoder.replies.>"}`, "reply_to", "", "wildcards"},
		{"sample not a reference", `{"v":1,"spec":{"prompt":"p","samples":{"s":"/etc/passwd"}}}`, "spec.samples.s", "", "object reference"},
		{"sample not uploaded", `{"v":1,"spec":{"prompt":"p","samples":{"s":"` + missing + `"}}}`, "spec.samples.s", "", "upload it first"},
		{"run of an unknown job", `{"v":1,"run":{"from_job":"job-nope"}}`, "run.from_job", "", ""},
		{"newer version", `{"v":99,"spec":{"prompt":"p"}}`, "v", "", "newer"},
		{"not JSON", `{"v":1,`, "", "", "malformed JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r messages.APIReply
			e.request(t, bus.SubjectAPISubmit, tc.body, &r)
			valid := tc.wantField == "" && tc.wantErr == ""
			switch {
			case valid && (r.Error != "" || !bus.ValidJobID(r.JobID) || (tc.wantID != "" && r.JobID != tc.wantID)):
				t.Errorf("reply %+v, want job %q accepted", r, tc.wantID)
			case !valid && (r.Field != tc.wantField || !strings.Contains(r.Error, tc.wantErr) || r.Kind != messages.ReplyInvalid || r.JobID != ""):
				t.Errorf("reply %+v, want an invalid request, field %q, error containing %q", r, tc.wantField, tc.wantErr)
			}
		})
	}
	subs, _ := streamMsgs(t, e.res.Jobs)
	var ids []string
	for _, s := range subs {
		var sub messages.SubmitJob
		if err := json.Unmarshal(s.data, &sub); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sub.JobID)
	}
	if len(ids) != 2 || ids[1] != "job-mine" {
		t.Errorf("queued %v, want the two valid new jobs only", ids)
	}
	if v, err := e.res.ReplyTo.Get(ctxT(t), bus.ReplyToKey("job-mine")); err != nil || string(v.Value()) != "autocoder.replies.me" {
		t.Errorf("reply_to of job-mine: %v", err)
	}
}

// TestAPITaskRunUnknownTask: a task run of a task that does not exist is
// refused with the field task.
func TestAPITaskRunUnknownTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apiCoordinator(t)
	var r messages.APIReply
	e.request(t, bus.SubjectAPITaskRun, `{"v":1,"task":"nope"}`, &r)
	if r.Field != "task" || !strings.Contains(r.Error, `no task named "nope"`) {
		t.Errorf("reply %+v", r)
	}
	e.request(t, bus.SubjectAPITaskRun, `{"v":1,"task":"a/b"}`, &r)
	if r.Field != "task" {
		t.Errorf("reply %+v", r)
	}
}

// TestReplyToGetsTheResult: a job whose request named reply_to has its
// result published there when it finishes (here: refused late, as an
// invalid run is), once.
func TestReplyToGetsTheResult(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.apiCoordinator(t)
	sub, err := e.js.Conn().SubscribeSync("autocoder.replies.t1")
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Accept(ctxT(t), messages.APIRequest{Spec: ptr(answerSpec()), ReplyTo: "autocoder.replies.t1"})
	if err != nil {
		t.Fatal(err)
	}
	// The coordinator takes the submission; the job is then cancelled,
	// which finishes it.
	msgs, _ := streamMsgs(t, e.res.Jobs)
	if err := c.HandleSubmit(ctxT(t), bus.NewMessage(bus.SubjectJobsSubmit, msgs[0].data, nil, 1)); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctxT(t), id, "test over"); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(testTimeout)
	if err != nil {
		t.Fatalf("no result on reply_to: %v", err)
	}
	var res messages.Result
	if err := json.Unmarshal(m.Data, &res); err != nil || res.JobID != id || res.Status == messages.StatusRunning {
		t.Errorf("result on reply_to: %v %+v", err, res)
	}
	if _, err := sub.NextMsg(100 * time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Errorf("a second message on reply_to: %v", err)
	}
}

// TestReplayUnknownLetter: a replay of a sequence the dead-letter stream
// does not have is refused with the reason.
func TestReplayUnknownLetter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apiCoordinator(t)
	var r messages.ReplayReply
	e.request(t, bus.SubjectAPIDLQReplay, `{"v":1,"seq":42}`, &r)
	if !strings.Contains(r.Error, "no such dead letter") {
		t.Errorf("reply %+v", r)
	}
	e.request(t, bus.SubjectAPIDLQReplay, `{"v":1}`, &r)
	if !strings.Contains(r.Error, "seq") {
		t.Errorf("reply %+v", r)
	}
}

func ptr[T any](v T) *T { return &v }
