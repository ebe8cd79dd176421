package bus_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
	"github.com/nats-io/nats.go/jetstream"
)

func TestStartEmbeddedRequiresStoreDir(t *testing.T) {
	t.Parallel()
	if _, err := bus.StartEmbedded(bus.EmbeddedConfig{}); err == nil {
		t.Fatal("StartEmbedded without StoreDir succeeded")
	}
	if _, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "nope"}); err == nil {
		t.Fatal("StartEmbedded with a bad Listen succeeded")
	}
}

func TestEmbeddedRestartKeepsData(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	func() {
		srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: dir})
		if err != nil {
			t.Fatalf("StartEmbedded: %v", err)
		}
		defer srv.Shutdown()
		nc, err := srv.Connect()
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		res, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{})
		if err != nil {
			t.Fatalf("Provision: %v", err)
		}
		pub := bus.NewPublisher(js, bus.PublisherConfig{})
		for seq := 1; seq <= 3; seq++ {
			command(t, pub, "durable", seq)
		}
		if _, err := res.JobState.Put(ctxT(t), bus.JobKey("durable"), []byte(`{"status":"running"}`)); err != nil {
			t.Fatalf("kv put: %v", err)
		}
	}()

	// Same StoreDir, new server: everything is still there.
	_, js := newBusAt(t, dir)
	res, err := bus.Open(ctxT(t), js)
	if err != nil {
		t.Fatalf("Open after restart: %v", err)
	}
	if got := streamMsgs(t, res.Stages[messages.PoolLLM]); got != 3 {
		t.Errorf("after restart the stage stream holds %d messages, want 3", got)
	}
	e, err := res.JobState.Get(ctxT(t), bus.JobKey("durable"))
	if err != nil || string(e.Value()) != `{"status":"running"}` {
		t.Errorf("after restart job state = %v, %v", e, err)
	}
	if _, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{}); err != nil {
		t.Errorf("Provision after restart: %v", err)
	}
	// And the durable consumer still hands them out.
	got := make(chan int, 3)
	startWorker(t, res.StageConsumers[messages.PoolLLM], bus.HandlerFunc(func(_ context.Context, m *bus.Message) error {
		got <- seqOf(t, m)
		return nil
	}), bus.WorkerConfig{})
	for range 3 {
		recv(t, got, "a message stored before the restart")
	}
}

func TestEmbeddedListenerAcceptsTCP(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"127.0.0.1:-1", "127.0.0.1:0"} {
		t.Run(listen, func(t *testing.T) {
			t.Parallel()
			// Authentication off, explicitly: this test is about the listener.
			srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: listen, NoAuth: true})
			if err != nil {
				t.Fatalf("StartEmbedded: %v", err)
			}
			t.Cleanup(srv.Shutdown)
			u, err := url.Parse(srv.ClientURL())
			if err != nil || u.Port() == "" || u.Port() == "0" || u.Port() == "4222" {
				t.Fatalf("ClientURL() = %q: want a random port", srv.ClientURL())
			}

			local, err := srv.Connect()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(local.Close)
			ljs, err := jetstream.New(local)
			if err != nil {
				t.Fatal(err)
			}
			res, err := bus.Provision(ctxT(t), ljs, bus.ProvisionConfig{MemoryStorage: true})
			if err != nil {
				t.Fatalf("Provision: %v", err)
			}

			// Another process would do this.
			remote, err := bus.Connect(ctxT(t), srv.ClientURL(), "test-remote", nil)
			if err != nil {
				t.Fatalf("Connect by URL: %v", err)
			}
			t.Cleanup(remote.Close)
			if remote.ConnectedUrl() == "" {
				t.Fatal("remote connection is not over TCP")
			}
			rjs, err := jetstream.New(remote)
			if err != nil {
				t.Fatal(err)
			}
			command(t, bus.NewPublisher(rjs, bus.PublisherConfig{}), "remote", 1)
			if got := streamMsgs(t, res.Stages[messages.PoolLLM]); got != 1 {
				t.Errorf("a command published over TCP: stream holds %d, want 1", got)
			}
		})
	}
}

func TestEmbeddedWithoutListener(t *testing.T) {
	t.Parallel()
	srv, _ := newBus(t)
	if got := srv.ClientURL(); got != "" {
		t.Errorf("ClientURL() without a listener = %q, want \"\"", got)
	}
}

func TestConnectGivesUpWithCtx(t *testing.T) {
	t.Parallel()
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	logs := newLogCapture("nats not reachable")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = bus.Connect(ctx, "nats://user:secret@"+addr, "test", slog.New(logs))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect to a closed port: err = %v, want DeadlineExceeded", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error leaks the password: %v", err)
	}
	attrs, ok := logs.find("nats not reachable")
	if !ok {
		t.Fatal("no retry was logged")
	}
	if strings.Contains(attrs["nats_url"], "secret") {
		t.Errorf("log leaks the password: %v", attrs)
	}
}
