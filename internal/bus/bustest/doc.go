// Package bustest starts what a test of NATS-backed code needs: an embedded
// server on a temporary store, a connection, and the provisioned streams,
// buckets and stores, all closed in t.Cleanup.
//
//	e := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
//	_ = e.Publisher.PublishJSON(ctx, subject, v, "")
package bustest
