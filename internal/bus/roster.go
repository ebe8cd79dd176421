package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// The roster: every stage worker process beats its capacity (its slots
// and what it runs now) into BucketWorkers, whose entries expire when the
// beats stop (ProvisionConfig.WorkerBeatTTL). The sum of a pool's slots
// is its capacity: the queues view and the capacity gauge read it.

// Beat is what Advertise puts, each time it beats.
type Beat func() messages.WorkerBeat

// NewInstance names one worker process in the roster: random, so two
// processes with the same AUTOCODER_WORKER_NAME keep two entries.
func NewInstance() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Advertise puts beat() under pool and instance in kv (Resources.Workers)
// at once and then every third of the bucket's TTL until ctx ends, then
// deletes the entry: a stopped worker leaves the roster at once, a
// crashed one when its entry expires. A failed beat is logged and tried
// again at the next.
func Advertise(ctx context.Context, kv jetstream.KeyValue, pool messages.Pool, instance string, beat Beat, log *slog.Logger) {
	if log == nil {
		log = discardLogger()
	}
	every := DefaultWorkerBeatTTL / 3
	if st, err := kv.Status(ctx); err == nil && st.TTL() > 0 {
		every = st.TTL() / 3
	}
	key := WorkerKey(pool, instance)
	put := func() {
		b, err := json.Marshal(beat())
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, every)
			_, err = kv.Put(pctx, key, b)
			cancel()
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("worker beat failed", "pool", pool, "key", key, "error", err)
		}
	}
	put()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := kv.Delete(dctx, key); err != nil {
				log.Debug("leave the roster", "key", key, "error", err) // the entry expires anyway
			}
			return
		case <-t.C:
			put()
		}
	}
}

// Roster reads every live worker's last beat from kv, by pool and then
// worker name.
func Roster(ctx context.Context, kv jetstream.KeyValue) ([]messages.WorkerBeat, error) {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("bus: read the workers: %w", err)
	}
	defer w.Stop()
	var out []messages.WorkerBeat
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("bus: read the workers: the watch ended early")
			}
			if e == nil { // every current value has been delivered
				sort.Slice(out, func(i, j int) bool {
					if out[i].Pool != out[j].Pool {
						return out[i].Pool < out[j].Pool
					}
					return out[i].Worker+out[i].Instance < out[j].Worker+out[j].Instance
				})
				return out, nil
			}
			// The pool is the key's, which permissions tie to the
			// worker's credentials, not what the body says.
			pool, _, _ := strings.Cut(e.Key(), ".")
			var b messages.WorkerBeat
			if json.Unmarshal(e.Value(), &b) == nil && ValidPool(messages.Pool(pool)) {
				b.Pool = pool
				out = append(out, b)
			}
		}
	}
}
