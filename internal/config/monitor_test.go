package config

import (
	"flag"
	"strings"
	"testing"
)

// TestNATSMonitorListen: the setting comes from the environment or its
// flag, and an address that is not host:port is refused by name.
func TestNATSMonitorListen(t *testing.T) {
	t.Setenv("AUTOCODER_NATS_MONITOR_LISTEN", "127.0.0.1:8222")
	c := FromEnv()
	if c.NATSMonitorListen != "127.0.0.1:8222" {
		t.Errorf("from the environment: %q", c.NATSMonitorListen)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.Register(fs)
	if err := fs.Parse([]string{"--nats-monitor-listen", "0.0.0.0:0"}); err != nil {
		t.Fatal(err)
	}
	c.StateDir, c.LogLevel = t.TempDir(), "info"
	if c.NATSMonitorListen != "0.0.0.0:0" || c.Validate() != nil {
		t.Errorf("from the flag: %q, Validate %v", c.NATSMonitorListen, c.Validate())
	}
	for _, bad := range []string{"8222", "host:port", "127.0.0.1:70000", ":-1"} {
		c.NATSMonitorListen = bad
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "AUTOCODER_NATS_MONITOR_LISTEN") {
			t.Errorf("Validate with %q = %v, want an error naming the setting", bad, err)
		}
	}
}
