package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Every role waits for NATS to be ready instead of exiting: at a
// cluster's start the servers answer before JetStream has a leader, so
// requests time out or are refused as "temporarily unavailable", and a
// replicated store cannot be placed until enough servers have joined.
// Connect waits for a server to answer; ProvisionWhenReady and
// OpenWhenReady wait for JetStream. Each retries with backoff until ctx
// ends, logging why; what retrying cannot fix (a setting, a store whose
// storage type differs) is returned at once.

// ProvisionWhenReady is Provision, retried while JetStream is not ready.
func ProvisionWhenReady(ctx context.Context, js jetstream.JetStream, cfg ProvisionConfig, log *slog.Logger) (*Resources, error) {
	waits := &placeWaits{} // one wait for a store's placement across attempts
	return whenReady(ctx, log, "provision NATS", func(ctx context.Context) (*Resources, error) { return provision(ctx, js, cfg, waits) })
}

// OpenWhenReady is Open, retried while JetStream is not ready or the
// coordinator has not provisioned yet (workers may start first).
func OpenWhenReady(ctx context.Context, js jetstream.JetStream, log *slog.Logger) (*Resources, error) {
	return whenReady(ctx, log, "open what the coordinator provisioned", func(ctx context.Context) (*Resources, error) { return Open(ctx, js) })
}

// attemptTimeout bounds one attempt: a JetStream without a leader does
// not answer at all, and a request waits as long as its context lets it.
const attemptTimeout = 10 * time.Second

// whenReady calls try until it succeeds, fails for good, or ctx ends.
func whenReady(ctx context.Context, log *slog.Logger, what string, try func(context.Context) (*Resources, error)) (*Resources, error) {
	if log == nil {
		log = discardLogger()
	}
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		res, err := try(actx)
		cancel()
		if err == nil || !notReady(err) {
			return res, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%s)", err, waitHint(err))
		}
		log.Info("NATS not ready; waiting", "what", what, "attempt", attempt, "retry_in", wait, "reason", err, "hint", waitHint(err))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (%s)", err, waitHint(err))
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// notReady reports whether err may go away by waiting: no answer yet, a
// JetStream that is electing its leader or lacks the servers to place
// replicas on (at a cluster's start its leader may not have heard from
// every server yet: "no suitable peers for placement"), or stores the
// coordinator has not made yet. A cluster's refusal for want of storage
// is not waited on: it is explained (stores.go), unless it is of a fitted
// store the attempt ended before it was placed (errPlacementPending).
func notReady(err error) bool {
	if errors.Is(err, errPlacementPending) {
		return true
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.Code == 503 || api.ErrorCode == errInsufficientResources || (api.ErrorCode == errNoPeers && boundRefusal(err) == notRefused)
	}
	return errors.Is(err, ErrNotProvisioned) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionReconnecting)
}

// waitHint says what may be wrong when waiting does not help.
func waitHint(err error) string {
	switch {
	case errors.Is(err, errPlacementPending):
		return "a cluster places a store by the usage its servers last reported, and another coordinator's storage probe may hold a reservation; waited on for 12 s in all"
	case errors.Is(err, ErrNotProvisioned):
		return "is a coordinator running on this NATS?"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		// A request the server refuses gets no reply: the refusal is only
		// in the log (nats async error).
		return "no answer: is JetStream up, and does this NATS user have its role's permissions? see docs/security.md"
	}
	return "JetStream is not ready: a cluster still starting, or fewer servers than AUTOCODER_NATS_REPLICAS"
}
