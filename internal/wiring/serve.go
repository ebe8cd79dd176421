package wiring

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/httpapi"
	"github.com/autocoder/autocoder/internal/metrics"
)

// server is what differs between the server binaries besides the role the
// stack starts for them.
type server struct {
	// listen is where the HTTP endpoint listens: the coordinator's API, web
	// UI and /metrics, or a worker's /metrics.
	listen func(config.Config) string
	// access is who may use that endpoint (httpapi.FromConfig).
	access func(cfg config.Config, listen string, log *slog.Logger) (httpapi.Options, error)
	// api: the endpoint serves the HTTP API (the coordinator's); a
	// worker's serves /metrics and health only. A worker's client can
	// read every job's state, and its endpoint is open by default.
	api bool
	// canEmbed: the binary takes --embedded and then hosts the NATS server.
	canEmbed bool
	// canScript: the binary calls the model, and takes --transcript
	// (AUTOCODER_TRANSCRIPT) to replay a scripted one instead (scripted.go).
	canScript bool
	// noNATS is the error when there is no NATS to join.
	noNATS string
}

// servers are the server binaries, by the role each runs.
var servers = map[Role]server{
	RoleCoordinator: {listen: func(c config.Config) string { return c.HTTPListen }, access: httpapi.FromConfig, api: true, canEmbed: true,
		noNATS: "no NATS to join: set AUTOCODER_NATS_URL, or run coordinator --embedded"},
	RoleLLMWorker: {listen: func(c config.Config) string { return c.MetricsListen }, access: httpapi.MetricsFromConfig, canScript: true,
		noNATS: "no NATS to join: set AUTOCODER_NATS_URL (a coordinator --embedded hosts one)"},
	RoleSandboxWorker: {listen: func(c config.Config) string { return c.MetricsListen }, access: httpapi.MetricsFromConfig,
		noNATS: "no NATS to join: set AUTOCODER_NATS_URL (a coordinator --embedded hosts one)"},
}

// ServeOptions are the options of a server binary.
type ServeOptions struct {
	Config   config.Config
	Logger   *slog.Logger // nil: discard
	Embedded bool         // coordinator --embedded: host NATS on Config.NATSListen
}

// Serve starts role on the stack with its HTTP endpoint and serves until ctx
// ends; then it stops the endpoint and the stack. A start-up failure is
// returned at once, as one error that says what is wrong.
func Serve(ctx context.Context, role Role, o ServeOptions) error {
	srv, ok := servers[role]
	if !ok {
		return fmt.Errorf("unknown role %q", role)
	}
	if err := o.Config.Validate(); err != nil {
		return err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := metrics.NewBuilder()
	so, err := srv.stackOptions(role, o, m)
	if err != nil {
		return err
	}
	// Before the stack starts: an API nobody may use, or anybody may, is a
	// configuration error to fix first.
	access, err := srv.access(o.Config, srv.listen(o.Config), o.Logger.With("component", "httpapi"))
	if err != nil {
		return err
	}
	if srv.canScript && o.Config.Transcript != "" {
		stop, err := scriptModel(ctx, &so, o.Logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	st, err := Start(ctx, so)
	if err != nil {
		return err
	}
	defer st.Close()
	if st.Embedded != nil {
		o.Logger.Info("embedded NATS listening", "url", st.Embedded.ClientURL(), "monitor", st.Embedded.MonitorURL())
	}
	access.Ready = st.Ready // GET /readyz
	maxConns, perClient, err := o.Config.HTTPConnLimits()
	if err != nil {
		return err
	}
	limits := httpapi.Limits{MaxConns: maxConns, MaxConnsPerClient: perClient, Logger: o.Logger.With("component", "http")}
	c := st.Client
	if !srv.api {
		c = nil // httpapi serves no route that needs one
	}
	if err := serveHTTP(ctx, srv.listen(o.Config), httpapi.Handler(c, m.Handler(), access), limits, o.Logger.With("role", role)); err != nil {
		return err
	}
	return st.Close()
}

// stackOptions is the stack that runs role: on the NATS it hosts
// (--embedded) or on the one it joins.
func (s server) stackOptions(role Role, o ServeOptions, m *metrics.Builder) (Options, error) {
	so := Options{Config: o.Config, Logger: o.Logger, Metrics: m, Roles: []Role{role}}
	switch {
	case s.canEmbed && o.Embedded:
		so.Config.NATSURL = ""
		so.EmbeddedListen = o.Config.NATSListen
	case o.Config.NATSURL == "":
		return so, errors.New(s.noNATS)
	}
	return so, nil
}

// serveHTTP serves h on addr within limits (connections per client and
// overall, request deadlines: httpapi.Limits) until ctx ends, then shuts
// down with a soft timeout. Only a failure to listen is an error.
func serveHTTP(ctx context.Context, addr string, h http.Handler, limits httpapi.Limits, log *slog.Logger) error {
	srv, err := httpapi.NewServer(addr, h, limits)
	if err != nil {
		return err
	}
	go srv.Serve()
	log.Info("serving", "http", srv.Listener.Addr().String(), "max_conns", srv.Limits.MaxConns, "max_conns_per_client", srv.Limits.MaxConnsPerClient)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// Main is the whole main of a server binary: settings from the environment
// and flags, a logger, signal handling, Serve, and the exit code.
func Main(role Role) int {
	o := ServeOptions{Config: config.FromEnv()}
	fs := flag.NewFlagSet(string(role), flag.ContinueOnError)
	o.Config.Register(fs)
	if servers[role].canEmbed {
		fs.BoolVar(&o.Embedded, "embedded", false, "host an embedded NATS server on AUTOCODER_NATS_LISTEN for other processes")
	}
	if servers[role].canScript {
		fs.StringVar(&o.Config.Transcript, "transcript", o.Config.Transcript,
			"replay this scripted model transcript instead of calling a model: an offline demo (AUTOCODER_TRANSCRIPT)")
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	o.Logger = o.Config.NewLogger(os.Stderr, slog.LevelDebug) // text or JSON lines (AUTOCODER_LOG_FORMAT)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Serve(ctx, role, o); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		return 1
	}
	return 0
}
