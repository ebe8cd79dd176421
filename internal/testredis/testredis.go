package testredis

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// startTimeout bounds how long a server may take to answer its first PING.
	startTimeout = 15 * time.Second
	// stopTimeout is how long Stop waits after SIGTERM before killing.
	stopTimeout = 10 * time.Second
	// startAttempts is how many free ports Start tries: between finding a
	// free port and redis-server binding it, another process may take it.
	startAttempts = 5
)

// Start starts a redis-server for t and returns its URL,
// "redis://127.0.0.1:<port>/0". The server is stopped when t ends.
func Start(t testing.TB) (url string) {
	t.Helper()
	return StartServer(t).URL()
}

// Server is one redis-server owned by a test. Its methods call t.Fatal on
// failure, so call them from the test's goroutine.
type Server struct {
	t    testing.TB
	bin  string
	dir  string // working directory, so nothing lands in the package dir
	port int

	mu   sync.Mutex
	proc *process // nil while stopped
}

// process is one run of redis-server.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed once the process has exited and been reaped
}

// StartServer starts a redis-server for t on a free loopback port and stops it
// when t ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("testredis: redis-server not found: run scripts/setup.sh (%v)", err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	t.Cleanup(s.Stop)

	var lastErr error
	for range startAttempts {
		port, err := freePort()
		if err != nil {
			t.Fatalf("testredis: %v", err)
		}
		if lastErr = s.start(port); lastErr == nil {
			s.port = port
			return s
		}
	}
	t.Fatalf("testredis: %v", lastErr)
	return nil
}

// URL is the server's redis:// URL (database 0).
func (s *Server) URL() string {
	return fmt.Sprintf("redis://%s/0", s.Addr())
}

// Addr is the server's host:port.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Stop stops the server and waits for it to exit; a stopped server refuses
// connections. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.t.Helper()
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	if err := p.stop(); err != nil {
		s.t.Errorf("testredis: stop redis-server on port %d: %v\n%s", s.port, err, p.out)
	}
}

// Restart starts the server again on the same port, stopping it first if it
// is running. Data is not kept across a restart: persistence is off.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	// Retried: the port is free again once the old process has exited, but
	// another process may hold it briefly.
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.start(s.port)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("testredis: restart on port %d: %v", s.port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Pause freezes the server (SIGSTOP): connections stay open but nothing is
// answered, as with a wedged server or a network partition. Resume undoes it;
// Stop also works on a paused server.
func (s *Server) Pause() {
	s.t.Helper()
	s.signal(pauseSignal(), "pause")
}

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() {
	s.t.Helper()
	s.signal(resumeSignal(), "resume")
}

func (s *Server) signal(sig os.Signal, what string) {
	s.t.Helper()
	if sig == nil {
		s.t.Fatalf("testredis: %s is not supported on this system", what)
	}
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		s.t.Fatalf("testredis: %s: server is not running", what)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("testredis: %s: %v", what, err)
	}
}

// start runs redis-server on port and waits until it answers, as itself.
func (s *Server) start(port int) error {
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", s.dir,
		"--loglevel", "warning",
	)
	cmd.SysProcAttr = procAttr()
	out := &syncBuffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	p := &process{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	if err := waitReady(p, port); err != nil {
		_ = p.stop()
		return fmt.Errorf("redis-server on port %d: %w\n%s", port, err, out)
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// waitReady polls the port until our redis-server answers. The reply to INFO
// must carry our pid: if another process won the port, our server exits with
// "Address already in use" and the one answering is not ours.
func waitReady(p *process, port int) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return errors.New("exited during startup")
		default:
		}
		pid, err := serverPID(addr)
		if err == nil {
			if pid == p.cmd.Process.Pid {
				return nil
			}
			return fmt.Errorf("port taken by another redis-server (pid %d)", pid)
		}
		lastErr = err
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("no answer within %v: %v", startTimeout, lastErr)
}

// serverPID asks the server at addr for its process id, speaking just enough
// RESP to do so without a client library.
func serverPID(addr string) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(conn, "INFO server\r\n"); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	// A bulk string: "$<len>\r\n<body>\r\n". Anything else (e.g. "-LOADING")
	// means not ready yet.
	if !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("unexpected reply %q", strings.TrimSpace(head))
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("unexpected reply %q", strings.TrimSpace(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO has no process_id")
}

// stop ends the process, gently first, and waits until it is reaped.
func (p *process) stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	// A paused server would not act on SIGTERM until continued.
	if sig := resumeSignal(); sig != nil {
		_ = p.cmd.Process.Signal(sig)
	}
	_ = p.cmd.Process.Signal(stopSignal())
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	<-p.done
	return fmt.Errorf("did not exit within %v of SIGTERM; killed", stopTimeout)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer collects the server's log; exec copies into it from its own
// goroutine while the test may read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
