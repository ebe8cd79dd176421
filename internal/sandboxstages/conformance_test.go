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
	var stages []messages.Stage
	for _, s := range messages.DefaultStages().Stages() {
		if messages.DefaultStages().Pool(s) == messages.PoolSandbox {
			stages = append(stages, s)
		}
	}
	handlertest.Run(t, func(*testing.T) stagework.Handler {
		return sandboxstages.New(ctxBackend{&fakeBackend{run: stdlibRun}}, &fetcher{})
	}, handlertest.Config{Stages: stages, Inputs: map[messages.Stage]any{
		messages.StageBuild: messages.BuildInput{Packages: []string{"numpy"}},
	}})
}
