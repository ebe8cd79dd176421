package egress

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// Session serves the proxy to one build, on a Unix socket of its own, and
// records what that build fetched.
type Session struct {
	// Path is the Unix socket to bind into the build's sandbox.
	Path string

	p         *Proxy
	ln        net.Listener
	srv       *http.Server
	transport *http.Transport
	served    chan struct{}

	mu      sync.Mutex
	arts    []sandbox.Artifact
	denied  []string
	tunnels map[net.Conn]bool // hijacked connections, closed by Close
	closed  bool
	wg      sync.WaitGroup // tunnels
}

// ListenInTempDir serves the proxy to one build on a socket in a directory
// of its own (short: a socket path has at most 107 bytes), readable by the
// build's uid. The returned func closes the session and removes the
// directory; it may be called twice.
func (p *Proxy) ListenInTempDir() (*Session, func(), error) {
	dir, err := os.MkdirTemp("", "autocoder-egress-")
	if err != nil {
		return nil, nil, fmt.Errorf("egress socket: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // the build's uid connects to the socket
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("egress socket: %w", err)
	}
	sess, err := p.Listen(filepath.Join(dir, "proxy.sock"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	var once sync.Once
	return sess, func() {
		once.Do(func() {
			sess.Close()
			os.RemoveAll(dir)
		})
	}, nil
}

// Listen serves the proxy on a new Unix socket at path, which any uid may
// connect to (the build runs as another user): it leads nowhere the policy
// does not allow.
func (p *Proxy) Listen(path string) (*Session, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("egress: listen: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress: listen: %w", err)
	}
	s := &Session{Path: path, p: p, ln: ln, served: make(chan struct{}), tunnels: map[net.Conn]bool{}}
	s.transport = &http.Transport{
		Proxy:                 p.upstream,
		DialContext:           (&net.Dialer{Timeout: p.dial}).DialContext,
		TLSHandshakeTimeout:   p.dial,
		ResponseHeaderTimeout: 2 * time.Minute,
		DisableCompression:    true, // pass bodies through as they are: pip decodes them
		MaxIdleConnsPerHost:   4,
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second, ErrorLog: nil}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops serving, ends open tunnels and waits for them.
func (s *Session) Close() error {
	err := s.srv.Close()
	<-s.served
	s.mu.Lock()
	s.closed = true
	for c := range s.tunnels {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.transport.CloseIdleConnections()
	return err
}

// Artifacts is what the build fetched so far, in order.
func (s *Session) Artifacts() []sandbox.Artifact {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sandbox.Artifact(nil), s.arts...)
}

// Denied lists the host:ports the build was refused, in order, once each.
func (s *Session) Denied() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.denied...)
}

func (s *Session) record(a sandbox.Artifact) {
	s.mu.Lock()
	s.arts = append(s.arts, a)
	s.mu.Unlock()
}

// ServeHTTP is the proxy: CONNECT to an allowed host:port, or GET/HEAD of
// an absolute http URL on one.
func (s *Session) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		s.connect(w, r)
		return
	}
	if r.URL.Host == "" || r.URL.Scheme != "http" {
		http.Error(w, "autocoder egress proxy: only proxy requests (CONNECT, or GET of an absolute http URL)", http.StatusBadRequest)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "autocoder egress proxy: only GET and HEAD reach package sources", http.StatusMethodNotAllowed)
		return
	}
	s.forward(w, r)
}

// deny refuses a host:port that is no package source, saying so in a way
// that shows in pip's log and in the build code's error.
func (s *Session) deny(w http.ResponseWriter, target string) {
	s.mu.Lock()
	seen := false
	for _, d := range s.denied {
		seen = seen || d == target
	}
	if !seen {
		s.denied = append(s.denied, target)
	}
	s.mu.Unlock()
	s.p.log.Info("egress refused", "target", target)
	http.Error(w, fmt.Sprintf("autocoder egress proxy: %s is not a package source of this worker; builds reach only %s",
		target, strings.Join(s.p.Allowed(), ", ")), http.StatusForbidden)
}

// hopHeaders are not forwarded (RFC 9110 7.6.1), nor anything the build
// could use to pass as someone else upstream.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Authorization", "Cookie"}

// forward fetches an http URL of a source upstream, with the source's
// scheme and credentials, and records a downloaded distribution.
func (s *Session) forward(w http.ResponseWriter, r *http.Request) {
	key, src, ok := s.p.lookup(r.URL.Host, "http")
	if !ok {
		s.deny(w, key)
		return
	}
	up := &url.URL{Scheme: src.scheme, Host: key, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, up.String(), nil)
	if err != nil {
		http.Error(w, "autocoder egress proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	out.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if src.user != nil {
		pw, _ := src.user.Password()
		out.SetBasicAuth(src.user.Username(), pw)
	}
	resp, err := s.transport.RoundTrip(out)
	if err != nil {
		s.p.log.Warn("egress upstream", "url", up.Redacted(), "err", err)
		http.Error(w, "autocoder egress proxy: "+scrub(err.Error(), s.p.Secrets()), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	w.WriteHeader(resp.StatusCode)
	h := sha256.New()
	n, _ := io.Copy(io.MultiWriter(w, h), resp.Body)
	if r.Method == http.MethodGet && resp.StatusCode == http.StatusOK && isDistribution(r.URL.Path) {
		shown := *r.URL
		shown.User = nil
		s.record(sandbox.Artifact{URL: shown.String(), SHA256: hex.EncodeToString(h.Sum(nil)), Bytes: n})
	}
}

// isDistribution tells a package file from an index page.
func isDistribution(path string) bool {
	for _, ext := range []string{".whl", ".tar.gz", ".tgz", ".zip", ".tar.bz2", ".tar.xz", ".egg"} {
		if strings.HasSuffix(strings.ToLower(path), ext) {
			return true
		}
	}
	return false
}

// connect opens a tunnel to an allowed host:port and copies both ways,
// recording the bytes that came back.
func (s *Session) connect(w http.ResponseWriter, r *http.Request) {
	key, _, ok := s.p.lookup(r.Host, "https")
	if !ok {
		s.deny(w, key)
		return
	}
	upstream, err := s.dialTunnel(r.Context(), key)
	if err != nil {
		s.p.log.Warn("egress upstream", "target", key, "err", err)
		http.Error(w, "autocoder egress proxy: "+scrub(err.Error(), s.p.Secrets()), http.StatusBadGateway)
		return
	}
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if !s.track(client, upstream) {
		return
	}
	defer s.wg.Done()
	defer s.untrack(client, upstream)
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(upstream, buf.Reader) // it holds what the client sent early
		closeWrite(upstream)
	}()
	n, _ := io.Copy(client, upstream)
	closeWrite(client)
	<-done
	s.record(sandbox.Artifact{URL: "connect://" + key, Bytes: n})
}

// track registers a tunnel's connections so Close ends them; false (and
// both closed) when the session is already closed.
func (s *Session) track(conns ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		s.tunnels[c] = true
	}
	s.wg.Add(1)
	return true
}

func (s *Session) untrack(conns ...net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(s.tunnels, c)
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}

// dialTunnel connects to key, directly or through the upstream proxy (with
// its credentials) by a CONNECT of its own.
func (s *Session) dialTunnel(ctx context.Context, key string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.p.dial)
	defer cancel()
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Scheme: "https", Host: key}, Header: http.Header{}}
	proxyURL, err := s.p.upstream(req)
	if err != nil {
		return nil, fmt.Errorf("upstream proxy for %s: %w", key, err)
	}
	var d net.Dialer
	if proxyURL == nil {
		return d.DialContext(ctx, "tcp", key)
	}
	addr, err := hostPort(proxyURL.Host, proxyURL.Scheme)
	if err != nil {
		return nil, fmt.Errorf("upstream proxy %s: %w", proxyURL.Redacted(), err)
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("upstream proxy %s: %w", proxyURL.Redacted(), err)
	}
	if proxyURL.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{ServerName: proxyURL.Hostname()})
		conn = tc
	}
	if err := upstreamConnect(ctx, conn, key, proxyURL); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// upstreamConnect asks the upstream proxy for a tunnel to key.
func upstreamConnect(ctx context.Context, conn net.Conn, key string, proxyURL *url.URL) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
		defer conn.SetDeadline(time.Time{})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", key, key)
	if proxyURL.User != nil {
		pw, _ := proxyURL.User.Password()
		cred := base64.StdEncoding.EncodeToString([]byte(proxyURL.User.Username() + ":" + pw))
		fmt.Fprintf(&b, "Proxy-Authorization: Basic %s\r\n", cred)
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return fmt.Errorf("upstream proxy %s: %w", proxyURL.Redacted(), err)
	}
	// One byte at a time: nothing past the response's head may be read, as
	// it belongs to the tunnel.
	tp := textproto.NewReader(bufio.NewReaderSize(byteReader{conn}, 16))
	status, err := tp.ReadLine()
	if err == nil {
		_, err = tp.ReadMIMEHeader()
	}
	if err != nil {
		return fmt.Errorf("upstream proxy %s: %w", proxyURL.Redacted(), err)
	}
	if f := strings.Fields(status); len(f) < 2 || f[1] != "200" {
		return fmt.Errorf("upstream proxy %s: CONNECT %s: %s", proxyURL.Redacted(), key, status)
	}
	return nil
}

// byteReader reads one byte per call.
type byteReader struct{ r io.Reader }

func (b byteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return b.r.Read(p[:1])
}

// scrub removes secrets from a message sent back into the sandbox.
func scrub(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	return msg
}

var _ http.Handler = (*Session)(nil)
