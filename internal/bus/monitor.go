package bus

import (
	"fmt"
	"net"
	"strconv"

	"github.com/nats-io/nats-server/v2/server"
)

// monitorOptions sets the monitoring listener of opts from addr ("" = none).
func monitorOptions(opts *server.Options, addr string) error {
	if addr == "" {
		return nil
	}
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bus: embedded server: monitor listen %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("bus: embedded server: monitor listen %q: invalid port", addr)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts.HTTPHost, opts.HTTPPort = host, port
	return nil
}

// MonitorURL is the monitoring endpoint's base URL, e.g.
// "http://127.0.0.1:8222"; "" when EmbeddedConfig.MonitorListen was empty.
func (e *Embedded) MonitorURL() string {
	addr := e.srv.MonitorAddr()
	if addr == nil {
		return ""
	}
	return "http://" + addr.String()
}
