package docker

import "context"

// Hooks for the external tests.

// PoolReady counts the pooled sandboxes of image.
func PoolReady(b *Backend, image string) int { return b.pool.ready(image) }

// Reap runs the reaper once.
func Reap(ctx context.Context, b *Backend) int { return b.reap(ctx) }

// StubScript is the init stub of every sandbox container.
const StubScript = stubScript

// Removing counts container removals in flight.
func Removing(b *Backend) int64 { return b.removing.Load() }

// EngineIsLocal tells whether an engine address is on this machine.
var EngineIsLocal = engineIsLocal
