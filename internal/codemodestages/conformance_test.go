package codemodestages_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/codemodestages"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/internal/stagework/handlertest"
	"github.com/autocoder/autocoder/pkg/messages"
)

func TestExecConformance(t *testing.T) {
	t.Parallel()
	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	handlertest.Run(t, func(t *testing.T) *stagework.Mux { return mux(t, codemodestages.Config{Conn: nc, Python: python(t)}) }, handlertest.Config{
		Stages: []messages.Stage{messages.StageCodeModeTools, messages.StageCodeModeExec},
		Inputs: map[messages.Stage]any{
			messages.StageCodeModeTools: messages.CodeModeToolsInput{Tools: []string{}},
			messages.StageCodeModeExec:  messages.CodeModeExecInput{Code: "x = [i * i for i in range(10)]\nsum(x)", Tools: []string{}, Scope: "job"},
		},
	})
}

func TestTurnConformance(t *testing.T) {
	t.Parallel()
	_, model := programModel(t)
	handlertest.Run(t, func(t *testing.T) *stagework.Mux { return mux(t, codemodestages.Config{Model: model}) }, handlertest.Config{
		Stages: []messages.Stage{messages.StageCodeModeTurn},
		Inputs: map[messages.Stage]any{messages.StageCodeModeTurn: messages.CodeModeTurnInput{Message: "one", MultiTurn: true}},
	})
}

// programModel is the real OpenAI client over HTTP to a fake server that
// answers every chat with a one-line program.
func programModel(t *testing.T) (*fakellm.Server, *llm.OpenAI) {
	t.Helper()
	fake := fakellm.New()
	t.Cleanup(fake.Close)
	fake.On(fakellm.NoSchema, fakellm.Text("```python\n1\n```"))
	model, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: fake.URL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return fake, model
}

// mux has the code-mode stages of handlers made with cfg.
func mux(t testing.TB, cfg codemodestages.Config) *stagework.Mux {
	t.Helper()
	h, err := codemodestages.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := stagework.NewMux(messages.DefaultStages())
	h.Register(m)
	return m
}
