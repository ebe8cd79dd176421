package messages

// The agent backend's stages (Contract 7 (docs/contracts.md)): each model
// turn is an LLM stage and each tool call a sandbox stage, content-keyed
// like every other stage, so a resumed job reuses the stored turns.
const (
	// StageAgentTurn is one model call with the conversation and the tools.
	StageAgentTurn Stage = "agent_turn"
	// StageAgentTool is one tool call over the job's workspace.
	StageAgentTool Stage = "agent_tool"
)

// The agent's tools (Contract 7).
const (
	ToolWriteFile = "write_file"
	ToolReadFile  = "read_file"
	ToolEditFile  = "edit_file"
	ToolListFiles = "list_files"
	ToolBash      = "bash"
	ToolRunTests  = "run_tests"
)

// AgentTools lists the tools in the order they are offered.
func AgentTools() []string {
	return []string{ToolWriteFile, ToolReadFile, ToolEditFile, ToolListFiles, ToolBash, ToolRunTests}
}

// Verdicts of a tool call.
const (
	VerdictOK     = "ok"     // the tool did what it was asked
	VerdictError  = "error"  // the tool could not (bad path, absent old text, ...): the result says why
	VerdictDenied = "denied" // the shell policy refused the command: the result is its reason
	// VerdictTests: the command runs pytest, so the job's test stage runs
	// it instead (the coordinator dispatches StageRunTests).
	VerdictTests = "tests"
)

// Defaults and bounds of the agent backend.
const (
	DefaultAgentMaxTurns = 50
	MaxAgentMaxTurns     = 500
)

// Workspace is the agent's per-job workspace: relative path -> the file's
// object reference ("sha256:<hex>", content in the outputs object store),
// a symbolic link ("symlink:<target>") or an empty directory ("dir:").
// Content-addressed, so a tool call's input (and so its cache key) names
// exactly the files it sees.
type Workspace map[string]string

// SymlinkPrefix marks a Workspace entry that is a symbolic link.
const SymlinkPrefix = "symlink:"

// DirEntry is a Workspace entry that is an empty directory: one a command
// made (mkdir out) for a later one to write into. A directory with files
// in it needs no entry of its own.
const DirEntry = "dir:"

// AgentToolCall is one call the model asked for; Arguments is its JSON text.
type AgentToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// AgentMessage is one message of the agent's conversation: an assistant
// message may carry tool calls, a tool message answers one (ToolCallID).
type AgentMessage struct {
	Role       string          `json:"role"` // user, assistant or tool
	Content    string          `json:"content"`
	ToolCalls  []AgentToolCall `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// AgentTurnInput is the input of StageAgentTurn: the task and the whole
// conversation so far (trimmed by the coordinator).
type AgentTurnInput struct {
	Task        TaskSpec       `json:"task"`
	DataContext string         `json:"data_context,omitempty"`
	Messages    []AgentMessage `json:"messages"`
	Turn        int            `json:"turn"` // 1-based
	MaxTurns    int            `json:"max_turns"`
}

// AgentTurnOutput is the output of StageAgentTurn: the assistant's message.
// No tool calls ends the run.
type AgentTurnOutput struct {
	Content      string          `json:"content,omitempty"`
	ToolCalls    []AgentToolCall `json:"tool_calls,omitempty"`
	FinishReason string          `json:"finish_reason,omitempty"`
}

// AgentToolInput is the input of StageAgentTool: one call over the
// workspace, with what a bash command runs in (the job's environment,
// samples under /var/inputs, and the job's limits).
type AgentToolInput struct {
	Call      AgentToolCall `json:"call"`
	Workspace Workspace     `json:"workspace"`
	Samples   []SampleRef   `json:"samples,omitempty"`
	Image     string        `json:"image,omitempty"`
	Env       BuildInput    `json:"env"`
	Timeout   Duration      `json:"timeout"`
	Resources Resources     `json:"resources"`
}

// AgentToolOutput is the output of StageAgentTool.
type AgentToolOutput struct {
	Verdict string `json:"verdict"` // VerdictOK, VerdictError, VerdictDenied or VerdictTests
	Result  string `json:"result"`  // what the model reads, trimmed
	// Workspace is the workspace after the call (unchanged for reads).
	Workspace Workspace `json:"workspace"`
	// Files holds the contents of the job's own files (solution.py,
	// test_solution.py, packages.txt, system_packages.txt) as they are
	// after the call; absent ones are left out.
	Files map[string]string `json:"files,omitempty"`
	// TimedOut: a bash command was killed at the job's timeout.
	TimedOut bool `json:"timed_out,omitempty"`
}

// Hermetic reports whether the output follows from the input alone: not
// when a command timed out, which depends on the machine's load as well.
// Workers do not cache such outputs.
func (o AgentToolOutput) Hermetic() bool { return !o.TimedOut }

// EventToolCall is the progress event of one agent tool call.
const EventToolCall EventType = "tool_call"

// ToolCallRecord is one tool call on the result object and in its
// progress event: the tool, a short summary of its arguments, its verdict
// and how long it took.
type ToolCallRecord struct {
	Turn       int    `json:"turn"`
	Tool       string `json:"tool"`
	Arguments  string `json:"arguments"` // a short summary
	Verdict    string `json:"verdict"`
	DurationMS int64  `json:"duration_ms"`
	Outcome    string `json:"outcome,omitempty"` // a test run's counts, an error's first line
}

// AgentReport is the agent backend's part of the result object: the
// tool-call trace and a summary.
type AgentReport struct {
	Turns       int              `json:"turns"`
	Trace       []ToolCallRecord `json:"trace"`
	CallsByTool map[string]int   `json:"calls_by_tool"`
	TestRuns    int              `json:"test_runs"`
	Denied      int              `json:"denied"`
	// Workspace is the final workspace (path -> object reference).
	Workspace Workspace `json:"workspace,omitempty"`
	// Dropped counts trace entries left out to keep the result small.
	Dropped int `json:"dropped,omitempty"`
}

// validateAgent refuses what the agent backend would otherwise ignore: the
// agent checks its work with the tests it writes and runs (run_tests), its
// turns do not carry documentation, and agent_max_turns, not
// max_iterations, bounds it. The pipeline ignores agent_max_turns.
func (s *JobSpec) validateAgent() error {
	if s.Options.Backend != BackendAgent {
		if s.Options.AgentMaxTurns != 0 {
			return &FieldError{"options.agent_max_turns", "applies only to options.backend: agent (the pipeline is bounded by options.max_iterations)"}
		}
		return nil
	}
	if s.Options.MaxIterations != 0 {
		return &FieldError{"options.max_iterations", "does not apply to options.backend: agent (its turns are bounded by options.agent_max_turns)"}
	}
	if s.Options.ValidatesByRun() {
		return &FieldError{"options.validate", "run cannot be combined with options.backend: agent (the agent checks its script with the tests it writes)"}
	}
	if s.Options.Candidates > 1 {
		return &FieldError{"options.candidates", "must be 1 with options.backend: agent (one agent works on the job)"}
	}
	if len(s.Context) > 0 {
		return &FieldError{"context", "is not given to the agent backend's model turns; use options.backend: pipeline, or put what matters in the prompt"}
	}
	return nil
}
