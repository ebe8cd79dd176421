package messages

import "time"

// BucketPools holds each pool's PoolPause, keyed by the pool's name. The
// coordinator provisions it; the pool's workers watch their entry.
const BucketPools = "autocoder_pools"

// PoolPause is a pool's pause switch, in the pools bucket
// (autocoder_pools) under the pool's name. A paused pool's workers fetch
// no new stage command; those they run finish. Stage commands wait in the
// queue (and their stage deadlines run) until the pool is resumed.
type PoolPause struct {
	V      int       `json:"v"`
	Pool   string    `json:"pool"`
	Paused bool      `json:"paused"`
	By     string    `json:"by,omitempty"` // who switched it, as CancelJob.By
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// Bounds of PoolPause's free text.
const (
	MaxPauseByBytes     = MaxCancelByBytes
	MaxPauseReasonBytes = MaxCancelReasonBytes
)
