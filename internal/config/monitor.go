package config

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
)

// readMonitor reads the embedded NATS server's monitoring setting.
func (c *Config) readMonitor() {
	c.NATSMonitorListen = os.Getenv("AUTOCODER_NATS_MONITOR_LISTEN")
}

// registerMonitor adds its flag.
func (c *Config) registerMonitor(fs *flag.FlagSet) {
	fs.StringVar(&c.NATSMonitorListen, "nats-monitor-listen", c.NATSMonitorListen,
		"coordinator --embedded: serve the NATS server's monitoring endpoint (/varz, /jsz, /connz) on host:port; empty: off (AUTOCODER_NATS_MONITOR_LISTEN)")
}

// validateMonitor checks that NATSMonitorListen is host:port.
func (c *Config) validateMonitor() error {
	if c.NATSMonitorListen == "" {
		return nil
	}
	_, p, err := net.SplitHostPort(c.NATSMonitorListen)
	if n, perr := strconv.Atoi(p); err != nil || perr != nil || n < 0 || n > 65535 {
		return fmt.Errorf("AUTOCODER_NATS_MONITOR_LISTEN: %q is not host:port, such as 127.0.0.1:8222", c.NATSMonitorListen)
	}
	return nil
}
