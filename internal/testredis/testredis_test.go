package testredis

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestStart(t *testing.T) {
	t.Parallel()
	url := Start(t)
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("Start returned %q: %v", url, err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	ctx := t.Context()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET = (%q, %v), want \"v\"", got, err)
	}
	// The server must not write to disk behind the test's back.
	want := map[string]string{"save": "", "appendonly": "no", "bind": "127.0.0.1"}
	for param, w := range want {
		got, err := c.ConfigGet(ctx, param).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got[param] != w {
			t.Errorf("CONFIG GET %s = %q, want %q", param, got[param], w)
		}
	}
}

func TestServersAreSeparate(t *testing.T) {
	t.Parallel()
	a, b := StartServer(t), StartServer(t)
	if a.Addr() == b.Addr() {
		t.Fatalf("two servers share %s", a.Addr())
	}
}

func TestStopAndRestart(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	addr := s.Addr()
	s.Stop()
	if conn, err := net.Dial("tcp", addr); err == nil {
		_ = conn.Close()
		t.Fatalf("%s still accepts connections after Stop", addr)
	}
	s.Stop() // stopping twice is harmless
	s.Restart()
	if s.Addr() != addr {
		t.Fatalf("Restart moved the server from %s to %s", addr, s.Addr())
	}
	if _, err := serverPID(addr); err != nil {
		t.Fatalf("no answer after Restart: %v", err)
	}
}

func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	s.Pause()
	// serverPID gives up after its 2s deadline; a paused server never answers.
	if _, err := serverPID(s.Addr()); err == nil {
		t.Fatal("a paused server answered")
	}
	s.Resume()
	if _, err := serverPID(s.Addr()); err != nil {
		t.Fatalf("no answer after Resume: %v", err)
	}
}

// The server goes when its test ends, even one left paused.
func TestCleanupStopsServer(t *testing.T) {
	t.Parallel()
	var addr string
	t.Run("inner", func(t *testing.T) {
		s := StartServer(t)
		addr = s.Addr()
		s.Pause()
	})
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = conn.Close()
		t.Fatalf("%s still accepts connections after its test ended", addr)
	}
}

func TestMissingRedisServerFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no t.Parallel: Setenv forbids it
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(rec)
		rec.failf("Start returned without failing the test")
	}()
	<-done
	msg := rec.message()
	if !strings.Contains(msg, "redis-server not found: run scripts/setup.sh") {
		t.Fatalf("Start without redis-server on PATH failed with %q, want the setup hint", msg)
	}
}

// fatalRecorder stands in for a test that is expected to fail: it records the
// failure and ends the goroutine, as t.Fatal does.
type fatalRecorder struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (r *fatalRecorder) Fatal(args ...any) { r.failf("%s", fmt.Sprint(args...)) }

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.failf(format, args...) }

func (r *fatalRecorder) failf(format string, args ...any) {
	r.mu.Lock()
	r.msg = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *fatalRecorder) message() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msg
}

func TestServerPIDRejectsNonRedis(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			_, _ = conn.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			_ = conn.Close()
		}
	}()
	if _, err := serverPID(l.Addr().String()); err == nil {
		t.Fatal("serverPID accepted a server that does not speak RESP")
	}
}
