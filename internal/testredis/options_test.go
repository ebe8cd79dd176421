package testredis

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// ping opens url (with the server's TLS files for rediss) and PINGs.
func ping(t *testing.T, s *Server, url string) error {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("%q: %v", url, err)
	}
	if s.TLS() != nil {
		if opts.TLSConfig, err = s.TLS().Config(); err != nil {
			t.Fatal(err)
		}
	}
	c := redis.NewClient(opts)
	defer c.Close()
	return c.Ping(t.Context()).Err()
}

func TestOptions(t *testing.T) {
	t.Parallel()
	users := []User{{Name: "alice", Password: "alice-pw"}, {Name: "bob", Password: "bob-pw"}}
	tests := []struct {
		name       string
		opts       Options
		good       [2]string // user, password that get in
		bad        [2]string // ones that do not
		wantScheme string
	}{
		{"requirepass", Options{Password: "pw"}, [2]string{"", "pw"}, [2]string{"", "nope"}, "redis://"},
		{"ACL users", Options{Users: users}, [2]string{"bob", "bob-pw"}, [2]string{"alice", "bob-pw"}, "redis://"},
		{"TLS and ACL", Options{TLS: true, Users: users}, [2]string{"alice", "alice-pw"}, [2]string{"", ""}, "rediss://"},
		{"TLS alone", Options{TLS: true}, [2]string{"", ""}, [2]string{"nobody", "pw"}, "rediss://"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := StartServerWith(t, tc.opts)
			if !strings.HasPrefix(s.URL(), tc.wantScheme) || strings.Contains(s.URL(), "@") {
				t.Errorf("URL %q: want %s and no credentials", s.URL(), tc.wantScheme)
			}
			if err := ping(t, s, s.UserURL(tc.good[0], tc.good[1])); err != nil {
				t.Errorf("as %q: %v", tc.good[0], err)
			}
			if err := ping(t, s, s.UserURL(tc.bad[0], tc.bad[1])); err == nil {
				t.Errorf("as %q with a wrong password: got in", tc.bad[0])
			}
			s.Restart() // the readiness probe logs in again
			if err := ping(t, s, s.UserURL(tc.good[0], tc.good[1])); err != nil {
				t.Errorf("after Restart: %v", err)
			}
		})
	}
}

// TestTLSOnly: a TLS server has no plain-text port.
func TestTLSOnly(t *testing.T) {
	t.Parallel()
	s := StartServerWith(t, Options{TLS: true})
	if err := ping(t, &Server{}, "redis://"+s.Addr()+"/0"); err == nil {
		t.Error("a plain connection to a TLS server answered")
	}
}
