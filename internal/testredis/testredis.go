package testredis

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
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

// Options make a server that checks who connects.
type Options struct {
	// Password is the default user's password (requirepass).
	Password string
	// Users are ACL users with every permission; with any, the default user
	// is switched off, so only they get in.
	Users []User
	// TLS serves TLS only, with a CA and certificates made for the test
	// (Server.TLS); the URL's scheme is rediss.
	TLS bool
}

// User is an ACL user.
type User struct {
	Name, Password string
	// Rules are the user's ACL rules; nil: every key and command
	// ("~*", "&*", "+@all").
	Rules []string
}

// Server is one redis-server owned by a test. Its methods call t.Fatal on
// failure, so call them from the test's goroutine.
type Server struct {
	t    testing.TB
	bin  string
	dir  string // working directory, so nothing lands in the package dir
	port int
	opts Options
	tls  *TLSFiles // nil without Options.TLS

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
	return StartServerWith(t, Options{})
}

// StartServerWith starts a redis-server as StartServer does, with
// authentication or TLS as o asks.
func StartServerWith(t testing.TB, o Options) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("testredis: redis-server not found: run scripts/setup.sh (%v)", err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), opts: o}
	if o.TLS {
		if s.tls, err = writeTLSFiles(s.dir); err != nil {
			t.Fatalf("testredis: %v", err)
		}
	}
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

// URL is the server's redis:// URL (database 0), rediss:// with TLS. It
// carries no credentials: see UserURL.
func (s *Server) URL() string {
	return s.UserURL("", "")
}

// UserURL is URL with a user name and password ("" for none; a password
// without a name is the default user's).
func (s *Server) UserURL(name, password string) string {
	u := url.URL{Scheme: "redis", Host: s.Addr(), Path: "/0"}
	if s.tls != nil {
		u.Scheme = "rediss"
	}
	if name != "" || password != "" {
		u.User = url.UserPassword(name, password)
	}
	return u.String()
}

// TLS is the server's CA and a client certificate it accepts; nil without
// Options.TLS.
func (s *Server) TLS() *TLSFiles { return s.tls }

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

// args are redis-server's arguments for port.
func (s *Server) args(port int) []string {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", s.dir,
		"--loglevel", "warning",
	}
	if s.tls != nil {
		args[1] = "0"
		args = append(args, "--tls-port", strconv.Itoa(port), "--tls-cert-file", s.tls.serverCert,
			"--tls-key-file", s.tls.serverKey, "--tls-ca-cert-file", s.tls.CA, "--tls-auth-clients", "optional")
	}
	if s.opts.Password != "" {
		args = append(args, "--requirepass", s.opts.Password)
	}
	for _, u := range s.opts.Users {
		rules := u.Rules
		if rules == nil {
			rules = []string{"~*", "&*", "+@all"}
		}
		args = append(append(args, "--user", u.Name, "on", ">"+u.Password), rules...)
	}
	if len(s.opts.Users) > 0 {
		args = append(args, "--user", "default", "off")
	}
	return args
}

// login is the AUTH command the readiness probe sends first, if any.
func (s *Server) login() string {
	switch {
	case len(s.opts.Users) > 0:
		return fmt.Sprintf("AUTH %s %s\r\n", s.opts.Users[0].Name, s.opts.Users[0].Password)
	case s.opts.Password != "":
		return fmt.Sprintf("AUTH %s\r\n", s.opts.Password)
	}
	return ""
}

// dial connects to the server for the readiness probe.
func (s *Server) dial(addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: time.Second}
	if s.tls == nil {
		return d.Dial("tcp", addr)
	}
	cfg, err := s.tls.Config()
	if err != nil {
		return nil, err
	}
	return tls.DialWithDialer(d, "tcp", addr, cfg)
}

// start runs redis-server on port and waits until it answers, as itself.
func (s *Server) start(port int) error {
	cmd := exec.Command(s.bin, s.args(port)...)
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
	if err := waitReady(p, port, s.dial, s.login()); err != nil {
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
func waitReady(p *process, port int, dial func(addr string) (net.Conn, error), login string) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return errors.New("exited during startup")
		default:
		}
		pid, err := askPID(dial, addr, login)
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

// serverPID asks the plain, open server at addr for its process id.
func serverPID(addr string) (int, error) {
	return askPID(func(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, time.Second) }, addr, "")
}

// askPID asks the server at addr for its process id, speaking just enough
// RESP to do so without a client library; login (an AUTH command) goes
// first when the server wants one.
func askPID(dial func(addr string) (net.Conn, error), addr, login string) (int, error) {
	conn, err := dial(addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(conn, login+"INFO server\r\n"); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	if login != "" {
		if ok, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(ok, "+OK") {
			return 0, fmt.Errorf("AUTH: %q %v", strings.TrimSpace(ok), err)
		}
	}
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
