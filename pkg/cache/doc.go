// Package cache is autocoder's content-addressed result cache: the Cache
// interface, a Redis implementation (go-redis) for fleets and an embedded,
// file-backed implementation for one machine. Keys come from Key, so an
// identical LLM call, image build or test run is found again across crashes
// and jobs; all keys live under "autocoder:v1:".
//
//	c, err := cache.OpenRedis(ctx, "redis://localhost:6379/0")
//	key := cache.Key("stage", "plan", "v3", inputJSON)
//	if v, err := c.Get(ctx, key); err == nil { ... }
package cache
