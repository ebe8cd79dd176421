package sandboxstages_test

import (
	"context"
	"testing"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandboxstages"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/internal/stagework/handlertest"
	"github.com/autocoder/autocoder/pkg/messages"
)

// ctxBackend is a fakeBackend that, like a real one, gives up on a done context.
type ctxBackend struct{ *fakeBackend }

func (b ctxBackend) Build(ctx context.Context, spec sandbox.EnvSpec) (sandbox.Env, error) {
	if err := ctx.Err(); err != nil {
		return sandbox.Env{}, err
	}
	return b.fakeBackend.Build(ctx, spec)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	mux := func(t *testing.T) *stagework.Mux {
		return newStages(t, sandboxstages.Config{Backend: ctxBackend{&fakeBackend{run: stdlibRun}}, Samples: &fetcher{}}).mux
	}
	stages := mux(t).Registered()
	if len(stages) != 6 {
		t.Fatalf("sandboxstages registers %v", stages)
	}
	handlertest.Run(t, mux, handlertest.Config{Stages: stages, Inputs: map[messages.Stage]any{
		messages.StageBuild: messages.BuildInput{Packages: []string{"numpy"}},
	}})
}
