package cache

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/autocoder/autocoder/pkg/redact"
	"github.com/redis/go-redis/v9"
)

// applyTLS adds o's CA and client certificate to a rediss:// connection.
func (o RedisOptions) applyTLS(opts *redis.Options) error {
	if o.CAFile == "" && o.CertFile == "" && o.KeyFile == "" {
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

// RedactURL is u fit for logs, errors and --help (redact.URL).
func RedactURL(u string) string { return redact.URL(u) }
