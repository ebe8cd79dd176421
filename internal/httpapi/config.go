package httpapi

import (
	"errors"
	"log/slog"
	"net"
	"os"

	"github.com/autocoder/autocoder/internal/config"
)

// ErrNoTokens is FromConfig's refusal to serve the API to anyone who
// reaches it by default. Its text is the whole fix, on one line.
var ErrNoTokens = errors.New(`httpapi: no HTTP API tokens: set AUTOCODER_HTTP_TOKENS_FILE (lines "read <token>" or "<name>:read:<token>"), or AUTOCODER_HTTP_AUTH=none to serve the API without authentication`)

// FromConfig is the coordinator's access policy from cfg for an API that
// listens on listen: the tokens of AUTOCODER_HTTP_TOKENS_FILE, required
// unless AUTOCODER_HTTP_AUTH=none, which is logged as a warning.
func FromConfig(cfg config.Config, listen string, log *slog.Logger) (Options, error) {
	o := Options{AllowedHosts: allowedHosts(cfg, listen), Logger: log}
	switch {
	case cfg.HTTPAuth == config.HTTPAuthNone:
		log.Warn("HTTP API authentication is off (AUTOCODER_HTTP_AUTH=none): whoever reaches it reads every job", "listen", listen)
		o.Open = true
	case cfg.HTTPTokensFile == "":
		return o, ErrNoTokens
	default:
		t, err := LoadTokens(cfg.HTTPTokensFile)
		if err != nil {
			return o, err
		}
		o.Tokens = t
		if fi, err := os.Stat(cfg.HTTPTokensFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
			log.Warn("HTTP tokens file is readable by other users: chmod 600 it", "path", cfg.HTTPTokensFile, "mode", fi.Mode().Perm().String())
		}
	}
	return o, nil
}

// MetricsFromConfig is a worker's access policy for its /metrics: the
// coordinator's when tokens or AUTOCODER_HTTP_AUTH=none are configured;
// without either, open (after the Host check), since a worker's metrics
// carry no job data and listen on loopback by default.
func MetricsFromConfig(cfg config.Config, listen string, log *slog.Logger) (Options, error) {
	if cfg.HTTPTokensFile == "" && cfg.HTTPAuth != config.HTTPAuthNone {
		return Options{Open: true, AllowedHosts: allowedHosts(cfg, listen), Logger: log}, nil
	}
	return FromConfig(cfg, listen, log)
}

// allowedHosts are the names the API answers by: the configured ones and
// the listen host when it is a name.
func allowedHosts(cfg config.Config, listen string) []string {
	hosts := cfg.AllowedHosts()
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	return hosts
}
