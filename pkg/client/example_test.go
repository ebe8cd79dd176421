package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// connect joins an autocoder deployment's NATS as a producer (docs/api.md).
func connect() *client.Client {
	nc, err := nats.Connect("nats://127.0.0.1:4222",
		nats.UserInfo("producer", "secret"), nats.CustomInboxPrefix("_INBOX_producer"))
	if err != nil {
		log.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	return client.New(js, client.Config{})
}

// A job from a CSV sample with three typed outputs, followed to its end;
// its outputs and the sample it came from downloaded.
func ExampleClient_Submit() {
	ctx := context.Background()
	c := connect()
	spec := messages.JobSpec{
		Name:    "summarize-sales",
		Prompt:  "Read the CSV and compute total_revenue, total_units and row_count.",
		Samples: map[string]string{"sales": "examples/sales/sales.csv"}, // uploaded by Submit
		Outputs: map[string]messages.Type{"total_revenue": messages.TypeFloat, "total_units": messages.TypeInt, "row_count": messages.TypeInt},
		Options: messages.Options{Model: "gpt-4.1", MaxIterations: 5},
	}
	id := client.NewJobID()
	if err := c.Submit(ctx, id, spec); err != nil {
		log.Fatal(err)
	}
	res, err := c.Watch(ctx, id, func(e messages.Event) error {
		fmt.Println(e.Type, e.Stage, e.Outcome)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Success, res.Outputs["total_revenue"], res.TotalCost)
	if _, err := c.Download(ctx, res, "out"); err != nil { // out/<File outputs>, out/original-samples/sales.csv
		log.Fatal(err)
	}
}

// The job's script run again on new data with settings of its own, then
// kept as a task whose runs default to 256 MiB and 30 seconds.
func ExampleClient_Run() {
	ctx := context.Background()
	c := connect()
	const jobID = "job-20260101-120000-1a2b3c4d5e" // a job that succeeded
	runID := client.NewJobID()
	err := c.Run(ctx, runID, messages.RunRequest{
		FromJob: jobID,
		Options: &messages.RunOptions{Timeout: messages.Duration(10 * time.Second), EnvVars: map[string]string{"REGION": "north"}},
	}, map[string]string{"sales": "march.csv"}) // a new sample in place of the job's
	if err != nil {
		log.Fatal(err)
	}
	run, err := c.Watch(ctx, runID, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.Outputs)

	defaults := &messages.RunOptions{Resources: messages.Resources{Memory: "256Mi"}, Timeout: messages.Duration(30 * time.Second)}
	if _, err := c.RegisterTask(ctx, "monthly-sales", jobID, "sales of a month", defaults); err != nil {
		log.Fatal(err)
	}
	taskRun := client.NewJobID()
	if err := c.RunTask(ctx, taskRun, "monthly-sales", nil, map[string]string{"sales": "april.csv"}, nil); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Wait(ctx, taskRun); err != nil {
		log.Fatal(err)
	}
}

// The message API checks a request before anything is queued and names
// the field at fault.
func ExampleClient_SubmitRequest() {
	ctx := context.Background()
	c := connect()
	spec := messages.JobSpec{Prompt: "Compute 6*7 and write it as answer.", Outputs: map[string]messages.Type{"answer": "complex"}}
	reply, err := c.SubmitRequest(ctx, messages.APIRequest{Spec: &spec})
	if err != nil {
		log.Fatal(err) // client.ErrNoCoordinator: nobody answered
	}
	var bad *client.ReplyError
	if errors.As(client.ErrorOf(reply), &bad) {
		fmt.Println(bad.Field, bad.Msg) // spec.outputs.answer: unsupported type "complex" ...
		return
	}
	fmt.Println("job", reply.JobID)
}
