// Package cache is autocoder's content-addressed result cache: the Cache
// interface, a Redis implementation (go-redis) for fleets and an embedded,
// file-backed implementation for one machine. Keys come from Key, so an
// identical LLM call, image build or test run is found again across crashes
// and jobs; all keys live under "autocoder:v1:".
//
//	c, err := cache.OpenRedis(ctx, "redis://localhost:6379/0") // or cache.OpenDir(stateDir + "/cache")
//	key := cache.Key("stage", []byte("plan"), []byte("v3"), inputJSON)
//	if v, err := c.Get(ctx, key); err == nil { ... }
//
// Redis credentials go in the URL (an ACL user, or requirepass), TLS files in
// RedisOptions; errors never show the password (RedactURL for logs):
//
//	c, err := cache.OpenRedisWith(ctx, "rediss://autocoder:pw@redis:6380/0", cache.RedisOptions{CAFile: caPEM})
//
// Locks are leases: they keep two workers from paying for the same result at
// once, and expire on their own if a holder dies. Release them with a context
// that outlives the work, or a cancelled job leaves its lock for the full ttl:
//
//	tok, err := c.TryLock(ctx, "build/"+key, 10*time.Minute)
//	if errors.Is(err, cache.ErrLockHeld) { /* someone else is computing it */ }
//	defer c.Unlock(context.WithoutCancel(ctx), "build/"+key, tok)
//
// Whoever can write to the store must not be able to choose a worker's
// results, so workers wrap it in Signed: every value carries an HMAC-SHA256
// over key and value with the id of its key, and an entry with a missing or
// wrong signature, or an unknown key id, is a miss (logged and counted):
//
//	keys, err := cache.ParseKeyring("k2:" + newSecret + ",k1:" + oldSecret) // k2 signs, both verify
//	c, err := cache.NewSigned(redisCache, keys, cache.SignedConfig{Logger: log})
//
// Both implementations pass the conformance suite in package cachetest, which
// also pins down what the interface leaves open: an empty value is a hit, a
// negative ttl (or a lock ttl that is not positive) is an error, a done context
// changes nothing, and every method fails after Close.
package cache
