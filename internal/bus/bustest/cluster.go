package bustest

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a NATS cluster of in-process servers with JetStream on
// loopback, each with its own store: for tests of replication. Node i
// may be stopped and started again on the same ports and store.
type Cluster struct {
	t      testing.TB
	name   string
	dir    string
	client []int // client port of each node
	route  []int // cluster port of each node
	nodes  []*server.Server

	// MaxStore is each node's JetStream storage limit (max_file_store),
	// set before a node starts; 0 is nats-server's default, three
	// quarters of the free disk.
	MaxStore int64
}

// StartCluster starts n servers (all of them when start is true; else
// none: Start each) and stops them in t.Cleanup.
func StartCluster(t testing.TB, n int, start bool) *Cluster {
	t.Helper()
	c := &Cluster{t: t, name: "autocoder-test", dir: t.TempDir(), nodes: make([]*server.Server, n)}
	for range n {
		c.client = append(c.client, freePort(t))
		c.route = append(c.route, freePort(t))
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.Stop(i)
		}
	})
	if start {
		for i := range n {
			c.Start(i)
		}
		c.WaitReady(30 * time.Second)
	}
	return c
}

// URLs is the client URL list of every node, comma separated.
func (c *Cluster) URLs() string {
	var urls []string
	for _, p := range c.client {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(urls, ",")
}

// Start starts node i (on its ports and store); it does not wait for
// JetStream (WaitReady does).
func (c *Cluster) Start(i int) {
	c.t.Helper()
	var routes []string
	for j, p := range c.route {
		if j != i {
			routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
		}
	}
	opts := &server.Options{
		ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: c.client[i],
		JetStream: true, StoreDir: filepath.Join(c.dir, fmt.Sprintf("n%d", i+1)), JetStreamMaxStore: c.MaxStore,
		Cluster: server.ClusterOpts{Name: c.name, Host: "127.0.0.1", Port: c.route[i]},
		Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		NoSigs:  true, NoLog: true,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		c.t.Fatalf("bustest: cluster node %d: %v", i+1, err)
	}
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		c.t.Fatalf("bustest: cluster node %d not ready", i+1)
	}
	c.nodes[i] = s
}

// Stop shuts node i down, if it runs.
func (c *Cluster) Stop(i int) {
	if s := c.nodes[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.nodes[i] = nil
	}
}

// WaitReady waits until every running node has a JetStream meta leader.
func (c *Cluster) WaitReady(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		leader, current := false, true
		for _, s := range c.nodes {
			if s != nil {
				leader = leader || s.JetStreamIsLeader()
				current = current && s.JetStreamIsCurrent()
			}
		}
		if leader && current {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("bustest: cluster has no JetStream leader after %s", timeout)
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
