package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/httpapi"
)

// serveLimited serves h within l on a free loopback port until the test ends.
func serveLimited(t *testing.T, h http.Handler, l httpapi.Limits) *httpapi.Server {
	t.Helper()
	srv, err := httpapi.NewServer("127.0.0.1:0", h, l)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	return srv
}

// dialFrom connects to addr from local address ip (any 127/8 address is
// the loopback on Linux), so a test has many clients.
func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConnectionsPerClientAreCapped: one address holds at most its cap of
// connections; the next is answered 429 and closed, and another address
// is served meanwhile.
func TestConnectionsPerClientAreCapped(t *testing.T) {
	t.Parallel()
	srv := serveLimited(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		httpapi.Limits{MaxConnsPerClient: 5})
	addr := srv.Listener.Addr().String()
	for range 5 {
		dialFrom(t, "127.0.0.2", addr)
	}
	waitFor(t, func() bool { return srv.Listener.Open() == 5 }, "5 connections held")
	extra := dialFrom(t, "127.0.0.2", addr)
	_ = extra.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the 6th connection from one address: %v, %v; want 429", resp, err)
	}
	if n, _ := extra.Read(make([]byte, 1)); n != 0 {
		t.Error("the refused connection stayed open")
	}
	if got := get(t, "http://"+addr+"/"); got != "ok" {
		t.Errorf("another client: %q", got)
	}
	if srv.Listener.Refused.Load() != 1 {
		t.Errorf("refused %d, want 1", srv.Listener.Refused.Load())
	}
}

// TestSlowBodyLosesItsConnection: a body sent a byte at a time is cut at
// the body deadline and its connection closed; a request without a body
// (an events stream) is not, however long it lasts.
func TestSlowBodyLosesItsConnection(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // a stream longer than the body deadline
			for i := range 4 {
				fmt.Fprintf(w, "tick %d\n", i)
				w.(http.Flusher).Flush()
				time.Sleep(200 * time.Millisecond)
			}
			return
		}
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusRequestTimeout)
			return
		}
		io.WriteString(w, "read")
	})
	srv := serveLimited(t, h, httpapi.Limits{BodyTimeout: 300 * time.Millisecond})
	addr := srv.Listener.Addr().String()

	c := dialFrom(t, "127.0.0.3", addr)
	fmt.Fprintf(c, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\na")
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, err := c.Write([]byte("b"))
		if err != nil {
			break
		}
		if _, err := c.Read(make([]byte, 1)); err != nil || time.Since(start) > 20*time.Second {
			break
		}
	}
	waitFor(t, func() bool { return srv.Listener.Open() == 0 }, "the slow body's connection closed")

	body := get(t, "http://"+addr+"/stream")
	if !strings.Contains(body, "tick 3") {
		t.Errorf("a 800 ms stream under a 300 ms body deadline: %q", body)
	}
	resp, err := http.Post("http://"+addr+"/x", "text/plain", strings.NewReader("a quick body"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "read" {
		t.Errorf("a quick body: %d %q", resp.StatusCode, b)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
