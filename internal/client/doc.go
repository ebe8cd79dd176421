// Package client is pkg/client's Client for autocoder's own processes (the
// submit CLI, the HTTP API, tests): built over the resources the stack
// provisioned and autocoder's publisher, with the readers of the
// coordinator's internal records that pkg/client leaves out, since a
// program outside autocoder has no business with them: a running job's
// state (Status, Running), its iteration log (Iterations), and the job
// list (List, Summaries).
//
//	c := client.New(js, resources, publisher)
//	id := client.NewJobID()
//	_ = c.Submit(ctx, id, *spec)
//	res, err := c.Watch(ctx, id, func(e messages.Event) error { fmt.Println(e.Stage); return nil })
//	_, err = c.Download(ctx, res, "out")
package client
