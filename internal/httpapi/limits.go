package httpapi

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// What one HTTP endpoint may hold. About 20,000 unauthenticated
// connections sending their bodies a byte at a time once used up the
// coordinator's file descriptors, and with them the embedded NATS
// listener's. So the endpoint's connections are capped per client and
// overall, well under the process's descriptor limit (Go raises the soft
// limit to the hard one at start: syscall's init), and every stage of a
// request has a deadline: its headers, its body, and the wait for the next
// request on a kept-alive connection.

// Defaults of Limits.
const (
	DefaultMaxConns          = 1024
	DefaultMaxConnsPerClient = 64
	DefaultHeaderTimeout     = 10 * time.Second
	DefaultBodyTimeout       = time.Minute
	DefaultUploadTimeout     = 30 * time.Minute // POST /v1/samples: up to 2 GiB
	DefaultIdleTimeout       = 2 * time.Minute
)

// Limits bound the connections and requests of one HTTP endpoint. The
// zero value of every field means its default.
type Limits struct {
	// MaxConns is how many connections the endpoint holds at once; more
	// wait in the kernel's backlog until one closes. Default
	// DefaultMaxConns, and at most a quarter of the process's file
	// descriptors (the rest are NATS's, the stores' and the sandboxes').
	MaxConns int
	// MaxConnsPerClient is how many of them one IP address may hold; its
	// next connection is answered 429 and closed. Default
	// DefaultMaxConnsPerClient. Behind a proxy every client has the
	// proxy's address: raise it to MaxConns there.
	MaxConnsPerClient int
	// HeaderTimeout bounds reading a request's headers. Default DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body; UploadTimeout a
	// sample's (POST /v1/samples). Defaults DefaultBodyTimeout, DefaultUploadTimeout.
	BodyTimeout, UploadTimeout time.Duration
	// IdleTimeout closes a kept-alive connection with no next request. Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Logger hears refused connections at debug level; nil: discard.
	Logger *slog.Logger
}

func (l Limits) withDefaults() Limits {
	l.MaxConns = cmp.Or(l.MaxConns, DefaultMaxConns)
	if fds := bus.OpenFileLimit(); fds > 0 {
		l.MaxConns = max(min(l.MaxConns, fds/4), 1)
	}
	l.MaxConnsPerClient = min(cmp.Or(l.MaxConnsPerClient, DefaultMaxConnsPerClient), l.MaxConns)
	l.HeaderTimeout = cmp.Or(l.HeaderTimeout, DefaultHeaderTimeout)
	l.BodyTimeout = cmp.Or(l.BodyTimeout, DefaultBodyTimeout)
	l.UploadTimeout = cmp.Or(l.UploadTimeout, DefaultUploadTimeout)
	l.IdleTimeout = cmp.Or(l.IdleTimeout, DefaultIdleTimeout)
	if l.Logger == nil {
		l.Logger = slog.New(slog.DiscardHandler)
	}
	return l
}

// Server is an HTTP endpoint serving h within l: its listener caps the
// connections, its server and handler bound each request's time. Serve
// it with Serve (or srv.Serve(ln)).
type Server struct {
	*http.Server
	Listener *Listener
	// Limits are the limits in force, defaults filled in.
	Limits Limits
}

// NewServer listens on addr (host:port) and returns the server of h
// within l.
func NewServer(addr string, h http.Handler, l Limits) (*Server, error) {
	l = l.withDefaults()
	base, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	ln := &Listener{Listener: base, max: l.MaxConnsPerClient, open: map[string]int{}, log: l.Logger}
	ln.limited = netutil.LimitListener(ln.perClient(), l.MaxConns)
	srv := &http.Server{
		Handler:           bodyDeadlines(h, l),
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		// No WriteTimeout: events stream for as long as a job runs. A
		// client that stops reading holds its connection until the stream
		// ends; the caps bound how many can.
	}
	return &Server{Server: srv, Listener: ln, Limits: l}, nil
}

// Serve serves until Shutdown or Close; it returns http.ErrServerClosed then.
func (s *Server) Serve() error { return s.Server.Serve(s.Listener) }

// Listener is a TCP listener that holds at most Limits.MaxConns
// connections, at most MaxConnsPerClient of them from one IP address.
type Listener struct {
	net.Listener // the TCP listener
	limited      net.Listener
	max          int
	log          *slog.Logger

	mu    sync.Mutex
	open  map[string]int // connections held, by client IP
	total atomic.Int64
	// Refused counts the connections refused for their client's cap.
	Refused atomic.Int64
}

// Accept waits for a connection within the caps.
func (l *Listener) Accept() (net.Conn, error) { return l.limited.Accept() }

// Open is how many connections the listener holds now.
func (l *Listener) Open() int { return int(l.total.Load()) }

// perClient is the listener that refuses a client's connections past its cap.
func (l *Listener) perClient() net.Listener { return perClient{l} }

type perClient struct{ l *Listener }

func (p perClient) Addr() net.Addr { return p.l.Listener.Addr() }
func (p perClient) Close() error   { return p.l.Listener.Close() }

func (p perClient) Accept() (net.Conn, error) {
	for {
		c, err := p.l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientIP(c.RemoteAddr())
		if p.l.take(ip) {
			p.l.total.Add(1)
			return &heldConn{Conn: c, release: func() { p.l.give(ip); p.l.total.Add(-1) }}, nil
		}
		p.l.Refused.Add(1)
		p.l.log.Debug("http connection refused: too many from its client", "client", ip, "max", p.l.max)
		go refuse(c)
	}
}

// take counts a connection of ip, if its cap allows one more.
func (l *Listener) take(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip] >= l.max {
		return false
	}
	l.open[ip]++
	return true
}

func (l *Listener) give(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// refuse answers a connection over its client's cap with a 429 (in a
// second, or not at all) and closes it.
func refuse(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 47\r\n\r\ntoo many connections from this address at once\n")
	_ = c.Close()
}

func clientIP(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// heldConn gives its place back once, when closed.
type heldConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *heldConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// bodyDeadlines gives every request body a deadline (a sample upload a
// longer one), cleared once the body is read, so a client that sends its
// body a byte at a time loses its connection instead of holding it. A
// request without a body gets none: a read deadline left in place would
// end the events stream the request opens.
func bodyDeadlines(h http.Handler, l Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		d := l.BodyTimeout
		if r.Method == http.MethodPost && r.URL.Path == "/v1/samples" {
			d = l.UploadTimeout
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			writeError(w, http.StatusInternalServerError, messages.CodeInternal, "request body: "+err.Error())
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody clears the body's read deadline when the body has been
// read to its end or closed.
type deadlineBody struct {
	io.ReadCloser
	once  sync.Once
	clear func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(b.clear)
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	b.once.Do(b.clear)
	return b.ReadCloser.Close()
}
