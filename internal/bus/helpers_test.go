package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// nats.go v1.55.0 starts this goroutine on the first async publish (an
	// object store Put, a batch) and reads its channel later; when the
	// publisher is cleaned up in between, it reads nil and waits forever
	// (internal/objects has the same). The leak is the library's race.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}

// testTimeout bounds every wait on a signal: far above how long anything
// should take, so it only fires when something is broken.
const testTimeout = 15 * time.Second

// newBus starts an embedded server on a temporary store and returns a
// JetStream context on an in-process connection; both are closed at cleanup.
func newBus(t *testing.T) (*bus.Embedded, jetstream.JetStream) {
	t.Helper()
	return newBusAt(t, t.TempDir())
}

func newBusAt(t *testing.T, dir string) (*bus.Embedded, jetstream.JetStream) {
	t.Helper()
	return newBusWith(t, bus.EmbeddedConfig{StoreDir: dir})
}

// newBusWith is newBus on a server started from cfg.
func newBusWith(t testing.TB, cfg bus.EmbeddedConfig) (*bus.Embedded, jetstream.JetStream) {
	t.Helper()
	srv, err := bus.StartEmbedded(cfg)
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	return srv, js
}

// provisioned starts a server and provisions it with cfg (in memory unless
// the test asks for files).
func provisioned(t *testing.T, cfg bus.ProvisionConfig) (jetstream.JetStream, *bus.Resources) {
	t.Helper()
	_, js := newBus(t)
	cfg.MemoryStorage = true
	res, err := bus.Provision(ctxT(t), js, cfg)
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	return js, res
}

// ctxT is a context that ends with the test (or after testTimeout).
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// startWorker runs a Worker until the returned stop is called (or the test
// ends); stop returns Run's error.
func startWorker(t *testing.T, cons jetstream.Consumer, h bus.Handler, cfg bus.WorkerConfig) (stop func() error) {
	t.Helper()
	w := bus.NewWorker(cons, h, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	stop = sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-errc:
			return err
		case <-time.After(4 * testTimeout):
			return fmt.Errorf("worker did not stop")
		}
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("worker Run: %v", err)
		}
	})
	return stop
}

// command publishes a stage command for the LLM pool with the given seq.
func command(t *testing.T, pub *bus.Publisher, jobID string, seq int) messages.StageCommand {
	t.Helper()
	cmd := messages.StageCommand{
		V: messages.WireVersion, JobID: jobID, Seq: seq, Stage: messages.StagePlan,
		Input: json.RawMessage(`{}`),
	}
	if err := pub.PublishJSON(ctxT(t), bus.StageSubject(messages.DefaultStages().Pool(cmd.Stage), cmd.Stage), cmd, bus.StageMsgID(jobID, seq)); err != nil {
		t.Fatalf("publish: %v", err)
	}
	return cmd
}

// delivery is what a test handler saw.
type delivery struct {
	seq          int
	numDelivered uint64
	last         bool
	at           time.Time
	worker       string
}

func seqOf(t *testing.T, m *bus.Message) int {
	var cmd messages.StageCommand
	if err := m.DecodeJSON(&cmd); err != nil {
		t.Errorf("decode: %v", err)
	}
	return cmd.Seq
}

// recv waits for one value from ch.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// waitFor polls cond: for server state that sends no signal.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func streamMsgs(t *testing.T, s jetstream.Stream) uint64 {
	t.Helper()
	info, err := s.Info(ctxT(t))
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	return info.State.Msgs
}

// recMetrics records what a Worker reports.
type recMetrics struct {
	mu          sync.Mutex
	inFlight    int
	maxInFlight int
	handled     int
	outcomes    map[bus.Outcome]int
	settled     chan bus.Outcome
}

var _ bus.Metrics = (*recMetrics)(nil)

func newRecMetrics() *recMetrics {
	return &recMetrics{outcomes: map[bus.Outcome]int{}, settled: make(chan bus.Outcome, 1000)}
}

func (r *recMetrics) HandleStarted(string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight++
	r.maxInFlight = max(r.maxInFlight, r.inFlight)
}

func (r *recMetrics) HandleDone(string, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight--
	r.handled++
}

func (r *recMetrics) MessageSettled(_ string, o bus.Outcome) {
	r.mu.Lock()
	r.outcomes[o]++
	r.mu.Unlock()
	r.settled <- o
}

// logCapture is a slog.Handler that keeps records and signals when a
// message containing match is logged.
type logCapture struct {
	mu      sync.Mutex
	records []slog.Record
	match   string
	matched chan struct{}
	once    sync.Once
}

func newLogCapture(match string) *logCapture {
	return &logCapture{match: match, matched: make(chan struct{})}
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.records = append(l.records, r.Clone())
	l.mu.Unlock()
	if l.match != "" && strings.Contains(r.Message, l.match) {
		l.once.Do(func() { close(l.matched) })
	}
	return nil
}

// WithAttrs returns a handler that adds attrs and records into l, so tests
// see every line in one place.
func (l *logCapture) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &childCapture{parent: l, attrs: attrs}
}

func (l *logCapture) WithGroup(string) slog.Handler { return l }

type childCapture struct {
	parent *logCapture
	attrs  []slog.Attr
}

func (c *childCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *childCapture) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(c.attrs...)
	return c.parent.Handle(ctx, r)
}
func (c *childCapture) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &childCapture{parent: c.parent, attrs: append(append([]slog.Attr{}, c.attrs...), attrs...)}
}
func (c *childCapture) WithGroup(string) slog.Handler { return c }

// find returns the attributes of the first record whose message contains msg.
func (l *logCapture) find(msg string) (map[string]string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		if strings.Contains(r.Message, msg) {
			attrs := map[string]string{}
			r.Attrs(func(a slog.Attr) bool {
				attrs[a.Key] = a.Value.String()
				return true
			})
			return attrs, true
		}
	}
	return nil, false
}
