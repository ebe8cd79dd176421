package codemode_test

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// newSession returns a session over the fixture's tools that talks to a fake
// model, over real HTTP, which answers with replies in order.
func newSession(t *testing.T, tools *codemode.Registry, replies ...string) (*codemode.Session, *fakellm.Server) {
	t.Helper()
	fake := fakellm.New()
	t.Cleanup(fake.Close)
	rs := make([]fakellm.Reply, len(replies))
	for i, r := range replies {
		rs[i] = fakellm.Text(r)
	}
	fake.On(fakellm.NoSchema, rs...)
	model, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: fake.URL(), APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	return &codemode.Session{Model: model, ModelName: "fake-model", Tools: tools, MaxRetries: codemode.DefaultMaxRetries}, fake
}

func program(code string) string { return "Here is the program.\n```python\n" + code + "\n```\n" }

func runSession(t *testing.T, a *codemode.Session, msg string) codemode.SessionResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := a.Run(ctx, msg, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// userMessages are the user messages of the model's i-th request.
func lastUserMessage(t *testing.T, fake *fakellm.Server, i int) string {
	t.Helper()
	reqs := fake.Requests()
	if i >= len(reqs) {
		t.Fatalf("the model got %d requests, want at least %d", len(reqs), i+1)
	}
	msgs := reqs[i].Messages
	return msgs[len(msgs)-1].Content
}

func TestSessionTwoToolsReturnDict(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	a, fake := newSession(t, fx.tools, program(`w = get_weather(city="Paris")
f = convert(celsius=w["temp_c"])
{"city": w["city"], "fahrenheit": f}`))
	res := runSession(t, a, "How warm is Paris in Fahrenheit?")
	want := map[string]any{"city": "Paris", "fahrenheit": 69.8}
	if !equalJSON(res.Value, want) || res.Error != "" || res.Turns != 1 {
		t.Fatalf("result %+v, want value %v in one turn", res, want)
	}
	if fx.calls.Load() != 2 || res.Summary != "Here is the program." || !strings.Contains(res.Code, "convert(") {
		t.Fatalf("calls %d, summary %q, code %q", fx.calls.Load(), res.Summary, res.Code)
	}
	sys := fake.Requests()[0].Messages[0].Content
	for _, want := range []string{"get_weather", "convert", "Starlark", "is_error"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
}

func TestSessionProgramHandlesToolError(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	a, _ := newSession(t, fx.tools, program(`out = {}
for c in ["Paris", "Atlantis"]:
    w = get_weather(city=c)
    if is_error(w):
        out[c] = "failed: " + w.message
    else:
        out[c] = w["temp_c"]
out`))
	res := runSession(t, a, "Weather in Paris and Atlantis?")
	want := map[string]any{"Paris": 21, "Atlantis": "failed: no such city: Atlantis"}
	if !equalJSON(res.Value, want) || res.Error != "" || res.Turns != 1 {
		t.Fatalf("result %+v, want %v", res, want)
	}
}

func TestSessionSyntaxErrorFixedOnRetry(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	a, fake := newSession(t, fx.tools,
		program("w = get_weather(city=\"Paris\"\nw"),
		program("w = get_weather(city=\"Paris\")\nw[\"temp_c\"]"))
	res := runSession(t, a, "Temperature in Paris?")
	if !equalJSON(res.Value, 21) || res.Error != "" || res.Turns != 2 {
		t.Fatalf("result %+v, want 21 on the second attempt", res)
	}
	fb := lastUserMessage(t, fake, 1)
	if !strings.Contains(fb, "Error (syntax)") || !strings.Contains(fb, "line ") {
		t.Fatalf("the retry request does not carry the syntax error: %q", fb)
	}
	if res.Events[1].Type != codemode.EventError {
		t.Fatalf("events %+v: the second is not the error", res.Events)
	}
}

func TestSessionUnknownToolCaughtBeforeRunning(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	a, fake := newSession(t, fx.tools, program(`w = get_weather(city="Paris")
get_wether(city="Rome")`))
	a.MaxRetries = 1
	res := runSession(t, a, "Weather?")
	if fx.calls.Load() != 0 {
		t.Fatalf("%d tool calls were made; the static check must refuse the program before it runs", fx.calls.Load())
	}
	fb := lastUserMessage(t, fake, 1)
	if !strings.Contains(fb, "Error (check)") || !strings.Contains(fb, "did you mean get_weather?") {
		t.Fatalf("the model was not told of the unknown tool: %q", fb)
	}
	if !strings.HasPrefix(res.Error, "max_retries reached: no program succeeded in 2 attempts") {
		t.Fatalf("error %q", res.Error)
	}
}

func TestSessionInfiniteLoopStoppedBySteps(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	a, fake := newSession(t, fx.tools, program(`n = 0
for i in range(1000000000):
    n += i
n`), program("1"))
	a.Limits = codemode.Limits{MaxSteps: 100_000}
	res := runSession(t, a, "Count.")
	fb := lastUserMessage(t, fake, 1)
	if !strings.Contains(fb, "Error (limit)") || !strings.Contains(fb, "step limit") {
		t.Fatalf("the model was not told of the step limit: %q", fb)
	}
	if !equalJSON(res.Value, 1) || res.Turns != 2 {
		t.Fatalf("result %+v", res)
	}
}

func TestSessionMemoryBlowUpStopped(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	a, fake := newSession(t, fx.tools, program(`xs = ["x" * 1000]
for i in range(40):
    xs = xs + xs
len(xs)`), program("0"))
	a.Limits = codemode.Limits{MaxAllocBytes: 8 << 20}
	res := runSession(t, a, "Grow.")
	fb := lastUserMessage(t, fake, 1)
	if !strings.Contains(fb, "Error (limit)") || !strings.Contains(fb, "memory") {
		t.Fatalf("the model was not told of the memory limit: %q", fb)
	}
	if res.Turns != 2 {
		t.Fatalf("result %+v", res)
	}
}

func TestSessionMultiTurnThreeObservationsThenAnswer(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	a, fake := newSession(t, fx.tools,
		program(`get_weather(city="Paris")`),
		program(`get_weather(city="Atlantis")`),
		program(`convert(celsius=21)`),
		"Paris is 21 °C (69.8 °F); Atlantis is not a city the weather service knows.")
	a.MaxTurns = 5
	res := runSession(t, a, "Compare Paris and Atlantis.")
	if res.Turns != 4 || res.Error != "" || !strings.HasPrefix(res.Summary, "Paris is 21") || !equalJSON(res.Value, 69.8) {
		t.Fatalf("result %+v", res)
	}
	wantObs := []string{`Value: {"city":"Paris","temp_c":21}`, "no such city: Atlantis", "Value: 69.8"}
	for i, want := range wantObs {
		got := lastUserMessage(t, fake, i+1)
		if !strings.HasPrefix(got, "Observation:") || !strings.Contains(got, want) {
			t.Errorf("observation %d = %q, want it to contain %q", i+1, got, want)
		}
	}
	types := []string{}
	for _, e := range res.Events {
		types = append(types, e.Type)
	}
	if strings.Join(types, ",") != "code,observation,code,observation,code,observation,answer" {
		t.Fatalf("events %v", types)
	}
}

func TestSessionMaxTurnsReached(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	a, fake := newSession(t, fx.tools, program(`get_weather(city="Paris")`))
	a.MaxTurns = 3
	res := runSession(t, a, "Loop forever.")
	if res.Turns != 3 || res.Error != messages.MaxTurnsReason(3) || len(fake.Requests()) != 3 {
		t.Fatalf("result %+v after %d requests", res, len(fake.Requests()))
	}
	if !strings.Contains(res.Error, "max_turns reached") {
		t.Fatalf("reason %q does not name max_turns", res.Error)
	}
}

func TestSessionObservationTruncated(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	a, fake := newSession(t, fx.tools, program(`["abcdefghij"] * 1000`), "done")
	a.MaxTurns = 2
	a.ObservationBytes = 500
	runSession(t, a, "Big.")
	obs := lastUserMessage(t, fake, 1)
	if len(obs) > 520 || !strings.Contains(obs, "[observation truncated: showing") {
		t.Fatalf("observation of %d bytes, not cut with a note: %q", len(obs), obs)
	}
}

func TestSessionSkillsInPrompt(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	a, fake := newSession(t, fx.tools, program("1"))
	dir := t.TempDir()
	path := dir + "/skill.md"
	if err := writeFile(path, "Always round temperatures to whole degrees."); err != nil {
		t.Fatal(err)
	}
	a.Skills = []string{"Cities are capitalised."}
	a.SkillFiles = []string{path}
	a.SystemPromptPrefix = "You are a weather assistant."
	runSession(t, a, "x")
	sys := fake.Requests()[0].Messages[0].Content
	for _, want := range []string{"You are a weather assistant.", "Cities are capitalised.", "round temperatures"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	a.SkillFiles = []string{dir + "/missing.md"}
	if _, err := a.Run(context.Background(), "x", nil); err == nil || !strings.Contains(err.Error(), "skill file") {
		t.Fatalf("a missing skill file: err %v", err)
	}
}

// equalJSON compares two values by their JSON, so 21 and int64(21) match.
func equalJSON(got, want any) bool {
	g, err1 := json.Marshal(got)
	w, err2 := json.Marshal(want)
	if err1 != nil || err2 != nil {
		return false
	}
	var gv, wv any
	_ = json.Unmarshal(g, &gv)
	_ = json.Unmarshal(w, &wv)
	return reflect.DeepEqual(gv, wv)
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o600) }

// TestSessionCutReplyIsNotTheAnswer: a reply cut off at the model's token
// limit (here inside its code block), or an empty one, is neither the
// final answer of a multi-turn session nor a program: the model is told
// and asked again, and the session goes on to the real answer. Before, the
// cut reply ended the session as its answer.
func TestSessionCutReplyIsNotTheAnswer(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	fake := fakellm.New()
	t.Cleanup(fake.Close)
	fake.On(fakellm.NoSchema,
		fakellm.Truncated("Let me look.\n```python\nw = get_weather(city="),
		fakellm.Text(""),
		fakellm.Text(program(`get_weather(city="Paris")["temp_c"]`)),
		fakellm.Text("It is 21 degrees in Paris."))
	model, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: fake.URL(), APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	a := &codemode.Session{Model: model, ModelName: "fake-model", Tools: fx.tools, MaxTurns: 5}
	res := runSession(t, a, "How warm is Paris?")
	if res.Summary != "It is 21 degrees in Paris." || res.Error != "" || res.Turns != 4 {
		t.Fatalf("result %+v: want the real answer after the cut replies, in 4 turns", res)
	}
	if told := lastUserMessage(t, fake, 1); !strings.Contains(told, "cut off") {
		t.Errorf("after the cut reply the model was told %q", told)
	}
}

// TestExtractCodeKeepsFencesInsideTheProgram: a program that prints a
// Markdown fence is taken whole: the block ends at a fence on a line of
// its own.
func TestExtractCodeKeepsFencesInsideTheProgram(t *testing.T) {
	t.Parallel()
	prog := "report = \"```json\\n\" + data + \"\\n```\"\nprint(report)"
	code, prose, ok := codemode.ExtractCode("Here it is.\n```python\n" + prog + "\n```\nDone.")
	if !ok || code != prog || prose != "Here it is.\n\nDone." {
		t.Errorf("ExtractCode: ok %v, code %q, prose %q; want the whole program", ok, code, prose)
	}
	for _, tc := range []struct {
		reply, finish string
		cut           bool
	}{
		{"```python\nx = (", "length", true},
		{"```python\nx = (", "stop", true}, // a block never closed
		{"", "stop", true},
		{"The answer is 4.", "length", true},
		{"The answer is 4.", "stop", false},
		{"```python\nx = 1\n```\nand then I went on and o", "length", false}, // the program is whole
	} {
		if got := codemode.Cut(tc.reply, tc.finish); got != tc.cut {
			t.Errorf("Cut(%q, %s) = %v, want %v", tc.reply, tc.finish, got, tc.cut)
		}
	}
}
