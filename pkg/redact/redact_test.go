package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/redact"
)

func TestURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"redis://user:pw@host:6379/0": "redis://user:xxxxx@host:6379/0",
		"rediss://:pw@host/0":         "rediss://:xxxxx@host/0",
		"redis://host:6379/0":         "redis://host:6379/0",
		"redis://%zz:pw@host:6379/0":  "<unparsable url>",
		"https://token@host/simple":   "https://xxxxx@host/simple",
		"":                            "",
	} {
		if got := redact.URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestErrorHidesEverySecret: whatever form an error shows a URL's
// credentials in (the URL, its user info, a quoted unparsable URL, the
// password decoded), none of them survives, and the error still unwraps.
func TestErrorHidesEverySecret(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"nats://user:s3cr%40t@host:4222",
		"nats://a:one@h1:4222, nats://b:two@h2:4222",
		"nats://tok\"en@host:4222",
		"redis://%zz:hunter2@host:6379/0",
		"tls://only-a-token@host",
	} {
		_, perr := url.Parse(strings.Split(u, ",")[0])
		cause := errors.New("refused")
		err := redact.Error(fmt.Errorf("connect %s: %w (%q) %v", u, cause, u, perr), redact.Secrets(u)...)
		for _, secret := range []string{"s3cr", "s3cr@t", "one", "two", "tok", "hunter2", "only-a-token"} {
			if strings.Contains(u, secret) && strings.Contains(err.Error(), secret) {
				t.Errorf("%s: %q leaks %q", u, err, secret)
			}
		}
		if !errors.Is(err, cause) {
			t.Errorf("%s: %v does not unwrap to its cause", u, err)
		}
	}
	plain := errors.New("no secrets here")
	if redact.Error(plain, redact.Secrets("nats://host:4222")...) != plain || redact.Error(nil, "x") != nil {
		t.Error("an error without secrets is not returned as it is")
	}
}
