package wiring

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/pkg/cache"
)

// readyKey is the cache key Ready reads: any answer, a miss included,
// says the cache is there.
var readyKey = cache.Key("ready", []byte("probe"))

// Ready reports whether this process can do its work (GET /readyz): its
// NATS connection is up, every stream, consumer, bucket and object store
// answers, and the cache its workers use (none in a coordinator alone)
// answers a read. The error says which part does not.
func (st *Stack) Ready(ctx context.Context) error {
	if st.Conn == nil || st.Conn.Status() != nats.CONNECTED {
		status := "none"
		if st.Conn != nil {
			status = st.Conn.Status().String()
		}
		return fmt.Errorf("nats: not connected (%s)", status)
	}
	if err := st.Resources.Check(ctx); err != nil {
		return fmt.Errorf("nats: %w", err)
	}
	if st.Cache != nil {
		if _, err := st.Cache.Get(ctx, readyKey); err != nil && !errors.Is(err, cache.ErrMiss) {
			return fmt.Errorf("cache: %w", err)
		}
	}
	return nil
}
