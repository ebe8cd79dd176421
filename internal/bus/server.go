package bus

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/autocoder/autocoder/pkg/redact"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// EmbeddedConfig configures an in-process NATS server with JetStream. The
// zero value of every field but StoreDir means its default.
type EmbeddedConfig struct {
	// StoreDir is where JetStream keeps streams, KV buckets and object stores.
	// Required. Data survives a restart with the same StoreDir.
	StoreDir string
	// Listen is the client address other processes connect to, e.g.
	// "127.0.0.1:4222"; port -1 or 0 picks a free port (see ClientURL).
	// Default "": no TCP listener, in-process connections only.
	Listen string
	// ServerName names the server in logs and monitoring. Default "autocoder-embedded".
	ServerName string
	// Logger receives the server's log, notices at Info, warnings at Warn,
	// errors and fatals at Error, debug at Debug (trace is never enabled).
	// Default nil: the server logs nothing.
	Logger *slog.Logger
	// ReadyTimeout bounds how long StartEmbedded waits for the server to
	// accept connections (JetStream recovery of a large StoreDir counts).
	// Default 30s.
	ReadyTimeout time.Duration

	// Users may connect over Listen, each with its role's permissions
	// (PermissionsOf). A Listen without Users is refused unless NoAuth:
	// an open listener would let any local process publish stage commands.
	// In-process connections (Connect) need no credentials either way.
	Users []User
	// NoAuth lets anyone in over Listen with every permission: the
	// operator's explicit choice (AUTOCODER_NATS_AUTH=none). Default false.
	NoAuth bool
	// TLSCert and TLSKey are PEM files: when set, the listener speaks TLS.
	TLSCert, TLSKey string
	// Sync is how the store reaches the disk (sync.go): SyncAlways (the
	// default when empty) flushes every write before it is acknowledged;
	// a Go duration such as "2m" flushes on that interval, as nats-server
	// does by default, and an acknowledged write can be lost in a power
	// loss of that long.
	Sync string
	// MonitorListen serves the server's HTTP monitoring endpoint (/varz,
	// /jsz, /connz, ...) on host:port; port 0 picks a free one (see
	// MonitorURL). Default "": none. It takes no authentication: bind it
	// where only operators and Prometheus reach it.
	MonitorListen string
	// MaxStore is how much disk JetStream may use, in bytes, the bounds
	// of the object stores included (Embedded.StorageLimit). Default 0:
	// nats-server's, 75% of the disk free under StoreDir when it starts.
	MaxStore int64
}

// ErrNoUsers is returned (wrapped) by StartEmbedded for a listener with
// neither Users nor NoAuth.
var ErrNoUsers = errors.New("bus: embedded server: a listener needs users")

// Embedded is a running in-process NATS server.
type Embedded struct {
	srv    *server.Server
	listen bool
	// password of the in-process user when the server has users ("" when not).
	password string
}

// StartEmbedded starts an in-process NATS server with JetStream and waits
// until it is ready for connections.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("bus: embedded server: StoreDir is required")
	}
	if cfg.ServerName == "" {
		cfg.ServerName = "autocoder-embedded"
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	opts := &server.Options{
		ServerName: cfg.ServerName,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		// A library must not install signal handlers; the binary owns signals.
		NoSigs:            true,
		NoLog:             cfg.Logger == nil,
		JetStreamMaxStore: cfg.MaxStore,
	}
	if err := syncOptions(opts, cfg.Sync); err != nil {
		return nil, err
	}
	password, err := listenerOptions(opts, cfg)
	if err != nil {
		return nil, err
	}
	if err := monitorOptions(opts, cfg.MonitorListen); err != nil {
		return nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("bus: embedded server: %w", err)
	}
	// The logger is always installed, even when nothing is logged: it is how
	// a fatal error (port in use, unusable store) reaches us at once instead
	// of after the whole ReadyTimeout.
	logger, debug := cfg.Logger, false
	if logger == nil {
		logger = discardLogger()
	} else {
		debug = logger.Enabled(context.Background(), slog.LevelDebug)
	}
	sl := &serverLogger{l: logger, fatal: make(chan string, 1)}
	srv.SetLoggerV2(sl, debug, false, false)
	srv.Start()
	deadline := time.Now().Add(cfg.ReadyTimeout)
	for !srv.ReadyForConnections(100 * time.Millisecond) {
		var why string
		select {
		case why = <-sl.fatal:
		default:
			if time.Now().Before(deadline) {
				continue
			}
			why = fmt.Sprintf("not ready after %s", cfg.ReadyTimeout)
		}
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("bus: embedded server (store %s): %s", cfg.StoreDir, why)
	}
	return &Embedded{srv: srv, listen: !opts.DontListen, password: password}, nil
}

// listenerOptions sets the listener of opts: none, or cfg.Listen with its
// users and TLS. It returns the in-process user's password ("" without users).
func listenerOptions(opts *server.Options, cfg EmbeddedConfig) (string, error) {
	if cfg.Listen == "" {
		opts.DontListen = true
		return "", nil
	}
	host, port, err := splitListen(cfg.Listen)
	if err != nil {
		return "", fmt.Errorf("bus: embedded server: listen %q: %w", cfg.Listen, err)
	}
	opts.Host, opts.Port = host, port
	if fds := OpenFileLimit(); fds > 0 {
		// Half the descriptors at most: the HTTP API takes a quarter, the
		// stores and sandboxes need the rest (nofile_unix.go).
		opts.MaxConn = max(fds/2, 64)
	}
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		if opts.TLSConfig, err = listenerTLS(cfg.TLSCert, cfg.TLSKey); err != nil {
			return "", err
		}
		opts.TLS = true
	}
	switch {
	case len(cfg.Users) > 0:
		return serverAuth(opts, cfg.Users)
	case cfg.NoAuth:
		return "", nil
	}
	return "", fmt.Errorf("%w: listening on %s", ErrNoUsers, cfg.Listen)
}

// splitListen parses "host:port". Port 0 means a free port: nats-server reads
// 0 as "the default 4222", so it becomes server.RANDOM_PORT.
func splitListen(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < -1 || port > 65535 {
		return "", 0, fmt.Errorf("invalid port %q", p)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// Connect returns a client connection to the embedded server. It is always
// in-process (a net.Pipe, no TCP) since the server lives in this process;
// opts are applied after the defaults, so they can override the name.
func (e *Embedded) Connect(opts ...nats.Option) (*nats.Conn, error) {
	all := []nats.Option{nats.Name("autocoder-embedded-client"), nats.InProcessServer(e.srv)}
	if e.password != "" {
		all = append(all, nats.UserInfo(inProcessUser, e.password))
	}
	all = append(all, opts...)
	nc, err := nats.Connect("", all...)
	if err != nil {
		return nil, fmt.Errorf("bus: connect to embedded server: %w", err)
	}
	return nc, nil
}

// StorageLimit is the JetStream storage the server has, in bytes: its
// max store, or with memory its max memory (nats-server's defaults: 75%
// of the disk free under StoreDir, and of the machine's memory, when it
// started). For ProvisionConfig.StorageLimit.
func (e *Embedded) StorageLimit(memory bool) int64 {
	c := e.srv.JetStreamConfig()
	switch {
	case c == nil:
		return 0
	case memory:
		return c.MaxMemory
	}
	return c.MaxStore
}

// ClientURL is the URL other processes use to connect, with the real port
// when the listener picked a free one. It is "" when there is no listener.
func (e *Embedded) ClientURL() string {
	if !e.listen {
		return ""
	}
	return e.srv.ClientURL()
}

// Shutdown stops the server and waits until it has stopped and flushed its
// store. Connections made by Connect are closed by the server.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// Connect connects to a remote NATS at natsURL (comma-separated URLs for a
// cluster). The initial connection is retried with backoff until it works or
// ctx is done, so processes can start before NATS does; give ctx a deadline
// where waiting forever is wrong (a CLI). After that, the client reconnects
// forever and buffers publishes while disconnected; disconnects, reconnects
// and async errors are logged. opts are applied after the defaults.
func Connect(ctx context.Context, natsURL, name string, logger *slog.Logger, opts ...nats.Option) (*nats.Conn, error) {
	if logger == nil {
		logger = discardLogger()
	}
	logger = logger.With("nats_url", redactURL(natsURL))
	all := append([]nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(2 * time.Second),
		nats.ReconnectJitter(500*time.Millisecond, 2*time.Second),
		nats.Timeout(5 * time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				logger.Warn("nats disconnected", "error", err)
				return
			}
			logger.Info("nats disconnected")
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			logger.Info("nats reconnected", "server", nc.ConnectedUrlRedacted())
		}),
		nats.ClosedHandler(func(*nats.Conn) { logger.Info("nats connection closed") }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				logger.Error("nats async error", "subject", sub.Subject, "error", err)
				return
			}
			logger.Error("nats async error", "error", err)
		}),
	}, opts...)

	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("bus: connect to %s: %w", redactURL(natsURL), err)
		}
		nc, err := nats.Connect(natsURL, all...)
		err = redact.Error(err, redact.Secrets(natsURL)...)
		if err == nil {
			logger.Info("nats connected", "server", nc.ConnectedUrlRedacted())
			return nc, nil
		}
		if !retryableConnectError(err) {
			return nil, fmt.Errorf("bus: connect to %s: %w", redactURL(natsURL), err)
		}
		logger.Warn("nats not reachable, retrying", "attempt", attempt, "retry_in", wait, "error", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("bus: connect to %s: %w (last error: %v)", redactURL(natsURL), ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// retryableConnectError is false for what waiting cannot heal: a
// malformed URL, credentials the server refuses, a TLS setup that does not
// match. Everything else is waited out: nothing listening yet, a timeout,
// or a server that drops connections while it starts (an EOF, at a
// cluster's start: every role must wait for it, not exit).
func retryableConnectError(err error) bool {
	var urlErr *url.Error
	if errors.As(err, &urlErr) && urlErr.Op == "parse" {
		return false // a *url.Error is a net.Error, but a typo does not heal
	}
	var certErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var record tls.RecordHeaderError
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked),
		errors.Is(err, nats.ErrAccountAuthExpired), errors.Is(err, nats.ErrSecureConnRequired), errors.Is(err, nats.ErrSecureConnWanted),
		strings.Contains(strings.ToLower(err.Error()), "authorization violation"):
		return false
	case errors.As(err, &certErr), errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &record):
		return false
	}
	return true
}

// redactURL hides credentials (user:password or a token) in NATS URLs
// before they are logged or put in errors, even in a URL that does not parse.
func redactURL(urls string) string { return redact.Text(urls, redact.Secrets(urls)...) }

// serverLogger routes nats-server's printf-style log to slog.
type serverLogger struct {
	l     *slog.Logger
	fatal chan string // the first fatal error, for StartEmbedded
}

var _ server.Logger = (*serverLogger)(nil)

func (s *serverLogger) Noticef(format string, v ...any) { s.l.Info(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Warnf(format string, v ...any)   { s.l.Warn(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Errorf(format string, v ...any)  { s.l.Error(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Debugf(format string, v ...any)  { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s *serverLogger) Tracef(format string, v ...any)  { s.l.Debug(fmt.Sprintf(format, v...)) }

// Fatalf logs at Error and does not exit: nats-server calls it for fatal
// errors of its own, and a library must not end the process.
func (s *serverLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	s.l.Error(msg, "fatal", true)
	select {
	case s.fatal <- msg:
	default:
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
