package redact

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Mask is what a secret becomes.
const Mask = "xxxxx"

// URL is u fit for logs, errors and --help: a password becomes Mask, and
// so does a user name standing alone (a token). A string that does not
// parse is replaced whole, since where its secret is cannot be told.
func URL(u string) string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil {
		return "<unparsable url>"
	}
	if p.User != nil {
		if _, ok := p.User.Password(); !ok && p.User.Username() != "" {
			p.User = url.User(Mask)
		}
	}
	return p.Redacted()
}

// Secrets are the parts of the URLs that may hold credentials, parsable or
// not (a comma-separated list, as NATS takes, counts as several): each
// one's user info ("user:password", "token"), its password raw and
// decoded, and each of those as Go quotes it (%q, as net/url's errors
// print a URL that does not parse).
func Secrets(urls ...string) []string {
	var out []string
	for _, list := range urls {
		for _, u := range strings.Split(list, ",") {
			out = append(out, userinfoSecrets(strings.TrimSpace(u))...)
		}
	}
	for _, s := range out {
		if q := strconv.Quote(s); q[1:len(q)-1] != s {
			out = append(out, q[1:len(q)-1])
		}
	}
	return out
}

func userinfoSecrets(u string) []string {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		rest = u
	}
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	at := strings.LastIndex(rest, "@")
	if at <= 0 {
		return nil
	}
	userinfo := rest[:at]
	out := []string{userinfo}
	if _, pw, ok := strings.Cut(userinfo, ":"); ok && pw != "" {
		out = append(out, pw)
		if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
			out = append(out, dec)
		}
	}
	return out
}

// Text is s with every secret replaced by Mask, the longest first (a
// password inside a user info goes with it).
func Text(s string, secrets ...string) string {
	secrets = slices.SortedFunc(slices.Values(secrets), func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, Mask)
		}
	}
	return s
}

// Error is err with the secrets cut out of its text (Text); it still
// unwraps to err, for errors.Is. It is err itself when its text holds
// none, and nil for nil.
func Error(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := Text(err.Error(), secrets...)
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError keeps the wrapped error for errors.Is while its text
// hides the secrets.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
