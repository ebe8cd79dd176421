package stagework_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The chain from a bus message to a stage's code is three layers: the bus
// worker, the executor (admission, cache, in-flight claim, failure policy,
// one panic recovery, the mux's decoding) and the typed handler. These are
// the functions between the worker's delivery and the handler, each with
// its layer; a function added between them (a wrapper, a middleware, an
// adapter) fails TestHandlerIsThreeLayersDeep.
var chain = []struct{ layer, fn string }{
	{"bus worker", "internal/bus.(*Worker).process"},
	{"bus worker", "internal/bus.(*Worker).handle"}, // its panic net, for handlers without a policy
	{"executor", "internal/stagework.(*Executor).Handle"},
	{"executor", "internal/stagework.(*Executor).run"}, // the policy's panic recovery
	{"executor", "internal/stagework.(*Mux).Serve"},
	{"executor", "internal/stagework.Register[...].func1"}, // decode In, encode Out
}

// TestHandlerIsThreeLayersDeep runs a stage command through a real bus
// worker on an embedded NATS, into an executor and its mux, and reads the
// typed handler's call stack: the chain above, and nothing else.
func TestHandlerIsThreeLayersDeep(t *testing.T) {
	t.Parallel()
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	stacks := make(chan []string, 1)
	mux := stagework.NewMux(messages.DefaultStages())
	stagework.Register(mux, messages.StagePlan, func(context.Context, *messages.StageCommand, messages.PlanInput) (stagework.Output[messages.Plan], error) {
		stacks <- callers()
		return stagework.Output[messages.Plan]{Value: messages.Plan{Description: "d", Approach: "a"}}, nil
	})
	x, err := stagework.NewExecutor(stagework.Config{Mux: mux, Pool: messages.PoolLLM, Publisher: be.Publisher, Jobs: pendingAs{messages.StagePlan}})
	if err != nil {
		t.Fatal(err)
	}
	w := bus.NewWorker(be.Resources.StageConsumers[messages.PoolLLM], x, bus.WorkerConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	cmd := command(messages.CacheDisable)
	if err := be.Publisher.PublishJSON(ctxT(t), bus.StageSubject(messages.PoolLLM, cmd.Stage), cmd, bus.StageMsgID(cmd.JobID, cmd.Seq)); err != nil {
		t.Fatal(err)
	}
	var stack []string
	select {
	case stack = <-stacks:
	case <-ctxT(t).Done():
		t.Fatal("the handler never ran")
	}
	if _, err := be.Resources.ResultConsumers[messages.PoolLLM].Next(jetstream.FetchMaxWait(testTimeout)); err != nil {
		t.Fatalf("no result: %v", err)
	}
	var got, want []string
	for _, c := range chain {
		want = append(want, c.fn)
	}
	for i := len(stack) - 1; i >= 0; i-- { // outermost first
		if len(got) > 0 || strings.HasSuffix(stack[i], chain[0].fn) {
			got = append(got, trimModule(stack[i]))
		}
	}
	if len(got) > 0 {
		got = got[:len(got)-1] // the handler itself
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the calls from the bus worker's delivery to the stage handler (-want +got):\n%s\n"+
			"a stage handler is three layers deep (bus worker, executor, typed handler): add behaviour to a layer, not a layer", diff)
	}
}

// callers are the functions on the caller's stack, innermost first,
// inlined calls included.
func callers() []string {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	var out []string
	for {
		f, more := frames.Next()
		out = append(out, f.Function)
		if !more {
			return out
		}
	}
}

func trimModule(fn string) string {
	return strings.TrimPrefix(fn, "github.com/autocoder/autocoder/")
}
