package cache

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// applyTLS adds o's CA and client certificate to a rediss:// connection.
func (o RedisOptions) applyTLS(opts *redis.Options) error {
	if o.CAFile == "" && o.CertFile == "" {
		return nil
	}
	if opts.TLSConfig == nil {
		return errors.New("cache: redis TLS files are set but the url is not rediss://")
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return fmt.Errorf("cache: redis TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("cache: redis TLS CA %s: no PEM certificate in it", o.CAFile)
		}
		opts.TLSConfig.RootCAs = pool
	}
	if o.CertFile != "" || o.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return fmt.Errorf("cache: redis TLS client certificate: %w", err)
		}
		opts.TLSConfig.Certificates = []tls.Certificate{cert}
	}
	opts.TLSConfig.MinVersion = tls.VersionTLS12
	return nil
}

// RedactURL is u fit for logs, errors and --help: a password becomes
// "xxxxx", and so does a user name standing alone (a token). A string that
// does not parse is replaced whole, since where its secret is cannot be told.
func RedactURL(u string) string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil {
		return "<unparsable url>"
	}
	if p.User != nil {
		if _, ok := p.User.Password(); !ok && p.User.Username() != "" {
			p.User = url.User("xxxxx")
		}
	}
	return p.Redacted()
}

// redactErr is err with every occurrence of the secrets (passwords, URLs
// holding one) cut out of its text: net/url quotes the URL it could not
// parse, and go-redis passes such errors on.
func redactErr(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
		}
	}
	if msg == err.Error() {
		return err
	}
	return redactedError{msg: msg, err: err}
}

// urlSecrets are the parts of a URL, parsable or not, that may hold its
// password: the whole, the user info, the password raw and decoded.
func urlSecrets(u string) []string {
	out := []string{u}
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		return out
	}
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return out
	}
	userinfo := rest[:at]
	out = append(out, userinfo)
	if _, pw, ok := strings.Cut(userinfo, ":"); ok && pw != "" {
		out = append(out, pw)
		if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
			out = append(out, dec)
		}
	}
	return out
}

// redactedError keeps the wrapped error for errors.Is while its text hides
// a secret.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }
