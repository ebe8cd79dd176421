// Package testredis starts a real redis-server process for a test, on a free
// loopback port, with persistence off, and stops it when the test ends. Tests
// that need Redis fail (they never skip) when redis-server is not installed:
// scripts/setup.sh installs it.
//
//	func TestSomething(t *testing.T) {
//		url := testredis.Start(t) // "redis://127.0.0.1:<port>/0"
//		c, err := cache.OpenRedis(ctx, url)
//		...
//	}
//
// StartServer returns a handle for tests about outages: Stop takes the server
// away, Restart brings it back on the same port, Pause freezes it.
// StartServerWith makes a server that checks who connects: a password, ACL
// users, TLS with a CA made for the test.
//
//	s := testredis.StartServerWith(t, testredis.Options{TLS: true, Users: []testredis.User{{Name: "app", Password: "pw"}}})
//	c, err := cache.OpenRedisWith(ctx, s.UserURL("app", "pw"), cache.RedisOptions{CAFile: s.TLS().CA})
package testredis
