package egress_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/egress"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client reaches the session's socket as pip does through the forwarder.
func client(t *testing.T, s *egress.Session) *http.Client {
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", s.Path)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func session(t *testing.T, p *egress.Proxy) *egress.Session {
	dir, err := os.MkdirTemp("", "egress")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s, err := p.Listen(filepath.Join(dir, "proxy.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestCredentialsStayInTheProxy: the sandbox's index URL has no
// user:password, and the proxy adds them upstream; what was downloaded is
// recorded with its SHA-256.
func TestCredentialsStayInTheProxy(t *testing.T) {
	const wheel = "wheel bytes"
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, pw, ok := r.BasicAuth(); !ok || u != "user" || pw != "s3cr3t" {
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, wheel)
	}))
	defer index.Close()
	secretURL := strings.Replace(index.URL, "http://", "http://user:s3cr3t@", 1) + "/simple/"
	p, err := egress.New(egress.Config{Sources: []string{secretURL, "/some/local/dir"}})
	if err != nil {
		t.Fatal(err)
	}
	shown := p.SandboxURL(secretURL)
	if strings.Contains(shown, "s3cr3t") || shown != index.URL+"/simple/" {
		t.Fatalf("SandboxURL = %q, want %q", shown, index.URL+"/simple/")
	}
	s := session(t, p)
	resp, err := client(t, s).Get(index.URL + "/files/pkg-1.0-py3-none-any.whl")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != wheel {
		t.Fatalf("GET = %d %q, want 200 %q", resp.StatusCode, body, wheel)
	}
	sum := sha256.Sum256([]byte(wheel))
	want := []sandbox.Artifact{{URL: index.URL + "/files/pkg-1.0-py3-none-any.whl", SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(wheel))}}
	if diff := cmp.Diff(want, s.Artifacts()); diff != "" {
		t.Errorf("artifacts (-want +got):\n%s", diff)
	}
}

// TestOnlySourcesAreReachable: other hosts and ports, the loopback's
// included, are refused with a 403, by CONNECT and by plain HTTP; an
// allowed host's tunnel is recorded.
func TestOnlySourcesAreReachable(t *testing.T) {
	allowed := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer allowed.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the denied server got %s %s", r.Method, r.URL)
	}))
	defer other.Close()
	p, err := egress.New(egress.Config{Sources: []string{allowed.URL + "/simple/"}})
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, p)
	c := client(t, s)
	c.Transport.(*http.Transport).TLSClientConfig = allowed.Client().Transport.(*http.Transport).TLSClientConfig

	otherTLS := strings.Replace(other.URL, "http://", "https://", 1)
	for _, u := range []string{other.URL + "/x", otherTLS + "/x", "http://localhost:6379/", "https://127.0.0.2:443/"} {
		resp, err := c.Get(u)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "not a package source") {
				t.Errorf("GET %s = %d %q, want a 403 refusal", u, resp.StatusCode, body)
			}
		} else if !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("GET %s: %v, want a 403 refusal", u, err)
		}
	}
	resp, err := c.Get(allowed.URL + "/simple/")
	if err != nil {
		t.Fatalf("GET allowed: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.Transport.(*http.Transport).CloseIdleConnections()
	s.Close()
	arts := s.Artifacts()
	host := strings.TrimPrefix(allowed.URL, "https://")
	if len(arts) != 1 || arts[0].URL != "connect://"+host || arts[0].Bytes == 0 {
		t.Errorf("artifacts = %+v, want one tunnel to %s", arts, host)
	}
	if len(s.Denied()) != 3 { // the other server twice (http and CONNECT), once
		t.Errorf("denied = %v, want 3 targets", s.Denied())
	}
}

func TestSandboxURLOfHTTPSWithCredentials(t *testing.T) {
	p, err := egress.New(egress.Config{Sources: []string{"https://u:pw@Idx.Example/simple/", "https://pypi.org/simple/"}})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"https://u:pw@Idx.Example/simple/": "http://idx.example:443/simple/",
		"https://pypi.org/simple/":         "https://pypi.org/simple/",
		"/wheels":                          "/wheels",
	} {
		if got := p.SandboxURL(in); got != want {
			t.Errorf("SandboxURL(%q) = %q, want %q", in, got, want)
		}
	}
	if diff := cmp.Diff([]string{"idx.example:443"}, p.TrustedHosts()); diff != "" {
		t.Errorf("TrustedHosts (-want +got):\n%s", diff)
	}
}

func TestParseProvenance(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	log := "Collecting x\nautocoder-provenance " + sum + " file:///w/x-1.0.tar.gz\nautocoder-provenance - http://i/y.whl\nInstalled x\n"
	arts, rest := egress.ParseProvenance(log)
	want := []sandbox.Artifact{{URL: "file:///w/x-1.0.tar.gz", SHA256: sum}, {URL: "http://i/y.whl"}}
	if diff := cmp.Diff(want, arts); diff != "" {
		t.Errorf("artifacts (-want +got):\n%s", diff)
	}
	if rest != "Collecting x\nInstalled x\n" {
		t.Errorf("rest = %q", rest)
	}
}

// TestUpstreamProxyCredentialsStayInTheProxy: the worker's upstream proxy
// (with a password) is used for tunnels and plain-HTTP fetches alike, and
// the build's requests carry no Proxy-Authorization of their own.
func TestUpstreamProxyCredentialsStayInTheProxy(t *testing.T) {
	source := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer source.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain") }))
	defer plain.Close()
	var authed, seen atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if user, pw, ok := parseProxyAuth(r.Header.Get("Proxy-Authorization")); !ok || user != "corp" || pw != "hunter2" {
			http.Error(w, "proxy auth", http.StatusProxyAuthRequired)
			return
		}
		authed.Add(1)
		if r.Method != http.MethodConnect {
			resp, err := http.DefaultTransport.RoundTrip(&http.Request{Method: r.Method, URL: r.URL, Header: http.Header{}})
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, resp.Body)
			return
		}
		up, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		c, buf, _ := http.NewResponseController(w).Hijack()
		c.Write([]byte("HTTP/1.1 200 OK\r\n\r\n"))
		go func() { io.Copy(up, buf); up.Close() }()
		io.Copy(c, up)
		c.Close()
	}))
	defer upstream.Close()
	upstreamURL, _ := url.Parse(strings.Replace(upstream.URL, "http://", "http://corp:hunter2@", 1))
	p, err := egress.New(egress.Config{Sources: []string{source.URL + "/simple/", plain.URL + "/simple/"},
		Upstream: func(*http.Request) (*url.URL, error) { return upstreamURL, nil }})
	if err != nil {
		t.Fatal(err)
	}
	s := session(t, p)
	c := client(t, s)
	c.Transport.(*http.Transport).TLSClientConfig = source.Client().Transport.(*http.Transport).TLSClientConfig
	for _, u := range []string{source.URL + "/simple/", plain.URL + "/simple/"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d", u, resp.StatusCode)
		}
	}
	c.Transport.(*http.Transport).CloseIdleConnections()
	s.Close()
	if seen.Load() != 2 || authed.Load() != 2 {
		t.Errorf("upstream proxy saw %d requests, %d with its credentials; want 2 and 2", seen.Load(), authed.Load())
	}
}

func parseProxyAuth(h string) (user, pw string, ok bool) {
	r := &http.Request{Header: http.Header{"Authorization": {h}}}
	return r.BasicAuth()
}

// TestSourcesOnOneHost: find-links on the index's host without credentials
// share the index's; two different credentials for one host are an error.
func TestSourcesOnOneHost(t *testing.T) {
	p, err := egress.New(egress.Config{Sources: []string{"https://u:pw@idx.example/simple/", "https://idx.example/links/"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.SandboxURL("https://idx.example/links/"); got != "http://idx.example:443/links/" {
		t.Errorf("SandboxURL of the find-links = %q, want it through the proxy's credentials", got)
	}
	if _, err := egress.New(egress.Config{Sources: []string{"https://u:pw@idx.example/simple/", "https://v:pw@idx.example/links/"}}); err == nil {
		t.Error("New accepted two credentials for one host")
	}
}
