package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/httpapi"
	"github.com/autocoder/autocoder/internal/stack"
)

// Role is which server binary this is.
type Role string

const (
	RoleCoordinator   Role = "coordinator"
	RoleLLMWorker     Role = "llm-worker"
	RoleSandboxWorker Role = "sandbox-worker"
)

// Options of a server binary.
type Options struct {
	Role     Role
	Config   config.Config
	Logger   *slog.Logger
	Embedded bool // coordinator --embedded: host NATS on Config.NATSListen
	// Ready, if set, is called with the HTTP address once serving.
	Ready func(httpAddr string)
}

// Run runs one server binary until ctx ends.
func Run(ctx context.Context, o Options) error {
	cfg := o.Config
	if err := cfg.Validate(); err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	so := stack.Options{Config: cfg, Logger: o.Logger, Registry: reg, Roles: []stack.Role{stack.Role(o.Role)}}
	listen := cfg.MetricsListen
	switch o.Role {
	case RoleCoordinator:
		listen = cfg.HTTPListen
		if o.Embedded {
			so.Config.NATSURL = ""
			so.EmbeddedListen = cfg.NATSListen
		} else if cfg.NATSURL == "" {
			return errors.New("no NATS to join: set AUTOCODER_NATS_URL, or run coordinator --embedded")
		}
	case RoleLLMWorker, RoleSandboxWorker:
		if cfg.NATSURL == "" {
			return errors.New("no NATS to join: set AUTOCODER_NATS_URL (a coordinator --embedded hosts one)")
		}
	default:
		return fmt.Errorf("unknown role %q", o.Role)
	}
	st, err := stack.Start(ctx, so)
	if err != nil {
		return err
	}
	defer st.Close()
	if st.Embedded != nil {
		o.Logger.Info("embedded NATS listening", "url", st.Embedded.ClientURL())
	}

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", listen, err)
	}
	srv := &http.Server{Handler: httpapi.Handler(st.Client, reg), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	o.Logger.Info("serving", "role", o.Role, "http", ln.Addr().String())
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return st.Close()
}

// Main is the whole main of a server binary: settings from the environment
// and flags, a logger, signal handling, Run, and the exit code.
func Main(role Role) int {
	cfg := config.FromEnv()
	fs := flag.NewFlagSet(string(role), flag.ContinueOnError)
	cfg.Register(fs)
	var embedded *bool
	if role == RoleCoordinator {
		embedded = fs.Bool("embedded", false, "host an embedded NATS server on AUTOCODER_NATS_LISTEN for other processes")
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := Options{Role: role, Config: cfg, Logger: log}
	if embedded != nil {
		o.Embedded = *embedded
	}
	if err := Run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		return 1
	}
	return 0
}
