package evaluate

import (
	"encoding/json"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestJobOptionsFitTheBackend: the jobs' options validate for the
// pipeline and for the agent backend, which refuses max_iterations (it
// is bounded by agent_max_turns): the default is left out there.
func TestJobOptionsFitTheBackend(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]string{nil, {"backend=agent"}, {"backend=agent", "agent_max_turns=20"}} {
		o, err := Config{Options: opts}.jobOptions()
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(map[string]any{"prompt": "p", "outputs": map[string]string{"a": "int"}, "options": o})
		if _, err := messages.DecodeJobSpecJSON(raw); err != nil {
			t.Errorf("options %v: %v", o, err)
		}
	}
}
