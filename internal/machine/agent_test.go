package machine

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

func agentCall(id, name string, args map[string]string) messages.AgentToolCall {
	b, _ := json.Marshal(args)
	return messages.AgentToolCall{ID: id, Name: name, Arguments: string(b)}
}

func turn(calls ...messages.AgentToolCall) messages.AgentTurnOutput {
	return messages.AgentTurnOutput{ToolCalls: calls}
}

// agentWorld answers agent_tool stages as a workspace would: write_file
// stores the file, bash with pytest becomes the test stage, bash curl is
// denied, anything else is ok.
func agentWorld(t *testing.T, turns ...messages.AgentTurnOutput) *world {
	w := newWorld(t)
	var as []any
	for _, tr := range turns {
		as = append(as, tr)
	}
	w.answers[messages.StageAgentTurn] = as
	w.fn[messages.StageAgentTool] = func(c *messages.StageCommand, _ int) any {
		var in messages.AgentToolInput
		if err := json.Unmarshal(c.Input, &in); err != nil {
			t.Fatal(err)
		}
		var args map[string]string
		_ = json.Unmarshal([]byte(in.Call.Arguments), &args)
		out := messages.AgentToolOutput{Verdict: messages.VerdictOK, Result: "ok", Workspace: messages.Workspace{}, Files: map[string]string{}}
		for p, ref := range in.Workspace {
			out.Workspace[p] = ref
			out.Files[p] = strings.TrimPrefix(ref, "text:")
		}
		switch {
		case in.Call.Name == messages.ToolWriteFile:
			out.Workspace[args["path"]] = "text:" + args["content"]
			out.Files[args["path"]] = args["content"]
		case strings.Contains(args["command"], "pytest"):
			out.Verdict = messages.VerdictTests
		case strings.Contains(args["command"], "curl"):
			out.Verdict, out.Result = messages.VerdictDenied, "denied by the shell policy: curl is a network tool"
		}
		return out
	}
	return w
}

func agentSpecOf(maxTurns int) messages.JobSpec {
	s := baseSpec()
	s.Outputs = map[string]messages.Type{"row_count": messages.TypeInt}
	s.Options.Backend = messages.BackendAgent
	s.Options.AgentMaxTurns = maxTurns
	return s
}

func TestAgentPath(t *testing.T) {
	t.Parallel()
	sales := []messages.SampleRef{{Name: "sales", Object: "sha256:" + strings.Repeat("a", 64) + ".csv", FileName: "sales.csv"}}
	w := agentWorld(t,
		turn(agentCall("c1", messages.ToolWriteFile, map[string]string{"path": "solution.py", "content": "import numpy\n"}),
			agentCall("c2", messages.ToolWriteFile, map[string]string{"path": "test_solution.py", "content": "def test_x(): pass\n"}),
			agentCall("c3", messages.ToolWriteFile, map[string]string{"path": "packages.txt", "content": "# numbers\nnumpy\n"})),
		turn(agentCall("c4", messages.ToolRunTests, nil)),
		turn(agentCall("c5", messages.ToolBash, map[string]string{"command": "curl x"}),
			agentCall("c6", messages.ToolBash, map[string]string{"command": "python -m pytest -q"})),
		messages.AgentTurnOutput{Content: "done"})
	w.answers[messages.StageRunTests] = []any{fail("test_x"), pass(1)}
	s, _, cmds := run(t, w, agentSpecOf(0), sales)
	want := []string{"profile", "agent_turn", "agent_tool", "agent_tool", "agent_tool", "agent_turn", "build", "run_tests",
		"agent_turn", "agent_tool", "agent_tool", "run_tests", "agent_turn", "acceptance"}
	if diff := cmp.Diff(want, stagesOf(cmds)); diff != "" {
		t.Fatalf("stages (-want +got):\n%s", diff)
	}
	if s.Status != messages.StatusSucceeded {
		t.Fatalf("status %s: %s", s.Status, s.Error)
	}
	for _, c := range cmds {
		if d := c.Dispatch; d != nil && d.Stage == messages.StageBuild && !strings.Contains(string(d.Input), "numpy") {
			t.Errorf("build input %s does not install packages.txt", d.Input)
		}
		if d := c.Dispatch; d != nil && d.Stage == messages.StageAgentTurn && strings.Contains(string(d.Input), "plan") {
			t.Errorf("the agent turn carries pipeline input: %s", d.Input)
		}
	}
	res := ResultOf(s)
	verdicts := []string{}
	for _, c := range res.Agent.Trace {
		verdicts = append(verdicts, c.Tool+":"+c.Verdict)
	}
	wantTrace := []string{"write_file:ok", "write_file:ok", "write_file:ok", "run_tests:error", "bash:denied", "bash:ok"}
	if diff := cmp.Diff(wantTrace, verdicts); diff != "" {
		t.Errorf("trace (-want +got):\n%s", diff)
	}
	if res.Agent.TestRuns != 2 || res.Agent.Denied != 1 || res.Agent.Turns != 4 || res.Agent.CallsByTool["write_file"] != 3 {
		t.Errorf("summary %+v", res.Agent)
	}
	if res.Solution == nil || res.Solution.Code != "import numpy\n" || !cmp.Equal(res.Solution.Packages, []string{"numpy"}) || res.Tests == "" {
		t.Errorf("solution %+v, tests %q", res.Solution, res.Tests)
	}
	if res.Outputs["row_count"] != float64(3) {
		t.Errorf("outputs %v", res.Outputs)
	}
	last := s.Agent.Messages[len(s.Agent.Messages)-2]
	if last.Role != "tool" || last.ToolCallID != "c6" || !strings.Contains(last.Content, "1 passed") {
		t.Errorf("the model did not read the test run as c6's result: %+v", last)
	}
	if !strings.Contains(last.Content, "nothing else of the command ran") {
		t.Errorf("a bash command that ran pytest does not say the rest of it did not run: %q", last.Content)
	}
	for _, m := range s.Agent.Messages {
		if m.ToolCallID == "c4" && strings.Contains(m.Content, "nothing else") {
			t.Errorf("run_tests's result speaks of a command: %q", m.Content)
		}
	}
}

func TestAgentEnds(t *testing.T) {
	t.Parallel()
	list := turn(agentCall("l", messages.ToolListFiles, map[string]string{"path": "."}))
	write := turn(agentCall("w1", messages.ToolWriteFile, map[string]string{"path": "solution.py", "content": "x = 1\n"}),
		agentCall("w2", messages.ToolWriteFile, map[string]string{"path": "test_solution.py", "content": "def test(): pass\n"}))
	tests := []struct {
		name      string
		maxTurns  int
		turns     []messages.AgentTurnOutput
		script    func(*world)
		budget    int
		wantError string
		wantTurns int
	}{
		{name: "max turns", maxTurns: 2, turns: []messages.AgentTurnOutput{list}, wantError: "options.agent_max_turns (2 turns) without finishing: no solution.py was written", wantTurns: 2},
		{name: "no solution", turns: []messages.AgentTurnOutput{{Content: "I give up"}}, wantError: "ended without writing solution.py", wantTurns: 1},
		{name: "final test run fails", turns: []messages.AgentTurnOutput{write, {Content: "done"}},
			script: func(w *world) { w.answers[messages.StageRunTests] = []any{fail("test")} }, wantError: "ended with failing tests", wantTurns: 2},
		{name: "token budget", budget: 20, turns: []messages.AgentTurnOutput{list}, wantError: "token budget exceeded", wantTurns: 2},
		{name: "acceptance failure goes back to the model until the turns run out", maxTurns: 3,
			turns: []messages.AgentTurnOutput{write, {Content: "done"}},
			script: func(w *world) {
				w.answers[messages.StageAcceptance] = []any{messages.AcceptanceOutput{Problems: []string{"row_count missing"}}}
			}, wantError: "options.agent_max_turns (3 turns)", wantTurns: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := agentWorld(t, tc.turns...)
			if tc.script != nil {
				tc.script(w)
			}
			spec := agentSpecOf(tc.maxTurns)
			spec.Options.TokenBudget = tc.budget
			s, _, _ := run(t, w, spec, nil)
			if s.Status != messages.StatusFailed || !strings.Contains(s.Error, tc.wantError) {
				t.Fatalf("status %s, error %q; want failed with %q", s.Status, s.Error, tc.wantError)
			}
			if s.Agent.Turns != tc.wantTurns {
				t.Errorf("%d turns, want %d", s.Agent.Turns, tc.wantTurns)
			}
		})
	}
}

// TestAgentPassedTestsAreNotRunAgain: a model that ends right after a
// passing run goes straight to acceptance; and the same conversation gives
// the same agent_turn input, so a resumed job's turn has the same content key.
func TestAgentPassedTestsAreNotRunAgain(t *testing.T) {
	t.Parallel()
	script := func() *world {
		return agentWorld(t,
			turn(agentCall("w1", messages.ToolWriteFile, map[string]string{"path": "solution.py", "content": "x = 1\n"}),
				agentCall("w2", messages.ToolWriteFile, map[string]string{"path": "test_solution.py", "content": "def test(): pass\n"}),
				agentCall("t", messages.ToolRunTests, nil)),
			messages.AgentTurnOutput{Content: "done"})
	}
	s, _, cmds := run(t, script(), agentSpecOf(0), nil)
	if s.Status != messages.StatusSucceeded || strings.Count(strings.Join(stagesOf(cmds), " "), "run_tests") != 1 {
		t.Fatalf("status %s %s, stages %v", s.Status, s.Error, stagesOf(cmds))
	}
	_, _, again := run(t, script(), agentSpecOf(0), nil)
	if diff := cmp.Diff(turnInputs(cmds), turnInputs(again)); diff != "" {
		t.Errorf("agent_turn inputs differ between two runs of the same job (-first +second):\n%s", diff)
	}
}

func turnInputs(cmds []Command) []string {
	var out []string
	for _, c := range cmds {
		if c.Dispatch != nil && c.Dispatch.Stage == messages.StageAgentTurn {
			out = append(out, string(c.Dispatch.Input))
		}
	}
	return out
}

func TestTrimAgentMessages(t *testing.T) {
	t.Parallel()
	a := &AgentState{}
	big := strings.Repeat("x", 40<<10)
	for i := 0; i < 12; i++ {
		a.Messages = append(a.Messages,
			messages.AgentMessage{Role: "assistant", ToolCalls: []messages.AgentToolCall{{ID: "c", Name: "write_file", Arguments: big}}},
			messages.AgentMessage{Role: "tool", Content: big, ToolCallID: "c"})
	}
	trimAgentMessages(a)
	size := 0
	for _, m := range a.Messages {
		size += len(m.Content)
		for _, c := range m.ToolCalls {
			size += len(c.Arguments)
		}
	}
	if size > agentConversationBudget {
		t.Errorf("conversation %d bytes after trimming, over %d", size, agentConversationBudget)
	}
	if n := len(a.Messages); n != 24 || a.Messages[n-1].Content != big {
		t.Errorf("%d messages, the last trimmed: want every message kept and the latest whole", n)
	}
}

// TestAgentRevertedWorkspaceIsTestedAgain: tests pass on workspace A, the
// model changes it to B and the tests fail, then it writes A back and
// ends. A's earlier pass does not vouch for what the job holds now (B's
// solution and image, from the last run): the tests run again, and the
// acceptance run and the result are A's.
func TestAgentRevertedWorkspaceIsTestedAgain(t *testing.T) {
	t.Parallel()
	write := func(id, code string) messages.AgentTurnOutput {
		return turn(agentCall(id+"s", messages.ToolWriteFile, map[string]string{"path": "solution.py", "content": code}),
			agentCall(id+"t", messages.ToolWriteFile, map[string]string{"path": "test_solution.py", "content": "def test(): pass\n"}),
			agentCall(id+"r", messages.ToolRunTests, nil))
	}
	w := agentWorld(t, write("a", "x = 1\n"), write("b", "x = 2\n"),
		turn(agentCall("revert", messages.ToolWriteFile, map[string]string{"path": "solution.py", "content": "x = 1\n"})),
		messages.AgentTurnOutput{Content: "done"})
	w.answers[messages.StageRunTests] = []any{pass(1), fail("test"), pass(1)}
	s, _, cmds := run(t, w, agentSpecOf(0), nil)
	if s.Status != messages.StatusSucceeded {
		t.Fatalf("status %s: %s", s.Status, s.Error)
	}
	if n := strings.Count(strings.Join(stagesOf(cmds), " "), "run_tests"); n != 3 {
		t.Errorf("%d test runs, want 3 (A, B, A again): %v", n, stagesOf(cmds))
	}
	var accepted messages.AcceptanceInput
	for _, c := range cmds {
		if c.Dispatch != nil && c.Dispatch.Stage == messages.StageAcceptance {
			if err := json.Unmarshal(c.Dispatch.Input, &accepted); err != nil {
				t.Fatal(err)
			}
		}
	}
	if accepted.Code != "x = 1\n" || s.Solution == nil || s.Solution.Code != "x = 1\n" {
		t.Errorf("acceptance ran %q, the result holds %+v; want A's code", accepted.Code, s.Solution)
	}
}

// TestAgentSkipTestsBuildsTheImage: with skip_tests the agent's tests are
// not run, but the job still produces its code, its packages and its
// image (Contract 1), so a later run has an environment with packages.txt.
func TestAgentSkipTestsBuildsTheImage(t *testing.T) {
	t.Parallel()
	w := agentWorld(t,
		turn(agentCall("s", messages.ToolWriteFile, map[string]string{"path": "solution.py", "content": "import pandas\n"}),
			agentCall("p", messages.ToolWriteFile, map[string]string{"path": "packages.txt", "content": "pandas\n"})),
		messages.AgentTurnOutput{Content: "done"})
	spec := agentSpecOf(0)
	spec.Options.SkipTests = true
	s, _, cmds := run(t, w, spec, nil)
	if s.Status != messages.StatusSucceeded {
		t.Fatalf("status %s: %s", s.Status, s.Error)
	}
	stages := strings.Join(stagesOf(cmds), " ")
	if !strings.Contains(stages, "build") || strings.Contains(stages, "run_tests") {
		t.Errorf("stages %s: want a build and no test run", stages)
	}
	if s.Image == "" || s.Solution == nil || !slices.Contains(s.Solution.Packages, "pandas") {
		t.Errorf("image %q, solution %+v: want the environment of packages.txt", s.Image, s.Solution)
	}
}
