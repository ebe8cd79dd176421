// Package client submits jobs to a running autocoder (embedded or on a NATS
// cluster) and follows them: samples are uploaded to the object store by
// content hash, progress comes from the job's event subject, and the result
// object from the results bucket.
//
//	c, _ := client.New(js, resources, publisher, dir)
//	id := client.NewJobID()
//	_ = c.Submit(ctx, id, *spec)
//	res, err := c.Watch(ctx, id, func(e messages.Event) error { fmt.Println(e.Stage); return nil })
package client
