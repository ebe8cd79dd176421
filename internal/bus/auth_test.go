package bus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// authServer is an embedded server listening on a free port with one user
// per role, provisioned in memory over the in-process connection.
type authServer struct {
	srv   *bus.Embedded
	admin jetstream.JetStream // the in-process connection: every permission
	res   *bus.Resources
	seed  string // nkey seed file of the producer
}

const testPassword = "pa55-word"

func newAuthServer(t *testing.T) *authServer {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "producer.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	users := []bus.User{
		{Name: "llm", Password: testPassword, Role: bus.RoleLLMWorker},
		{Name: "sandbox", Password: testPassword, Role: bus.RoleSandboxWorker},
		{NKey: pub, Role: bus.RoleProducer},
	}
	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", Users: users})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatalf("in-process Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	res, err := bus.Provision(ctxT(t), js, bus.ProvisionConfig{MemoryStorage: true})
	if err != nil {
		t.Fatalf("Provision in-process: %v", err)
	}
	return &authServer{srv: srv, admin: js, res: res, seed: seedFile}
}

// client is a remote connection with auth, its async errors on errs, and
// what it opens of the provisioned resources.
type client struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	res  *bus.Resources
	errs chan error
}

func (s *authServer) connect(t *testing.T, auth bus.ClientAuth) *client {
	t.Helper()
	opts, err := auth.Options()
	if err != nil {
		t.Fatal(err)
	}
	c := &client{errs: make(chan error, 16)}
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case c.errs <- err:
		default:
		}
	}))
	if c.nc, err = bus.Connect(ctxT(t), s.srv.ClientURL(), "test-"+string(auth.Role), nil, opts...); err != nil {
		t.Fatalf("Connect as %s: %v", auth.Role, err)
	}
	t.Cleanup(c.nc.Close)
	if c.js, err = jetstream.New(c.nc); err != nil {
		t.Fatal(err)
	}
	if c.res, err = bus.Open(ctxT(t), c.js); err != nil {
		t.Fatalf("Open as %s: %v", auth.Role, err)
	}
	return c
}

// refused checks that do fails for lack of permission: by its own error or
// by the server's asynchronous permissions violation.
func (c *client) refused(t *testing.T, what string, do func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := do(ctx)
	if err == nil {
		err = c.nc.Flush()
	}
	for {
		if err != nil && strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			return
		}
		select {
		case err = <-c.errs:
		case <-time.After(testTimeout):
			t.Errorf("%s: not refused for lack of permission (last error: %v)", what, err)
			return
		}
	}
}

// fetchOne pulls one message and waits for the pull to end, so no fetch
// goroutine outlives the test (goleak checks).
func fetchOne(cons jetstream.Consumer) error {
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		return err
	}
	for range batch.Messages() {
	}
	return batch.Error()
}

func publishRaw(c *client, subject string) func(context.Context) error {
	return func(context.Context) error { return c.nc.Publish(subject, []byte(`{}`)) }
}

func TestListenerWithoutUsersIsRefused(t *testing.T) {
	t.Parallel()
	_, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"})
	if !errors.Is(err, bus.ErrNoUsers) {
		t.Fatalf("StartEmbedded with a listener and no users: err = %v, want ErrNoUsers", err)
	}
}

func TestListenerRefusesUnauthenticated(t *testing.T) {
	t.Parallel()
	s := newAuthServer(t)
	for name, opts := range map[string][]nats.Option{
		"no credentials": nil,
		"wrong password": {nats.UserInfo("sandbox", "guess")},
	} {
		_, err := bus.Connect(ctxT(t), s.srv.ClientURL(), "intruder", nil, opts...)
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
			t.Errorf("%s: Connect = %v, want an authorization violation", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "guess") {
			t.Errorf("%s: the error leaks the password: %v", name, err)
		}
	}
}

func TestSandboxWorkerPermissions(t *testing.T) {
	t.Parallel()
	s := newAuthServer(t)
	w := s.connect(t, bus.ClientAuth{User: "sandbox", Password: testPassword, Role: bus.RoleSandboxWorker})
	adminPub := bus.NewPublisher(s.admin, bus.PublisherConfig{})
	pub := bus.NewPublisher(w.js, bus.PublisherConfig{})

	w.refused(t, "publish a stage command", publishRaw(w, bus.StageSubject(messages.DefaultStages().Pool(messages.StageCode), messages.StageCode)))
	w.refused(t, "submit a job", publishRaw(w, bus.SubjectJobsSubmit))
	w.refused(t, "pull the llm pool's commands", func(ctx context.Context) error {
		return fetchOne(w.res.StageConsumers[messages.PoolLLM])
	})
	w.refused(t, "write job state", func(ctx context.Context) error {
		_, err := w.res.JobState.Put(ctx, bus.JobKey("job1"), []byte(`{}`))
		return err
	})
	if n := streamMsgs(t, s.res.Stages[messages.PoolLLM]); n != 0 {
		t.Errorf("the llm stage stream holds %d messages after refused publishes, want 0", n)
	}
	if _, err := s.res.JobState.Get(ctxT(t), bus.JobKey("job1")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("job state after a refused write: %v, want no key", err)
	}

	// Its own work: pull its pool's command, ack it, publish the result.
	cmd := messages.StageCommand{JobID: "job1", Seq: 1, Stage: messages.StageRunTests}
	if err := adminPub.PublishJSON(ctxT(t), bus.StageSubject(messages.DefaultStages().Pool(cmd.Stage), cmd.Stage), cmd, bus.StageMsgID(cmd.JobID, cmd.Seq)); err != nil {
		t.Fatal(err)
	}
	batch, err := w.res.StageConsumers[messages.PoolSandbox].Fetch(1, jetstream.FetchMaxWait(testTimeout))
	if err != nil {
		t.Fatalf("pull its own pool's command: %v", err)
	}
	var got int
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctxT(t)); err != nil {
			t.Errorf("ack its own command: %v", err)
		}
		got++
	}
	if got != 1 || batch.Error() != nil {
		t.Fatalf("pulled %d commands (err %v), want 1", got, batch.Error())
	}
	res := messages.StageResult{JobID: "job1", Seq: 1, Stage: messages.StageRunTests}
	if err := pub.PublishJSON(ctxT(t), bus.ResultSubject(messages.PoolSandbox, res.JobID), res, bus.ResultMsgID(messages.PoolSandbox, res.JobID, res.Seq)); err != nil {
		t.Errorf("publish a result: %v", err)
	}
	w.refused(t, "publish a result for the llm pool", publishRaw(w, bus.ResultSubject(messages.PoolLLM, res.JobID)))
	// It offers its results to the coordinators first (offer.go): on its
	// own pool's offer subject only.
	coord, err := s.admin.Conn().QueueSubscribe(bus.PoolOfferSubjects(messages.PoolSandbox), bus.QueueResultOffers, func(m *nats.Msg) {
		_ = m.Respond([]byte(bus.OfferTaken))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = coord.Unsubscribe() }()
	if err := s.admin.Conn().Flush(); err != nil { // the server has the subscription before the offer
		t.Fatal(err)
	}
	if !pub.OfferJSON(ctxT(t), bus.OfferSubject(messages.PoolSandbox, res.JobID), res) {
		t.Error("offer a result: not taken")
	}
	w.refused(t, "offer a result for the llm pool", publishRaw(w, bus.OfferSubject(messages.PoolLLM, res.JobID)))

	// Operations: it announces its own pool's stages, beats its own
	// pool's capacity and watches the pause switch; never another pool's,
	// and it never switches a pool.
	if err := w.nc.Publish(bus.StartedSubject(messages.PoolSandbox, "job1"), []byte(`{}`)); err != nil {
		t.Errorf("announce a started stage: %v", err)
	}
	w.refused(t, "announce a stage of the llm pool", publishRaw(w, bus.StartedSubject(messages.PoolLLM, "job1")))
	if _, err := w.res.Workers.Put(ctxT(t), bus.WorkerKey(messages.PoolSandbox, "i1"), []byte(`{}`)); err != nil {
		t.Errorf("beat its capacity: %v", err)
	}
	w.refused(t, "beat as an llm worker", func(ctx context.Context) error {
		_, err := w.res.Workers.Put(ctx, bus.WorkerKey(messages.PoolLLM, "i1"), []byte(`{}`))
		return err
	})
	w.refused(t, "pause a pool", func(ctx context.Context) error {
		return bus.SetPoolPause(ctx, w.res.Pools, messages.PoolPause{Pool: "sandbox", Paused: true})
	})
	watch, err := w.res.Pools.Watch(ctxT(t), bus.PoolKey(messages.PoolSandbox))
	if err != nil {
		t.Fatalf("watch its pool's pause switch: %v", err)
	}
	if e := recv(t, watch.Updates(), "the watch's first update"); e != nil {
		t.Errorf("a pool never switched: %v", e)
	}
	watch.Stop()
}

func TestProducerPermissions(t *testing.T) {
	t.Parallel()
	s := newAuthServer(t)
	p := s.connect(t, bus.ClientAuth{NKeyFile: s.seed, Role: bus.RoleProducer})
	pub := bus.NewPublisher(p.js, bus.PublisherConfig{})

	sub := messages.SubmitJob{JobID: "job1"}
	if err := pub.PublishJSON(ctxT(t), bus.SubjectJobsSubmit, sub, bus.SubmitMsgID(sub.JobID)); err != nil {
		t.Errorf("submit: %v", err)
	}
	p.refused(t, "publish a stage command", publishRaw(p, bus.StageSubject(messages.DefaultStages().Pool(messages.StageCode), messages.StageCode)))
	p.refused(t, "publish a result", publishRaw(p, bus.ResultSubject(messages.PoolLLM, "job1")))
	p.refused(t, "pull the coordinator's submissions", func(ctx context.Context) error {
		return fetchOne(p.res.JobsConsumer)
	})
	if n := streamMsgs(t, s.res.Stages[messages.PoolLLM]); n != 0 {
		t.Errorf("the llm stage stream holds %d messages after a refused publish, want 0", n)
	}
	for pool, results := range s.res.Results {
		if n := streamMsgs(t, results); n != 0 {
			t.Errorf("the %s results stream holds %d messages after a refused publish, want 0", pool, n)
		}
	}
	if n := streamMsgs(t, s.res.Jobs); n != 1 {
		t.Errorf("the jobs stream holds %d submissions, want 1", n)
	}
	// The message API: requests on the API subjects (nobody answers here:
	// no responders, not a refusal), the dead letters read, results on
	// reply_to heard; never the dead-letter subject itself.
	for _, subject := range []string{bus.SubjectAPISubmit, bus.SubjectAPITaskRun, bus.SubjectAPIDLQReplay} {
		if _, err := p.js.Conn().Request(subject, []byte("{}"), time.Second); !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("request on %s: %v, want no responders", subject, err)
		}
	}
	if _, err := p.res.DLQ.Info(ctxT(t)); err != nil {
		t.Errorf("read the dead-letter stream: %v", err)
	}
	if _, err := p.js.Conn().SubscribeSync("autocoder.replies.me"); err != nil {
		t.Errorf("subscribe to a reply_to subject: %v", err)
	}
	p.refused(t, "publish a dead letter", publishRaw(p, bus.SubjectDLQ))

	// An operator's CLI: it pauses a pool and reads the roster; it never
	// beats as a worker nor announces a stage.
	if err := bus.SetPoolPause(ctxT(t), p.res.Pools, messages.PoolPause{Pool: "llm", Paused: true, By: "cli:ops"}); err != nil {
		t.Errorf("pause a pool: %v", err)
	}
	if _, err := bus.Roster(ctxT(t), p.res.Workers); err != nil {
		t.Errorf("read the roster: %v", err)
	}
	p.refused(t, "beat as a worker", func(ctx context.Context) error {
		_, err := p.res.Workers.Put(ctx, bus.WorkerKey(messages.PoolLLM, "i1"), []byte(`{}`))
		return err
	})
	p.refused(t, "announce a started stage", publishRaw(p, bus.StartedSubject(messages.PoolLLM, "job1")))
}

// TestConnectNeverShowsTheURLPassword: a URL with credentials, parseable or
// not, appears neither in Connect's error nor in its log lines.
func TestConnectNeverShowsTheURLPassword(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"nats://u:s3cr3t@127.0.0.1:99999", "nats://u:s3cr3t@127.0.0.1:4222x",
		"nats://u:s3cr3t@[::1", "nats://u:s3 cr3t@host:1", "nats://s3cr3t@127.0.0.1:4222x", `nats://u:s3"cr3t@host:1x`} {
		logs := newLogCapture("nats not reachable")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := bus.Connect(ctx, u, "test", slog.New(logs))
		cancel()
		if err == nil {
			t.Fatalf("Connect(%q) succeeded", u)
		}
		if strings.Contains(err.Error(), "s3") {
			t.Errorf("Connect(%q): the error shows the password: %v", u, err)
		}
		if attrs, ok := logs.find("nats not reachable"); ok && strings.Contains(fmt.Sprint(attrs), "s3") {
			t.Errorf("Connect(%q): the log shows the password: %v", u, attrs)
		}
	}
}

func TestLLMWorkerPermissions(t *testing.T) {
	t.Parallel()
	s := newAuthServer(t)
	w := s.connect(t, bus.ClientAuth{User: "llm", Password: testPassword, Role: bus.RoleLLMWorker})
	w.refused(t, "publish a stage command", publishRaw(w, bus.StageSubject(messages.DefaultStages().Pool(messages.StagePlan), messages.StagePlan)))
	w.refused(t, "pull the sandbox pool's commands", func(ctx context.Context) error {
		return fetchOne(w.res.StageConsumers[messages.PoolSandbox])
	})
	w.refused(t, "write an output", func(ctx context.Context) error {
		_, err := w.res.Outputs.PutBytes(ctx, "forged", []byte("x"))
		return err
	})
	cmd := messages.StageCommand{JobID: "job1", Seq: 1, Stage: messages.StagePlan}
	if err := bus.NewPublisher(s.admin, bus.PublisherConfig{}).PublishJSON(ctxT(t), bus.StageSubject(messages.DefaultStages().Pool(cmd.Stage), cmd.Stage), cmd, bus.StageMsgID(cmd.JobID, cmd.Seq)); err != nil {
		t.Fatal(err)
	}
	msgs, err := w.res.StageConsumers[messages.PoolLLM].Fetch(1, jetstream.FetchMaxWait(testTimeout))
	if err != nil {
		t.Fatalf("pull its own pool's command: %v", err)
	}
	for m := range msgs.Messages() {
		if err := m.DoubleAck(ctxT(t)); err != nil {
			t.Errorf("ack its own command: %v", err)
		}
	}
}
