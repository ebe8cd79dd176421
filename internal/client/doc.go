// Package client submits jobs to a running autocoder (embedded or on a NATS
// cluster) and follows them: samples are uploaded to the object store by
// content hash, progress comes from the job's event subject, and the result
// object from the results bucket. It also submits runs of a finished job's
// script on new data (Run), downloads File and Dir outputs from the outputs
// object store (DownloadOutputs), and keeps named tasks (RegisterTask, Tasks).
//
//	c, _ := client.New(js, resources, publisher, dir)
//	id := client.NewJobID()
//	_ = c.Submit(ctx, id, *spec)
//	res, err := c.Watch(ctx, id, func(e messages.Event) error { fmt.Println(e.Stage); return nil })
//	_, err = c.DownloadOutputs(ctx, res, "out")
package client
