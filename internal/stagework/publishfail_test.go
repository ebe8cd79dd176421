package stagework_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// tooLargePublisher refuses any result with an output, as the bus does a
// body over its claim-check limit.
type tooLargePublisher struct{ publisher }

func (p *tooLargePublisher) PublishJSON(ctx context.Context, subject string, v any, msgID string) error {
	if r, ok := v.(*messages.StageResult); ok && len(r.Output) > 0 {
		return fmt.Errorf("bus: publish to %s: %w: 70 MiB, over the 64 MiB limit", subject, bus.ErrPayloadTooLarge)
	}
	return p.publisher.PublishJSON(ctx, subject, v, msgID)
}

// TestUnpublishableResultBecomesItsFailure: a result the bus cannot carry
// is not retried into silence: its failure, with the reason, is published
// at once, on the first delivery.
func TestUnpublishableResultBecomesItsFailure(t *testing.T) {
	t.Parallel()
	h, p := &handler{version: "v1"}, &tooLargePublisher{}
	r := newExecutor(t, h, p, newMemCache(), nil)
	if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1)); err != nil {
		t.Fatalf("Handle = %v, want the failure published", err)
	}
	res := p.results()
	if len(res) != 1 {
		t.Fatalf("%d results, want 1", len(res))
	}
	got := res[0].Result
	if got.ErrorKind != messages.ErrorPermanent || !strings.Contains(got.Error, "over the 64 MiB limit") || len(got.Output) != 0 {
		t.Errorf("result %+v: want a permanent failure naming the limit, without the output", got)
	}
}
