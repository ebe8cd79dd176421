package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestCancelRecordsWhoAsked: a cancellation on a producer's own subject is
// recorded as that NATS user, whatever the request's by says; the
// coordinator role's subject (the HTTP API's) keeps the request's by.
// Before, by was whatever the message said.
func TestCancelRecordsWhoAsked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		subject, by, want string
	}{
		{bus.CancelSubject("ann"), "http:the-boss", "nats:ann"},
		{bus.SubjectJobsCancel, "http:ops", "http:ops"},
	} {
		e := newEnv(t)
		c := e.coordinator(t, nil, nil, nil)
		if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-c", answerSpec())); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(messages.CancelJob{V: messages.WireVersion, JobID: "job-c", By: tc.by, Reason: "stop"})
		if err := c.HandleJobs(ctxT(t), bus.NewMessage(tc.subject, b, nil, 1)); err != nil {
			t.Fatal(err)
		}
		res := e.result(t, "job-c")
		if res.Cancelled == nil || res.Cancelled.By != tc.want {
			t.Errorf("cancel on %s saying %q: recorded %+v, want by %s", tc.subject, tc.by, res.Cancelled, tc.want)
		}
	}
}

// TestTasksHaveOwners: on a NATS with users, a producer's task can be
// replaced or deleted only by it or an admin (the coordinator role); a
// producer cannot ask as another; each refusal says why. Before, any
// producer replaced or deleted any task in the bucket.
func TestTasksHaveOwners(t *testing.T) {
	t.Parallel()
	e := bustest.StartWithUsers(t, bus.ProvisionConfig{MemoryStorage: true}, []bus.User{
		{Name: "ann", Password: "ann-pw", Role: bus.RoleProducer},
		{Name: "bob", Password: "bob-pw", Role: bus.RoleProducer},
	})
	ctx := ctxT(t)
	c, err := coordinator.New(coordinator.Config{States: e.Resources.JobState, Results: e.Resources.JobResults, Publisher: e.Publisher,
		Resources: e.Resources, JS: e.JS})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, c)
	spec := answerSpec()
	done, _ := json.Marshal(messages.Result{JobID: "job-ok", Success: true, Status: messages.StatusSucceeded, Spec: &spec,
		Solution: &messages.Solution{Code: "x"}})
	if _, err := e.Resources.JobResults.Put(ctx, bus.JobKey("job-ok"), done); err != nil {
		t.Fatal(err)
	}
	ann, bob := producerClient(t, e, "ann"), producerClient(t, e, "bob")
	admin := client.New(e.JS, e.Resources, e.Publisher)

	task, err := ann.RegisterTask(ctx, "daily", "job-ok", "ann's", nil)
	if err != nil || task.Owner != "nats:ann" {
		t.Fatalf("ann registers: %+v, %v", task, err)
	}
	if _, err := ann.RegisterTask(ctx, "daily", "job-ok", "ann's again", nil); err != nil {
		t.Errorf("ann replaces her own task: %v", err)
	}
	if _, err := bob.RegisterTask(ctx, "daily", "job-ok", "bob's", nil); !errors.Is(err, client.ErrTaskForbidden) || !strings.Contains(err.Error(), "owned by nats:ann") {
		t.Errorf("bob replaces ann's task: %v, want refused naming the owner", err)
	}
	if err := bob.DeleteTask(ctx, "daily"); !errors.Is(err, client.ErrTaskForbidden) {
		t.Errorf("bob deletes ann's task: %v, want refused", err)
	}
	// Bob asking on ann's subject is refused by the server, not answered.
	bobAsAnn := producerConn(t, e, "bob")
	req, _ := json.Marshal(messages.TaskRequest{V: messages.WireVersion, Name: "daily", JobID: "job-ok"})
	if _, err := bobAsAnn.Request(bus.TaskSubject(bus.TaskDelete, "ann"), req, 2*time.Second); err == nil {
		t.Error("bob's request on ann's subject was answered")
	}
	// Bob naming ann as the owner on his own subject is refused: only the
	// coordinator role (the HTTP API) asks for another owner.
	req, _ = json.Marshal(messages.TaskRequest{V: messages.WireVersion, Name: "daily", JobID: "job-ok", Owner: "nats:ann"})
	if m, err := bobAsAnn.Request(bus.TaskSubject(bus.TaskRegister, "bob"), req, 30*time.Second); err != nil || !strings.Contains(string(m.Data), `"field":"owner"`) {
		t.Errorf("bob asks as ann's owner on his subject: %v, want refused on the owner field", err)
	}
	if got, err := admin.Task(ctx, "daily"); err != nil || got.Description != "ann's again" || got.Owner != "nats:ann" {
		t.Errorf("the task after bob's tries: %+v, %v", got, err)
	}

	if t2, err := admin.RegisterTask(ctx, "daily", "job-ok", "the admin's", nil); err != nil || t2.Owner != coordinator.AdminOwner {
		t.Errorf("the admin replaces ann's task: %+v, %v", t2, err)
	}
	if err := ann.DeleteTask(ctx, "daily"); !errors.Is(err, client.ErrTaskForbidden) {
		t.Errorf("ann deletes the admin's task: %v, want refused", err)
	}
	if err := admin.DeleteTask(ctx, "daily"); err != nil {
		t.Errorf("the admin deletes: %v", err)
	}
	if err := ann.DeleteTask(ctx, "daily"); !errors.Is(err, client.ErrNoTask) {
		t.Errorf("delete a deleted task: %v, want ErrNoTask", err)
	}
}

// serve runs c's message API until the test ends.
func serve(t *testing.T, c *coordinator.Coordinator) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready, served := make(chan struct{}), make(chan error, 1)
	go func() { served <- c.ServeAPI(ctx, func() { close(ready) }) }()
	t.Cleanup(func() {
		cancel()
		<-served
	})
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("ServeAPI: %v", err)
	}
}

// producerConn connects as producer user name (password name-pw).
func producerConn(t *testing.T, e *bustest.Env, name string) *nats.Conn {
	t.Helper()
	opts, err := bus.ClientAuth{User: name, Password: name + "-pw", Role: bus.RoleProducer}.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := bus.Connect(ctxT(t), e.Server.ClientURL(), name, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// producerClient is a client as producer user name, asking as itself.
func producerClient(t *testing.T, e *bustest.Env, name string) *client.Client {
	t.Helper()
	js, err := jetstream.New(producerConn(t, e, name))
	if err != nil {
		t.Fatal(err)
	}
	res, err := bus.Open(ctxT(t), js)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(js, res, bus.NewPublisher(js, bus.PublisherConfig{}))
	return c.AsUser(name)
}
