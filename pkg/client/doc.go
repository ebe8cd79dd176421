// Package client is autocoder's Go client: it submits jobs to a running
// autocoder over NATS JetStream and follows them, as the submit CLI does.
// Samples are uploaded to the samples object store by content hash,
// progress comes from the job's event subject, and the result object from
// the results bucket. It also runs a finished job's script on new data
// (Run), keeps named tasks (RegisterTask, Tasks, RunTask), cancels jobs,
// downloads File and Dir outputs and the samples a job was generated from
// (Download), and speaks the message API (SubmitRequest), which answers at
// once with the job ID or the field at fault.
//
// It needs a NATS connection with the producer role's rights (docs/api.md)
// and imports nothing of autocoder but pkg/messages. Config.Identity is
// the NATS user it is logged in as: a producer cancels jobs and keeps its
// tasks on subjects that end with it (identity.go).
//
//	nc, _ := nats.Connect(url)
//	js, _ := jetstream.New(nc)
//	c := client.New(js, client.Config{})
//	id := client.NewJobID()
//	_ = c.Submit(ctx, id, spec) // spec.Samples are local paths or object references
//	res, _ := c.Watch(ctx, id, func(e messages.Event) error { fmt.Println(e.Type, e.Stage); return nil })
//	_, _ = c.Download(ctx, res, "out") // File/Dir outputs, and the samples under out/samples
package client
