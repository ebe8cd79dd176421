package bustest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
)

// Env is a provisioned embedded NATS for one test.
type Env struct {
	Server    *bus.Embedded
	Conn      *nats.Conn
	JS        jetstream.JetStream
	Resources *bus.Resources
	Publisher *bus.Publisher
}

// Start starts an embedded server with JetStream under t.TempDir() and
// provisions it with cfg. Failures are fatal: a test never skips for want of NATS.
func Start(t testing.TB, cfg bus.ProvisionConfig) *Env {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("bustest: start embedded NATS: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatalf("bustest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("bustest: jetstream: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := bus.Provision(ctx, js, cfg)
	if err != nil {
		t.Fatalf("bustest: provision: %v", err)
	}
	return &Env{Server: srv, Conn: nc, JS: js, Resources: res, Publisher: bus.NewPublisher(js, bus.PublisherConfig{})}
}
