// Package client is pkg/client's Client for autocoder's own processes (the
// submit CLI, the HTTP API, tests): built over the resources the stack
// provisioned and autocoder's publisher, with the readers of the
// coordinator's internal records that pkg/client leaves out, since a
// program outside autocoder has no business with them: a running job's
// state (Status, Running), its iteration log (Iterations), and the job
// list (List, Summaries). It also checks a submission against the
// coordinator's state bound before uploading anything (Submit, bound.go),
// and keeps tasks itself with the coordinator's rules when it is the admin
// and no coordinator answers (tasks.go).
//
//	c := client.New(js, resources, publisher)
//	id := client.NewJobID()
//	_ = c.Submit(ctx, id, *spec)
//	res, err := c.Watch(ctx, id, func(e messages.Event) error { fmt.Println(e.Stage); return nil })
//	_, err = c.Download(ctx, res, "out")
package client
