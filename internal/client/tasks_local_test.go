package client_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestTasksWithoutACoordinator: a client that opened the store itself
// (`submit task` on the local state directory: no coordinator runs) keeps
// tasks as the admin, with the coordinator's rules; a producer's client
// (an identity) never writes the bucket itself and says no coordinator
// answers.
func TestTasksWithoutACoordinator(t *testing.T) {
	t.Parallel()
	e := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	spec := messages.JobSpec{Prompt: "p"}
	b, _ := json.Marshal(messages.Result{JobID: "job-ok", Success: true, Status: messages.StatusSucceeded, Spec: &spec, Solution: &messages.Solution{Code: "x"}})
	if _, err := e.Resources.JobResults.Put(ctxT(t), bus.JobKey("job-ok"), b); err != nil {
		t.Fatal(err)
	}
	c := client.New(e.JS, e.Resources, e.Publisher)
	task, err := c.RegisterTask(ctxT(t), "local", "job-ok", "", nil)
	if err != nil || task.Owner != "admin" {
		t.Fatalf("register with no coordinator, as the admin: %+v, %v", task, err)
	}
	var fe *messages.FieldError
	if _, err := c.RegisterTask(ctxT(t), "bad", "job-none", "", nil); !errors.As(err, &fe) {
		t.Errorf("register an unknown job: %v, want a field error", err)
	}
	c = c.AsUser("ann")
	if err := c.DeleteTask(ctxT(t), "local"); !errors.Is(err, client.ErrNoCoordinator) {
		t.Errorf("a producer's delete with no coordinator: %v, want ErrNoCoordinator", err)
	}
	if err := c.AsAdmin().DeleteTask(ctxT(t), "local"); err != nil {
		t.Errorf("the admin's delete: %v", err)
	}
}
