package llmstages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/docsearch"
	"github.com/autocoder/autocoder/internal/objects"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// contextStore uploads bundle to a real object store (embedded NATS) and
// returns the store, as the llm-worker has it, and the bundle's reference.
func contextStore(t *testing.T, bundle messages.ContextBundle) (*objects.Store, string) {
	t.Helper()
	res := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true}).Resources
	st, err := objects.New(res.Samples, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bundle.json")
	b, _ := json.Marshal(bundle)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := st.Put(context.Background(), "context", path)
	if err != nil {
		t.Fatal(err)
	}
	return st, ref.Object
}

var zrlBundle = messages.ContextBundle{Files: []messages.ContextFile{
	{Path: "zrl/values.md", Text: "# Values\n\nA value is four hex digits such as 0a1f, a signed 16-bit integer in hundredths: decode with int(value, 16). It is not a decimal string: float() cannot convert it."},
	{Path: "zrl/palette.md", Text: "# Palette\n\nCharts cycle through teal, amber and violet on a dark background." + strings.Repeat(" Themes swap colours.", 40)},
	{Path: "zrl/records.md", Text: "# Records\n\nA record line is @time|sensor|value|flags; records flagged R are retracted and skipped."},
}}

func TestContextRetrievedIntoPrompts(t *testing.T) {
	t.Parallel()
	st, ref := contextStore(t, zrlBundle)
	fc := &fakeClient{replies: map[string]string{
		"plan":     `{"description":"d","approach":"a"}`,
		"solution": `{"language":"python","code":"print(1)\n","packages":[],"system_packages":[]}`,
	}}
	h := newHandlers(t, fc, Config{Context: st, ContextBytes: 400})
	tk := messages.TaskSpec{Prompt: "Mean of the sensor T1 records that are not retracted.", Context: []string{ref}}

	out, err := h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: tk}))
	if err != nil {
		t.Fatal(err)
	}
	plan := usedOf(t, out)
	if !plan.Retrieved || len(plan.Chunks) == 0 || plan.Chunks[0].File != "zrl/records.md" || plan.Chunks[0].Score <= 0 {
		t.Fatalf("plan context = %+v, want the records chunk retrieved first", plan)
	}
	prompt := fc.calls()[0].Messages[1].Content
	if !strings.Contains(prompt, "retracted and skipped") || strings.Contains(prompt, "teal, amber") {
		t.Errorf("plan prompt's docs message = %q, want the records chunk and not the palette", prompt)
	}

	fix := messages.FixInput{Task: tk, Code: "x = float('0a1f')\n", Reflect: true,
		Failures: []messages.Failure{{TestName: "script_run", ErrorMessage: "ValueError: could not convert string to float: '0a1f'"}}}
	out, err = h.Handle(context.Background(), command(t, messages.StageFix, fix))
	if err != nil {
		t.Fatal(err)
	}
	if used := usedOf(t, out); used.Chunks[0].File != "zrl/values.md" {
		t.Errorf("reflection context = %+v, want the values chunk first (the error is about a value)", used)
	}
}

func TestContextFitsWhole(t *testing.T) {
	t.Parallel()
	st, ref := contextStore(t, zrlBundle)
	fc := &fakeClient{replies: map[string]string{"solution": `{"language":"python","code":"print(1)\n","packages":[],"system_packages":[]}`}}
	h := newHandlers(t, fc, Config{Context: st})
	out, err := h.Handle(context.Background(), command(t, messages.StageCode, messages.CodeInput{Task: messages.TaskSpec{Prompt: "p", Context: []string{ref}}}))
	if err != nil {
		t.Fatal(err)
	}
	if used := usedOf(t, out); used.Retrieved || len(used.Chunks) != 3 {
		t.Errorf("context = %+v, want all three chunks, not retrieved", used)
	}
}

func TestContextBadInput(t *testing.T) {
	t.Parallel()
	fc := &fakeClient{replies: map[string]string{"plan": `{"description":"d","approach":"a"}`}}
	missing := "sha256:" + strings.Repeat("0", 64) + ".json"
	st, _ := contextStore(t, zrlBundle)
	for _, tc := range []struct {
		name string
		h    testHandlers
		ref  string
		want string
	}{
		{"no store", newHandlers(t, fc, Config{}), missing, "no context store"},
		{"not a reference", newHandlers(t, fc, Config{Context: st}), "docs/zrl", "is not an object reference"},
		{"not in the store", newHandlers(t, fc, Config{Context: st}), missing, "context " + missing},
	} {
		_, err := tc.h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: messages.TaskSpec{Prompt: "p", Context: []string{tc.ref}}}))
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrBadInput naming %q", tc.name, err, tc.want)
		}
	}
	if n := len(fc.calls()); n != 0 {
		t.Errorf("%d model calls were made for bad context", n)
	}
}

// usedOf reads the context_used beside a stage's output.
func usedOf(t *testing.T, out stagework.Output[json.RawMessage]) messages.StageContext {
	t.Helper()
	b := out.Value
	var use messages.ContextUse
	if err := json.Unmarshal(b, &use); err != nil || use.Context == nil {
		t.Fatalf("output %s has no context_used (%v)", b, err)
	}
	return *use.Context
}

// TestContextBudgetInCacheVersion: a cached plan, code or fix made with
// another documentation budget is not reused; other stages keep their version.
func TestContextBudgetInCacheVersion(t *testing.T) {
	t.Parallel()
	fc := &fakeClient{}
	def, small := newHandlers(t, fc, Config{}), newHandlers(t, fc, Config{ContextBytes: 1 << 10})
	for _, st := range []messages.Stage{messages.StagePlan, messages.StageCode, messages.StageFix} {
		if def.Version(st) == small.Version(st) || !strings.Contains(def.Version(st), " docs@") {
			t.Errorf("%s: versions %q and %q, want distinct docs dependencies", st, def.Version(st), small.Version(st))
		}
	}
	if def.Version(messages.StageTests) != small.Version(messages.StageTests) || strings.Contains(def.Version(messages.StageTests), "docs@") {
		t.Errorf("tests stage version changed: %q", def.Version(messages.StageTests))
	}
}

// countingSource counts fetches of the store it wraps.
type countingSource struct {
	ContextSource
	n atomic.Int32
}

func (c *countingSource) Fetch(ctx context.Context, r messages.SampleRef) (string, error) {
	c.n.Add(1)
	return c.ContextSource.Fetch(ctx, r)
}

// TestContextSplitOncePerJob: a job's plan and code calls read and split
// its bundle once; only the last maxCorpora contexts are kept.
func TestContextSplitOncePerJob(t *testing.T) {
	t.Parallel()
	st, ref := contextStore(t, zrlBundle)
	src := &countingSource{ContextSource: st}
	fc := &fakeClient{replies: map[string]string{
		"plan":     `{"description":"d","approach":"a"}`,
		"solution": `{"language":"python","code":"print(1)\n","packages":[],"system_packages":[]}`,
	}}
	h := newHandlers(t, fc, Config{Context: src, ContextBytes: 400})
	tk := messages.TaskSpec{Prompt: "retracted records", Context: []string{ref}}
	if _, err := h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: tk})); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(context.Background(), command(t, messages.StageCode, messages.CodeInput{Task: tk})); err != nil {
		t.Fatal(err)
	}
	if n := src.n.Load(); n != 1 {
		t.Errorf("the bundle was fetched %d times for two calls, want once", n)
	}
	var c corpora
	for i := range maxCorpora + 2 {
		c.put(fmt.Sprint(i), docsearch.NewCorpus(nil))
	}
	if c.get("0") != nil || c.get("1") != nil || c.get(fmt.Sprint(maxCorpora+1)) == nil || len(c.byKey) != maxCorpora {
		t.Errorf("the corpus cache keeps %d entries %v, want the last %d", len(c.byKey), c.order, maxCorpora)
	}
}
