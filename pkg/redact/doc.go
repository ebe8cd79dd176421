// Package redact cuts credentials out of what autocoder logs and returns:
// the one rule for URLs that carry a user name and password or a token
// (NATS URLs, Redis URLs, package index URLs), used by the bus and by the
// cache alike. Standard library only, so pkg/cache can use it.
//
//	log.Info("connecting", "url", redact.URL(u))                  // redis://user:xxxxx@host/0
//	return redact.Error(fmt.Errorf("dial %s: %w", u, err), redact.Secrets(u)...)
package redact
