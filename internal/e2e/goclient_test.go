package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestGoClient drives a local stack with the public Go client as another
// program would: its own publisher and stores opened by name. It submits a job with a local sample, follows it,
// downloads what the result names (the original sample among it), keeps
// the script as a task with run defaults and runs it with overrides, and
// reads the errors of the message API with their field.
func TestGoClient(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	dir := t.TempDir()
	holdJob(t, fake, dir)
	st := startLocal(t, testConfig(t, fake))
	c := client.New(st.JS, client.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	spec := messages.JobSpec{
		Name:    "go-client",
		Prompt:  "Sum the amount column of the sales CSV into total; hold mb MiB and sleep sleep seconds first; write held_mb.",
		Schema:  "amount: the sale's amount in euros",
		Samples: map[string]string{"sales": filepath.Join(dir, "sales.csv")},
		Inputs:  map[string]messages.Type{"mb": messages.TypeInt, "sleep": messages.TypeFloat},
		Outputs: map[string]messages.Type{"total": messages.TypeFloat, "held_mb": messages.TypeInt},
		Options: messages.Options{MaxIterations: 2},
	}
	id := client.NewJobID()
	if err := c.Submit(ctx, id, spec); err != nil {
		t.Fatal(err)
	}
	var stages int
	res, err := c.Watch(ctx, id, func(e messages.Event) error {
		if e.Type == messages.EventStageFinished {
			stages++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.Outputs["total"] != 15.0 || stages == 0 {
		t.Fatalf("result: success %v outputs %v, %d stages: %s", res.Success, res.Outputs, stages, res.Error)
	}
	sum, err := c.Summary(ctx, id)
	if err != nil || sum.Status != messages.StatusSucceeded || sum.Name != "go-client" {
		t.Errorf("summary %+v, %v", sum, err)
	}
	out := filepath.Join(dir, "out")
	written, err := c.Download(ctx, res, out)
	if err != nil || len(written) != 1 {
		t.Fatalf("download: %v %v", written, err)
	}
	if got := readFile(t, filepath.Join(out, client.OriginalSamplesDir, "sales.csv")); got != holdCSV {
		t.Errorf("original sample %q", got)
	}

	// A task with defaults, run with an override over them.
	two := 2
	task, err := c.RegisterTask(ctx, "go-task", id, "sums sales", &messages.RunOptions{Timeout: messages.Duration(30 * time.Second), Retries: &two})
	if err != nil || task.Defaults == nil || task.Defaults.Timeout.Std() != 30*time.Second {
		t.Fatalf("register: %+v %v", task, err)
	}
	runID := client.NewJobID()
	if err := c.RunTask(ctx, runID, "go-task", map[string]string{"mb": "1"}, nil, &messages.RunOptions{Resources: messages.Resources{CPU: 2}}); err != nil {
		t.Fatal(err)
	}
	run, err := c.Watch(ctx, runID, nil)
	if err != nil || !run.Success || run.Outputs["held_mb"] != 1.0 {
		t.Fatalf("task run: %v %+v", err, run)
	}
	if o := run.Spec.Options; o.Timeout.Std() != 30*time.Second || o.Resources.CPU != 2 || o.SandboxRetries != 2 {
		t.Errorf("the run's options %+v: want the task's timeout and retries and the run's cpu", o)
	}

	// The message API answers at once, naming the field at fault.
	reply, err := c.SubmitRequest(ctx, messages.APIRequest{Run: &messages.RunRequest{FromJob: id, Args: map[string]string{"mb": "many"}}})
	var re *client.ReplyError
	if err != nil || !errors.As(client.ErrorOf(reply), &re) || re.Field != "run.args.mb" || re.Kind != messages.ReplyInvalid {
		t.Errorf("bad run: %+v, %v", reply, err)
	}
	// Cancelling a finished job sends nothing and says how it ended.
	if r, err := c.Cancel(ctx, id, "test", ""); err != nil || r.Status != messages.StatusSucceeded {
		t.Errorf("cancel of a finished job: %v %v", r, err)
	}
	if _, err := c.Result(ctx, "job-nobody"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("Result of an unknown job: %v", err)
	}
	if _, err := c.Task(ctx, "no-task"); !errors.Is(err, client.ErrNoTask) {
		t.Errorf("Task of an unknown name: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "total")); err == nil {
		t.Error("a scalar output was downloaded as a file")
	}
}
