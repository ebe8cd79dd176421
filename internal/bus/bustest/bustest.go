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
	return start(t, bus.EmbeddedConfig{StoreDir: t.TempDir()}, cfg)
}

// StartWithUsers is Start with a listener on a free loopback port that
// admits users, each with its role's permissions: ConnectAs logs in as one
// of them. Env's own connection is in-process, with every permission (the
// coordinator's).
func StartWithUsers(t testing.TB, cfg bus.ProvisionConfig, users []bus.User) *Env {
	t.Helper()
	return start(t, bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", Users: users}, cfg)
}

// ConnectAs connects to a server of StartWithUsers with auth and returns
// the connection's JetStream, closed in t.Cleanup.
func (e *Env) ConnectAs(t testing.TB, auth bus.ClientAuth) jetstream.JetStream {
	t.Helper()
	opts, err := auth.Options()
	if err != nil {
		t.Fatalf("bustest: client options for %s: %v", auth.Role, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := bus.Connect(ctx, e.Server.ClientURL(), "bustest-"+string(auth.Role), nil, opts...)
	if err != nil {
		t.Fatalf("bustest: connect as %s: %v", auth.Role, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("bustest: jetstream as %s: %v", auth.Role, err)
	}
	return js
}

func start(t testing.TB, ecfg bus.EmbeddedConfig, cfg bus.ProvisionConfig) *Env {
	t.Helper()
	srv, err := bus.StartEmbedded(ecfg)
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
	if cfg.StorageLimit == 0 {
		cfg.StorageLimit = srv.StorageLimit(cfg.MemoryStorage) // as the coordinator fits the store bounds
	}
	res, err := bus.Provision(ctx, js, cfg)
	if err != nil {
		t.Fatalf("bustest: provision: %v", err)
	}
	return &Env{Server: srv, Conn: nc, JS: js, Resources: res, Publisher: bus.NewPublisher(js, bus.PublisherConfig{})}
}
