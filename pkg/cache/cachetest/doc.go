// Package cachetest is the conformance suite for cache.Cache: every
// implementation runs the same tests, so the Redis cache and the embedded one
// cannot drift apart in what they promise.
//
//	func TestRedis(t *testing.T) {
//		url := testredis.Start(t)
//		cachetest.Run(t, func(t *testing.T) cache.Cache {
//			c, err := cache.OpenRedis(t.Context(), url)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return c
//		})
//	}
package cachetest
