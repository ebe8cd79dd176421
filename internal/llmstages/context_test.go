package llmstages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

func (c *countingSource) FetchMax(ctx context.Context, r messages.SampleRef, maxBytes int64) (string, error) {
	c.n.Add(1)
	return c.ContextSource.FetchMax(ctx, r, maxBytes)
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

// putBundle uploads one more bundle to st and returns its reference.
func putBundle(t *testing.T, st *objects.Store, bundle messages.ContextBundle) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bundle.json")
	b, _ := json.Marshal(bundle)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := st.Put(context.Background(), "context", path)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Object
}

// boundSource records the size bound of every fetch of the store it wraps.
type boundSource struct {
	ContextSource
	n   atomic.Int32
	max atomic.Int64
}

func (c *boundSource) FetchMax(ctx context.Context, r messages.SampleRef, maxBytes int64) (string, error) {
	c.n.Add(1)
	c.max.Store(maxBytes)
	return c.ContextSource.FetchMax(ctx, r, maxBytes)
}

// TestContextBoundedPerJob: a context is bounded as a whole, not per
// bundle. A reference given 64 times is fetched and split once (it built
// 64 copies of every chunk), bundles that together pass
// messages.MaxContextBytes are refused, and every fetch is bounded by the
// size of a bundle, so a reference to a huge object is not downloaded.
func TestContextBoundedPerJob(t *testing.T) {
	t.Parallel()
	st, ref := contextStore(t, zrlBundle)
	src := &boundSource{ContextSource: st}
	fc := &fakeClient{replies: map[string]string{"plan": `{"description":"d","approach":"a"}`}}
	h := newHandlers(t, fc, Config{Context: src})
	refs := make([]string, messages.MaxContextEntries)
	for i := range refs {
		refs[i] = ref
	}
	out, err := h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: messages.TaskSpec{Prompt: "p", Context: refs}}))
	if err != nil {
		t.Fatal(err)
	}
	if used := usedOf(t, out); len(used.Chunks) != 3 || src.n.Load() != 1 {
		t.Errorf("one bundle named %d times: %d chunks from %d fetches, want 3 chunks from 1", len(refs), len(used.Chunks), src.n.Load())
	}
	if got := src.max.Load(); got != maxBundleBytes {
		t.Errorf("fetched with a bound of %d bytes, want %d (maxBundleBytes)", got, maxBundleBytes)
	}

	half := strings.Repeat("word ", messages.MaxContextBytes/10+1) // a little over half the bound
	a := putBundle(t, st, messages.ContextBundle{Files: []messages.ContextFile{{Path: "a.md", Text: half}}})
	b := putBundle(t, st, messages.ContextBundle{Files: []messages.ContextFile{{Path: "b.md", Text: half}}})
	_, err = h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: messages.TaskSpec{Prompt: "p", Context: []string{a, b}}}))
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "for the whole context") {
		t.Errorf("two bundles over the bound together: %v, want ErrBadInput", err)
	}
}

// TestContextBudgetCountsRenderedChunks: the documentation a prompt holds
// stays within ContextBytes as rendered (labels and fences), not only as
// the chunks' text; and when no chunk fits, the worker says so.
func TestContextBudgetCountsRenderedChunks(t *testing.T) {
	t.Parallel()
	st, ref := contextStore(t, zrlBundle)
	tk := messages.TaskSpec{Prompt: "Palette: teal, amber and violet colours of charts; records, values, sensor, retracted, themes.", Context: []string{ref}}
	for budget := 150; budget <= 1400; budget += 10 {
		fc := &fakeClient{replies: map[string]string{"plan": `{"description":"d","approach":"a"}`}}
		h := newHandlers(t, fc, Config{Context: st, ContextBytes: budget})
		if _, err := h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: tk})); err != nil {
			t.Fatal(err)
		}
		msgs := fc.calls()[0].Messages
		if len(msgs) < 3 || !strings.HasPrefix(msgs[len(msgs)-2].Content, "## Documentation") {
			continue // nothing fitted
		}
		if n := len(msgs[len(msgs)-2].Content) - docsHeaderLen(); n > budget {
			t.Errorf("budget %d: the documentation's chunks take %d bytes of the prompt", budget, n)
		}
	}

	var log strings.Builder
	fc := &fakeClient{replies: map[string]string{"plan": `{"description":"d","approach":"a"}`}}
	h := newHandlers(t, fc, Config{Context: st, ContextBytes: 100, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if _, err := h.Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: tk})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "no documentation chunk fits the context budget") {
		t.Errorf("no chunk fitted and nothing was logged: %q", log.String())
	}
}
