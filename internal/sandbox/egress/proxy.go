package egress

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// PyPISources are pip's default package sources: the ones to allow when
// the operator configured no index URL.
var PyPISources = []string{"https://pypi.org/simple/", "https://files.pythonhosted.org/"}

// DefaultDialTimeout bounds a connection to a source or upstream proxy.
const DefaultDialTimeout = 30 * time.Second

// Config configures a Proxy. The zero value of every field but Sources
// means its documented default.
type Config struct {
	// Sources are the package source URLs builds may reach: pip's index
	// URL and find-links URLs (entries that are not http(s) URLs, like
	// local directories, are ignored). Their user:password, if any, is
	// kept here and sent upstream as Basic authorization.
	Sources []string
	// Upstream returns the proxy to reach a source through (nil URL:
	// directly). Default http.ProxyFromEnvironment: the worker's own
	// HTTPS_PROXY, HTTP_PROXY and NO_PROXY, credentials included.
	Upstream func(*http.Request) (*url.URL, error)
	// DialTimeout bounds each connection upstream. Default 30s.
	DialTimeout time.Duration
	// Logger receives refusals (Info) and upstream failures (Warn).
	// Default: discard.
	Logger *slog.Logger
}

// source is one allowed host:port.
type source struct {
	scheme string        // upstream scheme: how the proxy reaches it
	user   *url.Userinfo // nil: no credentials
}

// Proxy is the egress policy shared by every build of a worker: which
// host:ports are package sources, and the credentials of each. Listen
// serves it to one build.
type Proxy struct {
	sources  map[string]source // by canonical host:port
	upstream func(*http.Request) (*url.URL, error)
	dial     time.Duration
	log      *slog.Logger
}

// New parses the sources. It fails on a source that is not a URL, or on
// two sources with one host:port but different credentials or schemes.
func New(cfg Config) (*Proxy, error) {
	p := &Proxy{sources: map[string]source{}, upstream: cfg.Upstream,
		dial: cmp.Or(cfg.DialTimeout, DefaultDialTimeout), log: cfg.Logger}
	if p.upstream == nil {
		p.upstream = http.ProxyFromEnvironment
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	for _, raw := range cfg.Sources {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("egress: package source %q: %w", redact(raw), err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			continue // a local directory or file: URL
		}
		key, err := hostPort(u.Host, u.Scheme)
		if err != nil {
			return nil, fmt.Errorf("egress: package source %s: %w", u.Redacted(), err)
		}
		src := source{scheme: u.Scheme, user: u.User}
		if old, ok := p.sources[key]; ok {
			// The same host named again (find-links beside the index): one
			// without credentials takes the other's.
			if old.scheme != src.scheme || (old.user != nil && src.user != nil && old.user.String() != src.user.String()) {
				return nil, fmt.Errorf("egress: package sources name %s twice, with different schemes or credentials", key)
			}
			if src.user == nil {
				src.user = old.user
			}
		}
		p.sources[key] = src
	}
	return p, nil
}

// Allowed lists the host:ports builds may reach, sorted.
func (p *Proxy) Allowed() []string {
	out := make([]string, 0, len(p.sources))
	for k := range p.sources {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// SandboxURL is a source URL as pip inside the sandbox sees it: without
// user:password, and for an https source with credentials, as
// http://host:443/... (the proxy then adds the credentials and speaks TLS
// upstream). Anything that is not an http(s) URL is returned unchanged.
func (p *Proxy) SandboxURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return raw
	}
	key, err := hostPort(u.Host, u.Scheme)
	if err != nil {
		return raw
	}
	u.User = nil
	if src, ok := p.sources[key]; ok && src.user != nil && src.scheme == "https" {
		u.Scheme, u.Host = "http", key
	}
	return u.String()
}

// TrustedHosts are the host:ports pip must be told to trust (pip
// --trusted-host): the https sources with credentials, which pip reaches
// as http through the proxy.
func (p *Proxy) TrustedHosts() []string {
	var out []string
	for k, src := range p.sources {
		if src.user != nil && src.scheme == "https" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Secrets are the credentials of the sources (user:password as written),
// for tests and log scrubbing.
func (p *Proxy) Secrets() []string {
	var out []string
	for _, src := range p.sources {
		if pw, ok := src.user.Password(); ok && pw != "" {
			out = append(out, pw)
		}
	}
	return slices.Compact(out)
}

// lookup returns the source of a request's host:port.
func (p *Proxy) lookup(hostport, scheme string) (string, source, bool) {
	key, err := hostPort(hostport, scheme)
	if err != nil {
		return hostport, source{}, false
	}
	src, ok := p.sources[key]
	return key, src, ok
}

// hostPort is the canonical host:port of a URL host (lower case, the
// scheme's port when none is given). Lookalikes of an allowed host (other
// spellings of an IP address, a trailing dot) do not match it: they are
// refused like any other host.
func hostPort(host, scheme string) (string, error) {
	if host == "" {
		return "", errors.New("no host")
	}
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		h, port = host, map[string]string{"http": "80", "https": "443"}[scheme]
		if port == "" {
			return "", fmt.Errorf("no port in %q", host)
		}
	}
	h = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	return net.JoinHostPort(h, port), nil
}

// redact hides what looks like credentials in a string that did not parse
// as a URL.
func redact(raw string) string {
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		if j := strings.Index(raw, "://"); j >= 0 && j < i {
			return raw[:j+3] + "xxxxx" + raw[i:]
		}
	}
	return raw
}
