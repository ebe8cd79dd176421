package prompts

import (
	_ "embed"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

//go:embed agent.txt
var agentSystem string

// AgentVersion identifies the agent's prompt texts: it is part of the
// agent_turn stage's cache key. Bump it when Agent's output can change.
const AgentVersion = "agent-2"

// Agent builds the start of the agent backend's conversation: the rules and
// tools, then the task with its script protocol and the sample data. The
// turns (messages.AgentTurnInput.Messages) follow it.
func Agent(in messages.AgentTurnInput) []messages.ChatMessage {
	var b strings.Builder
	renderTask(&b, in.Task)
	renderDataContext(&b, in.DataContext)
	b.WriteString("\n")
	b.WriteString(scriptProtocol(in.Task))
	b.WriteString("\n")
	b.WriteString(testProtocol(in.Task))
	b.WriteString("\nStart now: write solution.py and test_solution.py with the tools, then run the tests.\n")
	return chat(strings.TrimSpace(agentSystem), b.String())
}
