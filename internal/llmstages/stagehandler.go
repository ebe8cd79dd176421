package llmstages

import (
	"context"
	"errors"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// StageHandler adapts Handlers to the stage executor (stagework.Handler):
// it maps the handlers' errors to the executor's failure markers, with the
// model's errors classified by llm.Classify.
type StageHandler struct{ h *Handlers }

var _ stagework.Handler = StageHandler{}

// NewStageHandler returns h as a stagework.Handler.
func NewStageHandler(h *Handlers) StageHandler { return StageHandler{h: h} }

// Version implements stagework.Handler. The stages that put a job's
// documentation into their prompt also name how it is chunked and
// retrieved (contextVersion), which shapes their output too.
func (s StageHandler) Version(stage messages.Stage) string {
	return StageVersion(stage) + s.h.contextVersion(stage)
}

// Handle implements stagework.Handler. A failed stage still reports the
// usage of the model calls it paid for.
func (s StageHandler) Handle(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
	out, err := s.h.Handle(ctx, cmd)
	if err != nil {
		return stagework.Output{Usage: out.Usage}, failure(err)
	}
	return stagework.Output{Value: out.Value, Usage: out.Usage, Messages: out.Messages}, nil
}

// failure marks err for the executor's policy: bad input, a prompt over
// budget and the model's permanent errors fail the stage; a wait the
// endpoint asked for is kept, so the command comes back then instead of
// holding a slot.
func failure(err error) error {
	if errors.Is(err, ErrBadInput) || errors.Is(err, ErrPromptTooLarge) {
		return stagework.Permanent(err)
	}
	switch v := llm.Classify(err); {
	case v.Permanent:
		return stagework.Permanent(err)
	case v.RetryAfter > 0:
		return stagework.RetryAfter(err, v.RetryAfter)
	}
	return err
}
