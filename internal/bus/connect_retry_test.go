package bus_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
)

// TestConnectWaitsOutAServerThatIsStarting: a server that accepts and
// drops connections (as one still starting does) is waited out: Connect
// retries until the real server answers on that port. Before, anything but
// a refused connection or a timeout ended the process at a cluster's start.
func TestConnectWaitsOutAServerThatIsStarting(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connected := make(chan error, 1)
	go func() {
		nc, err := bus.Connect(ctx, "nats://"+addr, "test", nil)
		if err == nil {
			nc.Close()
		}
		connected <- err
	}()
	select {
	case err := <-connected:
		t.Fatalf("Connect returned while the server was starting: %v", err)
	case <-time.After(time.Second):
	}
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:" + strconv.Itoa(p), NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	if err := <-connected; err != nil {
		t.Fatalf("Connect once the server is up: %v", err)
	}
}
