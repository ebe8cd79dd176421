package llmstages

import (
	"context"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestCodeWithInlinePlan drives the one-round code call through the real
// OpenAI client against the fake server, answering as real models do: the
// plan and the code wrapped in prose and a fence, then the plan left out,
// then the plan null. Each is taken without a corrective round; the plan
// comes out when the model wrote one, and a note says when it did not.
func TestCodeWithInlinePlan(t *testing.T) {
	t.Parallel()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	sol := `"language": "python", "code": "def total(rows):\n    return sum(rows)\n", "packages": [], "system_packages": []`
	srv.On("solution",
		fakellm.Text("Sure! First the plan, then the code.\n```json\n{\"plan\": {\"description\": \" Sums rows. \", \"approach\": \"1. total(rows) -> int\"}, "+sol+"}\n```\nLet me know if you need more."),
		fakellm.Text("{"+sol+"}"),
		fakellm.JSON(map[string]any{"plan": nil, "language": "python", "code": "x = 1\n", "packages": []string{}, "system_packages": []string{}}),
	)
	client, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHandlers(t, client, Config{})
	in := messages.CodeInput{Task: task, PlanInline: true}

	out, err := h.Handle(context.Background(), command(t, messages.StageCode, in))
	if err != nil {
		t.Fatal(err)
	}
	got := value[messages.CodeOutput](t, out)
	if got.Plan == nil || got.Plan.Description != "Sums rows." || got.Plan.Approach != "1. total(rows) -> int" || !strings.HasPrefix(got.Code, "def total") {
		t.Errorf("output %+v plan %+v", got.Solution, got.Plan)
	}

	for i := range 2 {
		out, err = h.Handle(context.Background(), command(t, messages.StageCode, in))
		if err != nil {
			t.Fatalf("reply %d: %v", i+2, err)
		}
		if got := value[messages.CodeOutput](t, out); got.Plan != nil || got.Code == "" {
			t.Errorf("reply %d: plan %+v code %q, want no plan and the code", i+2, got.Plan, got.Code)
		}
		if !strings.Contains(strings.Join(out.Notes, "\n"), "no plan") {
			t.Errorf("reply %d: notes %q", i+2, out.Notes)
		}
	}

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (no corrective round)", len(reqs))
	}
	if !strings.Contains(string(reqs[0].Schema), `"plan"`) || !strings.Contains(reqs[0].Messages[0].Content, "plan solution.py for the task, then write it") {
		t.Errorf("the request did not ask for the plan: schema %s", reqs[0].Schema)
	}
	if strings.Contains(reqs[0].Messages[1].Content, "## Plan") {
		t.Error("the one-round code prompt renders a plan it does not have")
	}
}

// TestTestsFromTheTask: tests without a plan are written from the task
// and the script protocol's names alone.
func TestTestsFromTheTask(t *testing.T) {
	t.Parallel()
	fc := &fakeClient{replies: map[string]string{"tests": `{"code":"from solution import main\n\ndef test_main(tmp_path):\n    assert main([], str(tmp_path)) == 0\n"}`}}
	h := newHandlers(t, fc, Config{})
	if _, err := h.Handle(context.Background(), command(t, messages.StageTests, messages.TestsInput{Task: task})); err != nil {
		t.Fatal(err)
	}
	msgs := fc.calls()[0].Messages
	if !strings.Contains(msgs[0].Content, "never guess the name of any other function") || strings.Contains(msgs[1].Content, "## Plan") {
		t.Errorf("tests prompt is not the task-only one:\n%s", msgs[0].Content)
	}
}

// TestEmptyProgramIsCorrected: a reply that fits the schema but holds no
// program (a local model in JSON mode writes "code": "" and the program in
// a fenced block after the JSON) is sent back to the model in the same
// call, as a reply that does not fit is; the stage takes the second
// reply. Before, the stage failed for good. The same for empty tests.
func TestEmptyProgramIsCorrected(t *testing.T) {
	t.Parallel()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.On("solution",
		fakellm.Text("{\"language\": \"python\", \"code\": \"\", \"packages\": [], \"system_packages\": []}\n```python\ndef total(rows):\n    return sum(rows)\n```"),
		fakellm.JSON(messages.Solution{Language: "python", Code: "def total(rows):\n    return sum(rows)\n", Packages: []string{}, SystemPackages: []string{}}))
	srv.On("tests",
		fakellm.JSON(messages.Tests{Code: "```python\n```"}),
		fakellm.JSON(messages.Tests{Code: "from solution import total\n\ndef test_total():\n    assert total([1, 2]) == 3\n"}))
	client, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHandlers(t, client, Config{})
	out, err := h.Handle(context.Background(), command(t, messages.StageCode, messages.CodeInput{Task: task}))
	if err != nil {
		t.Fatalf("code: %v", err)
	}
	if got := value[messages.CodeOutput](t, out); !strings.HasPrefix(got.Code, "def total") || out.Usage.Calls != 2 {
		t.Errorf("code %q in %d calls: want the corrected program, in 2", got.Code, out.Usage.Calls)
	}
	out, err = h.Handle(context.Background(), command(t, messages.StageTests, messages.TestsInput{Task: task}))
	if err != nil {
		t.Fatalf("tests: %v", err)
	}
	if got := value[messages.Tests](t, out); !strings.Contains(got.Code, "def test_total") || out.Usage.Calls != 2 {
		t.Errorf("tests %q in %d calls: want the corrected file, in 2", got.Code, out.Usage.Calls)
	}
	reqs := srv.Requests()
	if last := reqs[1].Messages[len(reqs[1].Messages)-1].Content; !strings.Contains(last, `"code" field is empty`) {
		t.Errorf("the correction says %q", last)
	}
}
