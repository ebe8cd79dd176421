package machine

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The agent backend (Contract 7 (docs/contracts.md)): after profiling, the
// model drives the work one turn at a time. Each turn is an agent_turn
// stage; each tool call of a turn an agent_tool stage over the workspace the
// previous call left, run one after another. run_tests, and a bash command
// that runs pytest, is the job's own test stage (the same build, package
// validation and replacement path as the pipeline's, through env). A reply
// without tool calls ends the run: the tests are run on the final workspace
// unless they already passed on it, then the acceptance run on the samples.

// AgentRun is the agent backend's part of the state (nil for the pipeline).
type AgentRun struct {
	Agent *AgentState `json:"agent,omitempty"`
}

// AgentState is the agent's conversation, workspace and trace.
type AgentState struct {
	Messages []messages.AgentMessage `json:"messages,omitempty"` // trimmed (trimAgentMessages)
	Turns    int                     `json:"turns"`
	// Queue holds the calls of the last turn still to run; Call is the one
	// running now (an agent_tool stage, or the test stage for run_tests).
	Queue     []messages.AgentToolCall `json:"queue,omitempty"`
	Call      *messages.AgentToolCall  `json:"call,omitempty"`
	Workspace messages.Workspace       `json:"workspace,omitempty"`
	Files     map[string]string        `json:"files,omitempty"` // the job's own files (AgentToolOutput.Files)
	// Ended: the model replied without tool calls; the final checks run.
	Ended       bool                      `json:"ended,omitempty"`
	PassedKey   string                    `json:"passed_key,omitempty"` // code, tests and packages of the last test run, when it passed
	Trace       []messages.ToolCallRecord `json:"trace,omitempty"`
	Dropped     int                       `json:"dropped,omitempty"`
	CallsByTool map[string]int            `json:"calls_by_tool,omitempty"`
	TestRuns    int                       `json:"test_runs,omitempty"`
	Denied      int                       `json:"denied,omitempty"`
}

// Bounds of the agent's part of the state.
const (
	agentResultBudget       = 8000      // one tool result, as the model reads it
	agentConversationBudget = 192 << 10 // the whole conversation
	agentArgumentsBudget    = 200       // an argument summary on the trace
	maxAgentTrace           = 300       // trace entries kept
	agentDroppedResult      = "[this tool result was dropped to keep the conversation small]"
	agentDroppedArguments   = `{"note":"arguments dropped to keep the conversation small"}`
)

// agentKind is options.backend: agent.
func agentKind() Kind {
	return Kind{
		Name:  "agent",
		Is:    func(sub *Submission) bool { return sub.Spec.Options.Backend == messages.BackendAgent },
		Start: (*Stepper).startAgent,
		Results: []Row{
			On(messages.StageProfile, (*Stepper).agentProfiled),
			On(messages.StageAgentTurn, (*Stepper).agentTurned),
			On(messages.StageAgentTool, (*Stepper).agentToolDone),
			On(messages.StagePackages, (*Stepper).packaged).advisory((*Stepper).packagesFailed),              // env.go, as is the build
			On(messages.StagePackageReplacement, (*Stepper).replaced).advisory((*Stepper).replacementFailed), // replace.go
			On(messages.StageBuild, (*Stepper).built),
			On(messages.StageRunTests, (*Stepper).agentTested),
			On(messages.StageAcceptance, (*Stepper).agentAccepted),
		},
		Phases: Phases{
			PhaseProfiling: {PhaseNew},
			PhaseAgent:     {PhaseNew, PhaseProfiling, PhaseTesting, PhaseAccepting},
			PhaseBuilding:  {PhaseAgent},
			PhasePackages:  {PhaseBuilding},
			PhaseTesting:   {PhaseBuilding, PhasePackages},
			PhaseAccepting: {PhaseAgent, PhaseTesting},
		},
		loop:      loop{advance: (*Stepper).agentAdvance},
		succeeded: "tests passed",
	}
}

// startAgent profiles the samples first, if there are any.
func (m *Stepper) startAgent(*Submission) {
	if len(m.s.Samples) > 0 {
		m.profile() // pipeline.go
		return
	}
	m.agentStart()
}

// agentProfiled starts the run: the model reads the data context itself.
func (m *Stepper) agentProfiled(_ Pending, out messages.ProfileOutput) {
	m.keepProfile(out) // pipeline.go
	m.agentStart()
}

// agentStart begins the run once the samples are profiled.
func (m *Stepper) agentStart() {
	s := m.s
	if s.Spec.Options.Candidates > 1 {
		m.Note("backend agent: options.candidates does not apply; one agent works on the job")
	}
	s.Agent = &AgentState{}
	m.agentTurn()
}

// agentTurn asks the model for its next turn, within options.agent_max_turns.
func (m *Stepper) agentTurn() {
	s, a := m.s, m.s.Agent
	limit := s.Spec.Options.AgentMaxTurns
	if limit <= 0 {
		limit = messages.DefaultAgentMaxTurns
	}
	if a.Turns >= limit {
		m.Finish(messages.StatusFailed, fmt.Sprintf("the agent reached options.agent_max_turns (%d turns) without finishing: %s", limit, m.agentStatus()))
		return
	}
	a.Turns++
	m.Enter(PhaseAgent)
	m.Dispatch(messages.StageAgentTurn, messages.AgentTurnInput{
		Task: s.Task, DataContext: s.DataContext, Messages: a.Messages, Turn: a.Turns, MaxTurns: limit,
	})
}

// agentStatus says where the work stood, for a failure's reason.
func (m *Stepper) agentStatus() string {
	a := m.s.Agent
	switch {
	case a.Files[protocol.SolutionFile] == "":
		return "no solution.py was written"
	case m.s.LastReport == nil:
		return "the tests never ran"
	}
	return "the last test run: " + reportSummary(*m.s.LastReport)
}

// agentTurned takes the model's turn: its tool calls run one by one; none ends the run.
func (m *Stepper) agentTurned(_ Pending, out messages.AgentTurnOutput) {
	a := m.s.Agent
	if a == nil {
		return
	}
	a.Messages = append(a.Messages, messages.AgentMessage{Role: "assistant", Content: out.Content, ToolCalls: out.ToolCalls})
	trimAgentMessages(a)
	if len(out.ToolCalls) == 0 {
		m.agentEnd()
		return
	}
	a.Queue = append([]messages.AgentToolCall(nil), out.ToolCalls...)
	m.agentNextCall()
}

// agentNextCall runs the next queued call, or asks for the next turn.
func (m *Stepper) agentNextCall() {
	s, a := m.s, m.s.Agent
	if len(a.Queue) == 0 {
		m.agentTurn()
		return
	}
	call := a.Queue[0]
	a.Queue = a.Queue[1:]
	a.Call = &call
	if call.Name == messages.ToolRunTests {
		m.agentRunTests()
		return
	}
	m.Enter(PhaseAgent)
	m.Dispatch(messages.StageAgentTool, messages.AgentToolInput{
		Call: call, Workspace: a.Workspace, Samples: s.Samples,
		Image: s.Image, Env: messages.BuildInput{Packages: s.BuiltPackages, SystemPackages: s.SystemPackages, Name: s.Spec.Name},
		Timeout: s.Spec.Options.Timeout, Resources: s.Spec.Options.Resources,
	})
}

// agentToolDone takes a tool call's result: the workspace it left, and the
// result for the model. A command that runs pytest becomes the test stage.
func (m *Stepper) agentToolDone(p Pending, out messages.AgentToolOutput) {
	a := m.s.Agent
	if a == nil || a.Call == nil {
		return
	}
	if out.Workspace != nil {
		a.Workspace = out.Workspace
	}
	a.Files = out.Files
	if out.Verdict == messages.VerdictTests {
		m.agentRunTests()
		return
	}
	m.agentAnswer(out.Verdict, out.Result, firstLine(out.Result), m.since(p))
}

// agentAnswer records the running call's verdict, gives the model its
// result and moves on to the next call.
func (m *Stepper) agentAnswer(verdict, result, outcome string, durationMS int64) {
	a := m.s.Agent
	call := *a.Call
	a.Call = nil
	if a.CallsByTool == nil {
		a.CallsByTool = map[string]int{}
	}
	a.CallsByTool[call.Name]++
	if verdict == messages.VerdictDenied {
		a.Denied++
	}
	rec := messages.ToolCallRecord{Turn: a.Turns, Tool: call.Name, Arguments: argumentSummary(call),
		Verdict: verdict, DurationMS: durationMS, Outcome: trim.Middle(outcome, 200)}
	a.Trace = append(a.Trace, rec)
	if len(a.Trace) > maxAgentTrace {
		a.Dropped += len(a.Trace) - maxAgentTrace
		a.Trace = append([]messages.ToolCallRecord(nil), a.Trace[len(a.Trace)-maxAgentTrace:]...)
	}
	result = trim.Middle(result, agentResultBudget)
	a.Messages = append(a.Messages, messages.AgentMessage{Role: "tool", Content: result, ToolCallID: call.ID})
	trimAgentMessages(a)
	m.appendHistory([]messages.ChatMessage{{Role: "tool", Content: call.Name + " " + rec.Arguments + " -> " + verdict + ": " + trim.Middle(result, 2000), Stage: messages.StageAgentTool}})
	// Seq numbers the call within the job (events are deduplicated by type and seq).
	m.emit(messages.Event{Type: messages.EventToolCall, Stage: messages.StageAgentTool, Seq: a.Dropped + len(a.Trace), Iteration: m.s.Iteration, Tool: &rec,
		Message: fmt.Sprintf("%s %s: %s", call.Name, rec.Arguments, verdict)})
	m.agentNextCall()
}

// agentRunTests runs the workspace's tests as the job's test stage: the
// image for packages.txt and system_packages.txt first (env), as the
// pipeline builds it.
func (m *Stepper) agentRunTests() {
	s, a := m.s, m.s.Agent
	code, tests := a.Files[protocol.SolutionFile], a.Files[protocol.TestFile]
	if code == "" || tests == "" {
		missing := protocol.SolutionFile
		if code != "" {
			missing = protocol.TestFile
		}
		if a.Ended {
			m.Finish(messages.StatusFailed, "the agent ended without writing "+missing)
			return
		}
		m.agentAnswer(messages.VerdictError, "cannot run the tests: "+missing+" is not in the workspace; write it first", "no "+missing, 0)
		return
	}
	s.Solution = &messages.Solution{Language: "python", Code: code,
		Packages: listFile(a.Files["packages.txt"]), SystemPackages: listFile(a.Files["system_packages.txt"])}
	s.Tests = &messages.Tests{Code: tests}
	// The solution, tests and image are this run's now: a pass of an
	// earlier workspace no longer vouches for them (agentEnd), even when
	// the model goes back to that workspace's files.
	a.PassedKey = ""
	m.Enter(PhaseBuilding)
	m.agentAdvance()
}

// agentAdvance is advance for the agent: the environment, then the test run.
func (m *Stepper) agentAdvance() {
	s := m.s
	if s.Done() || s.Phase != PhaseBuilding && s.Phase != PhasePackages {
		return // a late build only registered its image
	}
	img, built, ready := m.env(0, false)
	if s.Done() || !ready {
		return
	}
	s.Image, s.BuiltPackages = img, built.Packages
	if s.Agent.Ended && s.Spec.Options.SkipTests {
		m.Finish(messages.StatusSucceeded, "")
		return
	}
	m.runTests()
}

// agentTested takes a test run: the tool's result, or the final check.
func (m *Stepper) agentTested(p Pending, out messages.TestReport) {
	s, a := m.s, m.s.Agent
	rep := trimReport(out)
	s.LastReport = &rep
	a.TestRuns++
	if rep.OK() {
		a.PassedKey = m.agentKey()
	}
	if a.Ended {
		if rep.OK() {
			m.accept()
			return
		}
		m.Finish(messages.StatusFailed, "the agent ended with failing tests: "+reportSummary(rep))
		return
	}
	m.Enter(PhaseAgent)
	verdict := messages.VerdictOK
	if !rep.OK() {
		verdict = messages.VerdictError
	}
	result := testResult(rep)
	if a.Call != nil && a.Call.Name == messages.ToolBash {
		// The command was not run: a model that chained setup before
		// pytest must not think its setup ran.
		result = "this bash command ran pytest, so the job's test stage ran instead and nothing else of the command ran " +
			"(run other commands on their own)\n" + result
	}
	m.agentAnswer(verdict, result, reportSummary(rep), m.since(p))
}

// since is how long ago, on the coordinator's clock, p was dispatched.
func (m *Stepper) since(p Pending) int64 {
	return max(0, m.now.Time.Sub(p.DispatchedAt).Milliseconds())
}

// testResult is a test run as the model reads it.
func testResult(rep messages.TestReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pytest ran in the sandbox: %s (exit code %d)\n", reportSummary(rep), rep.ExitCode)
	for _, c := range rep.Cases {
		if protocol.Failing(c) {
			fmt.Fprintf(&b, "%s %s: %s\n%s\n", c.Outcome, protocol.TestID(c), c.Message, trim.Middle(c.Details, 1500))
		}
	}
	b.WriteString(trim.Middle(rep.Output, 3000))
	return b.String()
}

// agentKey names what a test run checked: the code, the tests and the packages.
func (m *Stepper) agentKey() string {
	a := m.s.Agent
	return shortHash(a.Files[protocol.SolutionFile], a.Files[protocol.TestFile], a.Files["packages.txt"], a.Files["system_packages.txt"])
}

// agentEnd: the model is done. Tests that already passed on this very
// workspace are not run again.
func (m *Stepper) agentEnd() {
	a := m.s.Agent
	a.Ended = true
	if a.Files[protocol.SolutionFile] == "" {
		m.Finish(messages.StatusFailed, "the agent ended without writing "+protocol.SolutionFile)
		return
	}
	if m.s.Spec.Options.SkipTests {
		// Contract 1: skip_tests produces the code, its packages and its
		// image (a later run needs them): the environment for packages.txt
		// is built, the tests are not run.
		m.Note("skip_tests: the agent's tests were not run at the end")
		m.s.Solution = &messages.Solution{Language: "python", Code: a.Files[protocol.SolutionFile],
			Packages: listFile(a.Files["packages.txt"]), SystemPackages: listFile(a.Files["system_packages.txt"])}
		m.Enter(PhaseBuilding)
		m.agentAdvance()
		return
	}
	if a.PassedKey != "" && a.PassedKey == m.agentKey() {
		m.accept()
		return
	}
	m.agentRunTests()
}

// agentAccepted takes the acceptance run. A failure goes back to the model
// as a message, while turns remain.
func (m *Stepper) agentAccepted(_ Pending, out messages.AcceptanceOutput) {
	s, a := m.s, m.s.Agent
	if m.keepRun(out) { // pipeline.go
		return
	}
	out = *s.Acceptance
	problems := strings.Join(out.Problems, "; ")
	m.Note("acceptance run on the samples failed: " + problems)
	a.Ended = false
	a.Messages = append(a.Messages, messages.AgentMessage{Role: "user", Content: trim.Middle(
		"The tests pass, but the acceptance run of solution.py on the samples failed: "+problems+
			"\nIts output:\n"+out.Output+"\nThe script must read the samples in "+protocol.InputsDir+
			" and write every declared output to "+protocol.OutputPath("<name>")+". Fix it, run the tests, and reply without tool calls when done.",
		agentResultBudget)})
	trimAgentMessages(a)
	m.agentTurn()
}

// trimAgentMessages keeps the conversation within agentConversationBudget:
// the oldest tool results, then the oldest tool-call arguments, are
// replaced by a short note (the same way every time, so a stored turn's
// content key repeats on a resumed job). The latest message stays whole.
func trimAgentMessages(a *AgentState) {
	total := 0
	for _, msg := range a.Messages {
		total += len(msg.Content)
		for _, c := range msg.ToolCalls {
			total += len(c.Arguments)
		}
	}
	old := a.Messages[:max(0, len(a.Messages)-1)] // the latest message stays whole
	for i := 0; i < len(old) && total > agentConversationBudget; i++ {
		if msg := &old[i]; msg.Role == "tool" {
			total -= replaceText(&msg.Content, agentDroppedResult)
		}
	}
	for i := 0; i < len(old) && total > agentConversationBudget; i++ {
		for j := range old[i].ToolCalls {
			total -= replaceText(&old[i].ToolCalls[j].Arguments, agentDroppedArguments)
		}
	}
}

// replaceText replaces *text by note, unless it is note already, and
// returns how many bytes that saved.
func replaceText(text *string, note string) int {
	if *text == note {
		return 0
	}
	saved := len(*text) - len(note)
	*text = note
	return saved
}

// argumentSummary is a tool call's arguments in a few words: the path (and
// size) of a file tool, the command of bash.
func argumentSummary(c messages.AgentToolCall) string {
	var args struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		Command string `json:"command"`
	}
	if json.Unmarshal([]byte(c.Arguments), &args) != nil {
		return trim.Middle(c.Arguments, agentArgumentsBudget)
	}
	var s string
	switch c.Name {
	case messages.ToolBash:
		s = args.Command
	case messages.ToolWriteFile:
		s = fmt.Sprintf("%s (%d bytes)", args.Path, len(args.Content))
	default:
		s = args.Path
	}
	return trim.Middle(strings.Join(strings.Fields(s), " "), agentArgumentsBudget)
}

// listFile reads packages.txt or system_packages.txt: one name a line,
// comments and blank lines left out.
func listFile(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// agentReport is the agent's part of the result object.
func agentReport(a *AgentState) *messages.AgentReport {
	r := &messages.AgentReport{Turns: a.Turns, Trace: a.Trace, CallsByTool: map[string]int{}, TestRuns: a.TestRuns,
		Denied: a.Denied, Workspace: a.Workspace, Dropped: a.Dropped}
	if r.Trace == nil {
		r.Trace = []messages.ToolCallRecord{}
	}
	names := make([]string, 0, len(a.CallsByTool))
	for n := range a.CallsByTool {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r.CallsByTool[n] = a.CallsByTool[n]
	}
	return r
}

// agentResult fills the result object from the agent's workspace (for
// other jobs, which have none, it does nothing).
func agentResult(s State, r *messages.Result) {
	a := s.Agent
	if a == nil {
		return
	}
	r.Agent = agentReport(a)
	if code := a.Files[protocol.SolutionFile]; code != "" {
		r.Solution = &messages.Solution{Language: "python", Code: code,
			Packages: nonNil(listFile(a.Files["packages.txt"])), SystemPackages: nonNil(listFile(a.Files["system_packages.txt"]))}
	}
	if t := a.Files[protocol.TestFile]; t != "" {
		r.Tests = t
	}
}
