package bus_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
)

// TestProducerCannotPurgeOrDeleteStores: a producer uploads a sample and
// reads it back, but may not purge the samples store (the review purged it
// and another producer's queued job failed with "object not found"),
// delete its messages, delete the store, or write the tasks bucket
// (tasks go through the coordinator, which records their owner).
func TestProducerCannotPurgeOrDeleteStores(t *testing.T) {
	t.Parallel()
	s := newAuthServer(t)
	p := s.connect(t, bus.ClientAuth{NKeyFile: s.seed, Role: bus.RoleProducer})
	ctx := ctxT(t)
	if _, err := p.res.Samples.PutBytes(ctx, "sha256:mine.csv", []byte("a,b\n1,2\n")); err != nil {
		t.Fatalf("upload a sample: %v", err)
	}
	if b, err := p.res.Samples.GetBytes(ctx, "sha256:mine.csv"); err != nil || string(b) != "a,b\n1,2\n" {
		t.Fatalf("read the sample back: %q, %v", b, err)
	}
	samples, err := p.js.Stream(ctx, "OBJ_"+bus.ObjectStoreSamples)
	if err != nil {
		t.Fatal(err)
	}
	p.refused(t, "purge the samples store", func(ctx context.Context) error { return samples.Purge(ctx) })
	p.refused(t, "purge one object's chunks", func(ctx context.Context) error {
		return samples.Purge(ctx, jetstream.WithPurgeSubject("$O."+bus.ObjectStoreSamples+".C.>"))
	})
	p.refused(t, "delete a message of the samples store", func(ctx context.Context) error { return samples.DeleteMsg(ctx, 1) })
	p.refused(t, "delete the samples store", func(ctx context.Context) error { return p.js.DeleteObjectStore(ctx, bus.ObjectStoreSamples) })
	p.refused(t, "purge the outputs store", func(ctx context.Context) error {
		o, err := p.js.Stream(ctx, "OBJ_"+bus.ObjectStoreOutputs)
		if err != nil {
			return err
		}
		return o.Purge(ctx)
	})
	p.refused(t, "write a task directly", func(ctx context.Context) error {
		_, err := p.res.Tasks.Put(ctx, "daily", []byte(`{"name":"daily"}`))
		return err
	})
	if b, err := s.res.Samples.GetBytes(ctx, "sha256:mine.csv"); err != nil || !bytes.Equal(b, []byte("a,b\n1,2\n")) {
		t.Errorf("the sample after the refused purges: %q, %v", b, err)
	}
}

// TestToolServerTouchesOnlyItsTools: a tool server answers the calls and
// the discovery of the tools the operator gave it and nothing else: not
// another tool's (an impostor cannot take a share of its calls), not the
// claim-checked bodies of jobs, not a store.
func TestToolServerTouchesOnlyItsTools(t *testing.T) {
	t.Parallel()
	e := bustest.StartWithUsers(t, bus.ProvisionConfig{MemoryStorage: true}, []bus.User{
		{Name: "weather-srv", Password: testPassword, Role: bus.RoleToolServer, Tools: []string{"weather"}},
	})
	ctx := ctxT(t)
	if _, err := e.Resources.Claims.PutBytes(ctx, "sha256-body", []byte("another job's code")); err != nil {
		t.Fatal(err)
	}
	opts, err := bus.ClientAuth{User: "weather-srv", Password: testPassword, Role: bus.RoleToolServer}.Options()
	if err != nil {
		t.Fatal(err)
	}
	c := &client{errs: make(chan error, 16)}
	opts = append(opts, natsErrors(c.errs))
	if c.nc, err = bus.Connect(ctx, e.Server.ClientURL(), "tool-server", nil, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.nc.Close)
	js, _ := jetstream.New(c.nc)

	for _, subject := range []string{bus.ToolSubject("weather"), "$SRV.INFO.weather", "$SRV.PING"} {
		if _, err := c.nc.SubscribeSync(subject); err != nil {
			t.Errorf("subscribe %s: %v", subject, err)
		}
		if err := c.nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-c.errs:
		t.Fatalf("serving its own tool: %v", err)
	default:
	}
	for _, subject := range []string{bus.ToolSubject("forecast"), "$SRV.INFO.forecast", bus.ToolSubjects(), bus.SubjectJobsAll} {
		c.refused(t, "subscribe "+subject, func(context.Context) error {
			_, err := c.nc.SubscribeSync(subject)
			return err
		})
	}
	c.refused(t, "read a claim-checked body", func(ctx context.Context) error {
		_, err := js.Stream(ctx, "OBJ_"+bus.ObjectStoreClaims)
		return err
	})
	c.refused(t, "get a claim-checked body directly", func(ctx context.Context) error {
		return c.nc.Publish("$JS.API.DIRECT.GET.OBJ_"+bus.ObjectStoreClaims, nil)
	})
	c.refused(t, "purge the claims store", func(ctx context.Context) error {
		return c.nc.Publish("$JS.API.STREAM.PURGE.OBJ_"+bus.ObjectStoreClaims, nil)
	})
	c.refused(t, "submit a job", publishRaw(c, bus.SubjectJobsSubmit))
	// It answers tool requests on the callers' tool inboxes, never
	// another of their requests (a JetStream read, an API reply).
	for _, role := range []bus.Role{bus.RoleSandboxWorker, bus.RoleProducer, bus.RoleCoordinator} {
		if err := c.nc.Publish(bus.InboxPrefix(role)+".tools.abc", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		c.refused(t, "answer another request of "+string(role), publishRaw(c, bus.InboxPrefix(role)+".abc.def"))
	}
	select {
	case err := <-c.errs:
		t.Errorf("answering on the tool inboxes: %v", err)
	default:
	}
}

// TestUsersFileNamesTools: a tool server without tools, a producer whose
// name cannot end a subject and tools on another role are refused at load.
func TestUsersFileNamesTools(t *testing.T) {
	t.Parallel()
	for entry, want := range map[string]string{
		"{user: t, password: p, role: tool-server}":                      "name the tools it may serve",
		"{user: t, password: p, role: tool-server, tools: [a.b]}":        `"a.b" is not a tool name`,
		"{user: w, password: p, role: llm-worker, tools: [weather]}":     "only a tool server serves tools",
		"{user: ann@corp, password: p, role: producer}":                  `user name "ann@corp"`,
		"{user: ok-name, password: p, role: tool-server, tools: ['*']}":  "",
		"{user: ok-name, password: p, role: tool-server, tools: [a, b]}": "",
	} {
		_, err := bus.LoadUsers(writeFile(t, "users.yaml", "users:\n  - "+entry+"\n"))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", entry, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", entry, err, want)
		}
	}
}

// natsErrors sends a connection's asynchronous errors (permission
// violations) to errs.
func natsErrors(errs chan error) nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	})
}

// TestWorkersCannotPurgeStores: a sandbox-worker writes outputs and an
// llm-worker reads samples, but neither purges a store: only the
// coordinator does.
func TestWorkersCannotPurgeStores(t *testing.T) {
	t.Parallel()
	s := newAuthServer(t)
	for _, auth := range []bus.ClientAuth{
		{User: "sandbox", Password: testPassword, Role: bus.RoleSandboxWorker},
		{User: "llm", Password: testPassword, Role: bus.RoleLLMWorker},
	} {
		w := s.connect(t, auth)
		if auth.Role == bus.RoleSandboxWorker {
			if _, err := w.res.Outputs.PutBytes(ctxT(t), "sha256:out", []byte("x")); err != nil {
				t.Errorf("sandbox-worker: write an output: %v", err)
			}
		}
		for _, store := range []string{bus.ObjectStoreOutputs, bus.ObjectStoreSamples, bus.ObjectStoreClaims} {
			w.refused(t, string(auth.Role)+": purge "+store, func(ctx context.Context) error {
				return w.nc.Publish("$JS.API.STREAM.PURGE.OBJ_"+store, nil)
			})
		}
	}
}
