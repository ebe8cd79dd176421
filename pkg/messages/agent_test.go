package messages

import (
	"strings"
	"testing"
)

func TestAgentOptions(t *testing.T) {
	t.Parallel()
	spec, err := DecodeJobSpecJSON([]byte(`{"prompt":"x","options":{"backend":"agent"}}`))
	if err != nil {
		t.Fatalf("backend agent refused: %v", err)
	}
	spec.Normalize("")
	if spec.Options.AgentMaxTurns != DefaultAgentMaxTurns {
		t.Errorf("agent_max_turns %d, want the default %d", spec.Options.AgentMaxTurns, DefaultAgentMaxTurns)
	}
	pipeline := JobSpec{Prompt: "x"}
	pipeline.Normalize("")
	if pipeline.Options.AgentMaxTurns != 0 {
		t.Errorf("a pipeline job got agent_max_turns %d", pipeline.Options.AgentMaxTurns)
	}
	for _, in := range []string{`{"prompt":"x","options":{"backend":"agent","agent_max_turns":501}}`,
		`{"prompt":"x","options":{"backend":"agent","agent_max_turns":-1}}`} {
		if _, err := DecodeJobSpecJSON([]byte(in)); err == nil || !strings.Contains(err.Error(), "options.agent_max_turns: must be between 1 and 500") {
			t.Errorf("%s: %v", in, err)
		}
	}
	if _, err := DecodeJobSpecJSON([]byte(`{"prompt":"x","options":{"backend":"magic"}}`)); err == nil || !strings.Contains(err.Error(), "want pipeline or agent") {
		t.Errorf("unknown backend: %v", err)
	}
	if DefaultStages().Pool(StageAgentTurn) != PoolLLM || DefaultStages().Pool(StageAgentTool) != PoolSandbox {
		t.Error("agent stages in the wrong pools")
	}
}
