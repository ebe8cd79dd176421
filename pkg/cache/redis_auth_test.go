package cache_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testredis"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/cache/cachetest"
)

const (
	aclUser     = "autocoder"
	aclPassword = "acl-s3cr3t-pw"
)

// TestRedisConformanceACL: the cache works as an ACL user without admin
// commands, on a server that lets no one else in.
func TestRedisConformanceACL(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServerWith(t, testredis.Options{Users: []testredis.User{
		{Name: aclUser, Password: aclPassword, Rules: []string{"~*", "+@all", "-@admin"}}}})
	url := srv.UserURL(aclUser, aclPassword)
	cachetest.Run(t, func(t *testing.T) cache.Cache { return openRedis(t, url) })
}

// TestRedisACLKeyPattern: a user limited to autocoder's keys, as the
// Redis section of docs/security.md advises, can do all autocoder does: every key
// cache.Key makes and every lock is under that pattern.
func TestRedisACLKeyPattern(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServerWith(t, testredis.Options{Users: []testredis.User{
		{Name: aclUser, Password: aclPassword, Rules: []string{"~autocoder:*", "+@all", "-@admin"}}}})
	c := openRedis(t, srv.UserURL(aclUser, aclPassword))
	ctx := t.Context()
	key := cache.Key("stage", []byte("plan"))
	if err := c.Set(ctx, key, []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, key); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	tok, err := c.TryLock(ctx, "build/numpy", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Unlock(ctx, "build/numpy", tok); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "other-app:key", []byte("v"), 0); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("Set outside the pattern: err = %v, want NOPERM", err)
	}
}

// TestRedisConformanceTLS: the cache works over TLS with the test's own CA
// and a client certificate, as an ACL user.
func TestRedisConformanceTLS(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServerWith(t, testredis.Options{TLS: true, Users: []testredis.User{{Name: aclUser, Password: aclPassword}}})
	url := srv.UserURL(aclUser, aclPassword)
	if !strings.HasPrefix(url, "rediss://") {
		t.Fatalf("TLS server URL %q", url)
	}
	files := srv.TLS()
	opts := cache.RedisOptions{CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey}
	cachetest.Run(t, func(t *testing.T) cache.Cache {
		c, err := cache.OpenRedisWith(t.Context(), url, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	})
	// The CA alone is enough where the server does not ask for a client
	// certificate (tls-auth-clients optional).
	c, err := cache.OpenRedisWith(t.Context(), url, cache.RedisOptions{CAFile: files.CA})
	if err != nil {
		t.Fatalf("CA only: %v", err)
	}
	_ = c.Close()
}

// TestRedisRefusals: a wrong password, a server cert from an unknown CA, a
// plain URL with TLS files: start-up fails with an error that says what is
// wrong and never shows the password.
func TestRedisRefusals(t *testing.T) {
	t.Parallel()
	acl := testredis.StartServerWith(t, testredis.Options{Users: []testredis.User{{Name: aclUser, Password: aclPassword}}})
	pass := testredis.StartServerWith(t, testredis.Options{Password: aclPassword})
	tlsSrv := testredis.StartServerWith(t, testredis.Options{TLS: true, Password: aclPassword})
	const wrong = "wr0ng-s3cr3t-pw"
	tests := []struct {
		name, url string
		opts      cache.RedisOptions
		wantErr   string
	}{
		{"wrong password", acl.UserURL(aclUser, wrong), cache.RedisOptions{}, "WRONGPASS"},
		{"no credentials", acl.URL(), cache.RedisOptions{}, "NOAUTH"},
		{"wrong requirepass", pass.UserURL("", wrong), cache.RedisOptions{}, "WRONGPASS"},
		{"unknown CA", tlsSrv.UserURL("", aclPassword), cache.RedisOptions{}, "certificate"},
		{"TLS files on redis://", pass.UserURL("", aclPassword), cache.RedisOptions{CAFile: tlsSrv.TLS().CA}, "not rediss://"},
		// A key without its certificate is not dropped in silence.
		{"TLS key alone", tlsSrv.UserURL("", aclPassword), cache.RedisOptions{KeyFile: tlsSrv.TLS().CA}, "client certificate"},
		{"unparsable URL", "redis://user:" + wrong + "@127.0.0.1:notaport/0", cache.RedisOptions{}, "redis url"},
	}
	for _, tc := range tests {
		c, err := cache.OpenRedisWith(t.Context(), tc.url, tc.opts)
		if err == nil {
			_ = c.Close()
			t.Errorf("%s: OpenRedis succeeded", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %q, want it to mention %q", tc.name, err, tc.wantErr)
		}
		for _, secret := range []string{wrong, aclPassword} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: err shows the password: %q", tc.name, err)
			}
		}
	}
	if _, err := cache.OpenRedisWith(t.Context(), "redis://%zz:"+wrong+"@host/0", cache.RedisOptions{}); err == nil || strings.Contains(err.Error(), wrong) {
		t.Errorf("a URL net/url cannot parse: err = %v, want an error without the password", err)
	}
	var unwrapped interface{ Unwrap() error }
	if _, err := cache.OpenRedis(t.Context(), acl.UserURL(aclUser, wrong)); !errors.As(err, &unwrapped) {
		t.Errorf("the wrong-password error does not wrap its cause: %v", err)
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"redis://user:pw@host:6379/0": "redis://user:xxxxx@host:6379/0",
		"rediss://:pw@host/0":         "rediss://:xxxxx@host/0",
		"redis://host:6379/0":         "redis://host:6379/0",
		"redis://%zz:pw@host:6379/0":  "<unparsable url>",
		"https://token@host/simple":   "https://xxxxx@host/simple",
		"":                            "",
	} {
		if got := cache.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
