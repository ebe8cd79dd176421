package bus_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
	"github.com/google/go-cmp/cmp"
)

func TestNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"plan subject", bus.StageSubject(messages.DefaultStages().Pool(messages.StagePlan), messages.StagePlan), "autocoder.stage.llm.plan"},
		{"run_tests subject", bus.StageSubject(messages.DefaultStages().Pool(messages.StageRunTests), messages.StageRunTests), "autocoder.stage.sandbox.run_tests"},
		{"llm subjects", bus.StageSubjects(messages.PoolLLM), "autocoder.stage.llm.>"},
		{"llm stream", bus.StageStream(messages.PoolLLM), "AUTOCODER_STAGE_LLM"},
		{"sandbox stream", bus.StageStream(messages.PoolSandbox), "AUTOCODER_STAGE_SANDBOX"},
		{"llm consumer", bus.StageConsumer(messages.PoolLLM), "llm-workers"},
		{"sandbox consumer", bus.StageConsumer(messages.PoolSandbox), "sandbox-workers"},
		{"llm result subject", bus.ResultSubject(messages.PoolLLM, "j1"), "autocoder.results.llm.j1"},
		{"sandbox result subject", bus.ResultSubject(messages.PoolSandbox, "j1"), "autocoder.results.sandbox.j1"},
		{"sandbox result subjects", bus.PoolResultSubjects(messages.PoolSandbox), "autocoder.results.sandbox.*"},
		{"llm result stream", bus.ResultStream(messages.PoolLLM), "AUTOCODER_RESULTS_LLM"},
		{"sandbox result stream", bus.ResultStream(messages.PoolSandbox), "AUTOCODER_RESULTS_SANDBOX"},
		{"event subject", bus.EventSubject("j1"), "autocoder.events.j1"},
		{"submit msg id", bus.SubmitMsgID("j1"), "submit.j1"},
		{"stage msg id", bus.StageMsgID("j1", 7), "stage.j1.7"},
		{"result msg id", bus.ResultMsgID(messages.PoolSandbox, "j1", 7), "result.sandbox.j1.7"},
		{"job key", bus.JobKey("j1"), "j1"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if diff := cmp.Diff([]messages.Pool{"llm", "sandbox"}, messages.Pools()); diff != "" {
		t.Errorf("messages.Pools() (-want +got):\n%s", diff)
	}
	// Every subject autocoder uses is under autocoder.>.
	for _, s := range []string{bus.SubjectJobsSubmit, bus.SubjectJobsAll, bus.SubjectResultsAll, bus.SubjectEventsAll} {
		if !strings.HasPrefix(s, "autocoder.") {
			t.Errorf("subject %q is not under autocoder.>", s)
		}
	}
}

func TestValidJobID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   string
		want bool
	}{
		{"01J8ZK3M4Q", true},
		{"job_1-a", true},
		{strings.Repeat("a", bus.MaxJobIDLen), true},
		{"", false},
		{strings.Repeat("a", bus.MaxJobIDLen+1), false},
		{"a.b", false},
		{"a*", false},
		{">", false},
		{"a b", false},
		{"a\tb", false},
		{"ä", false},
		{"a/b", false},
	}
	for _, tt := range tests {
		if got := bus.ValidJobID(tt.id); got != tt.want {
			t.Errorf("ValidJobID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

func TestJobIDFromSubject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		subject string
		id      string
		ok      bool
	}{
		{bus.ResultSubject(messages.PoolLLM, "j1"), "j1", true},
		{bus.ResultSubject(messages.PoolSandbox, "j1"), "j1", true},
		{"autocoder.results.j1", "", false},
		{"autocoder.results.nopool.j1", "", false},
		{"autocoder.results.llm.j1.x", "", false},
		{bus.EventSubject("j-2"), "j-2", true},
		{"autocoder.results.a.b", "", false},
		{"autocoder.results.", "", false},
		{bus.SubjectJobsSubmit, "", false},
		{"other.results.j1", "", false},
	}
	for _, tt := range tests {
		id, ok := bus.JobIDFromSubject(tt.subject)
		if id != tt.id || ok != tt.ok {
			t.Errorf("JobIDFromSubject(%q) = %q, %v; want %q, %v", tt.subject, id, ok, tt.id, tt.ok)
		}
	}
}

func TestErrorOutcomes(t *testing.T) {
	t.Parallel()
	base := errors.New("boom")
	if bus.Permanent(nil) != nil || bus.RetryAfter(nil, time.Second) != nil {
		t.Error("Permanent(nil) and RetryAfter(nil, d) must be nil")
	}
	perm := fmt.Errorf("stage plan: %w", bus.Permanent(base))
	if !bus.IsPermanent(perm) || !errors.Is(perm, base) {
		t.Errorf("wrapped Permanent: IsPermanent=%v Is(base)=%v", bus.IsPermanent(perm), errors.Is(perm, base))
	}
	if bus.IsPermanent(base) {
		t.Error("IsPermanent(plain error) = true")
	}
	ra := fmt.Errorf("call model: %w", bus.RetryAfter(base, 3*time.Second))
	if d, ok := bus.RetryDelayOf(ra); !ok || d != 3*time.Second || !errors.Is(ra, base) {
		t.Errorf("RetryDelayOf = %s, %v; Is(base)=%v", d, ok, errors.Is(ra, base))
	}
	if _, ok := bus.RetryDelayOf(base); ok {
		t.Error("RetryDelayOf(plain error) reported a delay")
	}
	pe := &bus.PanicError{Value: base}
	if !errors.Is(pe, base) {
		t.Error("PanicError does not unwrap an error panic value")
	}
}

func TestDefaultRetryDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    uint64
		want time.Duration
	}{
		{0, time.Second},
		{1, time.Second},
		{2, 2 * time.Second},
		{3, 4 * time.Second},
		{9, 256 * time.Second},
		{10, 5 * time.Minute},
		{1000, 5 * time.Minute},
	}
	for _, tt := range tests {
		for range 20 { // jitter
			got := bus.DefaultRetryDelay(tt.n)
			lo, hi := tt.want*9/10, tt.want*11/10
			if got < lo || got > hi {
				t.Errorf("DefaultRetryDelay(%d) = %s, want %s ±10%%", tt.n, got, tt.want)
				break
			}
		}
	}
}

// TestParseResultSubject: the pool and job of every pool's result subject
// come back, and each is under the results stream's subjects and its
// pool's permission subject.
func TestParseResultSubject(t *testing.T) {
	t.Parallel()
	for _, pool := range messages.Pools() {
		s := checkPoolSubject(t, pool, bus.ResultSubject, bus.PoolResultSubjects, bus.ParseResultSubject)
		if !strings.HasPrefix(s, strings.TrimSuffix(bus.SubjectResultsAll, ">")) {
			t.Errorf("%q is not under the results stream's %q", s, bus.SubjectResultsAll)
		}
	}
	for _, s := range []string{"autocoder.results.j1", "autocoder.results.llm.", "autocoder.results.gpu.j1", "autocoder.events.llm.j1"} {
		if p, id, ok := bus.ParseResultSubject(s); ok {
			t.Errorf("ParseResultSubject(%q) = %q, %q, true; want not ok", s, p, id)
		}
	}
}

// TestParseOfferSubject: the pool and job of every pool's offer subject
// come back; offer subjects are under no stream's subjects (an offer is
// never stored), and are not result subjects.
func TestParseOfferSubject(t *testing.T) {
	t.Parallel()
	for _, pool := range messages.Pools() {
		s := checkPoolSubject(t, pool, bus.OfferSubject, bus.PoolOfferSubjects, bus.ParseOfferSubject)
		if _, _, ok := bus.ParseResultSubject(s); ok {
			t.Errorf("%q parses as a result subject", s)
		}
		for _, all := range []string{bus.SubjectResultsAll, bus.SubjectJobsAll, bus.SubjectEventsAll} {
			if strings.HasPrefix(s, strings.TrimSuffix(all, ">")) {
				t.Errorf("%q is under the stream subjects %q", s, all)
			}
		}
	}
	if p, id, ok := bus.ParseOfferSubject(bus.ResultSubject(messages.PoolLLM, "j1")); ok {
		t.Errorf("a result subject parses as an offer subject: %q, %q", p, id)
	}
}

// checkPoolSubject checks that parse gives back the pool and job of
// subject(pool, "j1"), which is under pools(pool), and returns it.
func checkPoolSubject(t *testing.T, pool messages.Pool, subject func(messages.Pool, string) string,
	pools func(messages.Pool) string, parse func(string) (messages.Pool, string, bool)) string {
	t.Helper()
	s := subject(pool, "j1")
	if p, id, ok := parse(s); p != pool || id != "j1" || !ok {
		t.Errorf("parse(%q) = %q, %q, %v; want %q, j1, true", s, p, id, ok, pool)
	}
	if want := strings.TrimSuffix(pools(pool), "*"); !strings.HasPrefix(s, want) {
		t.Errorf("%q is not under %q", s, pools(pool))
	}
	return s
}
