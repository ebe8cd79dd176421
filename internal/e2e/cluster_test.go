package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestClusterNodeKilledMidJobs: three nats-server processes on loopback
// (built from the nats-server module this repository embeds), as a
// JetStream cluster that flushes every write (sync_interval: always, as
// deploy/compose/nats.conf does); the coordinator provisions everything
// with 3 replicas, and jobs run through the coordinator and both workers.
// While they run, the node leading the job-state bucket is SIGKILLed and
// brought back. Every job ends right, none is lost, and no model call is
// made twice beyond the calls that were in flight at the kill.
func TestClusterNodeKilledMidJobs(t *testing.T) {
	requireSandboxTools(t)
	cl := startNATSCluster(t, 3)
	fake := fakellm.New()
	defer fake.Close()
	const jobs = 6
	plan := fakellm.JSON(messages.Plan{Description: "return 42", Approach: "a function"}).Delay(300 * time.Millisecond)
	fake.On("plan", plan)
	fake.On("solution", fakellm.JSON(sol(code("6 * 7"))).Delay(300*time.Millisecond))
	fake.On("tests", fakellm.JSON(messages.Tests{Code: answerTests}).Delay(300*time.Millisecond))
	fake.On("packages", fakellm.JSON(messages.Packages{Packages: []string{}}))

	cfg := testConfig(t, fake)
	cfg.NATSURL = cl.URLs()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}, Provision: bus.ProvisionConfig{Replicas: 3}})
	if err != nil {
		t.Fatalf("start the stack on the cluster: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if s, err := st.JS.Stream(ctx, "KV_"+bus.BucketJobState); err != nil || s.CachedInfo().Config.Replicas != 3 {
		t.Fatalf("job state bucket: %v replicas, %v; want 3", s, err)
	}

	jobCtx, jobCancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer jobCancel()
	ids := make([]string, jobs)
	for i := range ids {
		spec := answerSpec()
		spec.Prompt = fmt.Sprintf("%s (job %d of the cluster test)", spec.Prompt, i)
		ids[i] = client.NewJobID()
		if err := st.Client.Submit(jobCtx, ids[i], spec); err != nil {
			t.Fatalf("submit job %d: %v", i, err)
		}
	}
	for len(fake.Requests()) < jobs { // under way: about a third of the model calls made
		if jobCtx.Err() != nil {
			t.Fatal("the jobs did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	victim := cl.leaderOf(t, "KV_"+bus.BucketJobState)
	before := len(fake.Requests())
	cl.kill(t, victim)
	t.Logf("killed node %d (the job state's leader) after %d model calls", victim+1, before)
	time.Sleep(3 * time.Second)
	cl.start(t, victim)

	for i, id := range ids {
		res, err := st.Client.Watch(jobCtx, id, nil)
		if err != nil {
			t.Fatalf("job %d (%s) lost: %v\nnode logs:\n%s", i, id, err, cl.logs())
		}
		if !res.Success || res.Outputs["answer"] != float64(42) {
			t.Errorf("job %d: success %v, outputs %v, error %s", i, res.Success, res.Outputs, res.Error)
		}
	}
	// Each job asks plan, solution and tests once; a call in flight when
	// the node died may be asked again, no other.
	asked := map[string]int{}
	for _, r := range fake.Requests() {
		for i := range jobs {
			if strings.Contains(fmt.Sprint(r.Messages), fmt.Sprintf("(job %d of the cluster test)", i)) {
				asked[fmt.Sprintf("%d/%s", i, r.SchemaName)]++
			}
		}
	}
	again := 0
	for call, n := range asked {
		if n > 2 {
			t.Errorf("%s asked %d times", call, n)
		}
		again += n - 1
	}
	// The one-round first pass: a code call (with its plan) and a tests call a job.
	if inFlight := 4; again > inFlight || len(asked) != 2*jobs {
		t.Errorf("model calls %v: %d asked again (at most the %d slots in flight), %d distinct (want %d)", asked, again, inFlight, len(asked), 2*jobs)
	}
	t.Logf("%d model calls for %d jobs, %d asked again", len(fake.Requests()), jobs, again)
}

// natsCluster is nats-server processes clustered on loopback, each with its
// configuration file and store, so a node can be killed and started again
// as it was.
type natsCluster struct {
	bin   string
	dir   string
	ports []int
	mu    sync.Mutex
	procs []*exec.Cmd
	out   []*lockedBuffer
}

// startNATSCluster builds nats-server from the module this repository
// embeds (the same version) and starts n nodes.
func startNATSCluster(t *testing.T, n int) *natsCluster {
	t.Helper()
	c := &natsCluster{bin: filepath.Join(t.TempDir(), "nats-server"), dir: t.TempDir(),
		procs: make([]*exec.Cmd, n), out: make([]*lockedBuffer, n)}
	build := exec.Command("go", "build", "-o", c.bin, "github.com/nats-io/nats-server/v2")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build nats-server: %v\n%s", err, out)
	}
	routes := make([]int, n)
	for i := range n {
		c.ports = append(c.ports, freePort(t))
		routes[i] = freePort(t)
	}
	for i := range n {
		var peers []string
		for j, r := range routes {
			if j != i {
				peers = append(peers, fmt.Sprintf("nats-route://127.0.0.1:%d", r))
			}
		}
		conf := fmt.Sprintf("server_name: n%d\nlisten: 127.0.0.1:%d\njetstream {\n  store_dir: %q\n  sync_interval: always\n}\n"+
			"cluster {\n  name: autocoder-e2e\n  listen: 127.0.0.1:%d\n  routes: [%s]\n}\n",
			i+1, c.ports[i], filepath.Join(c.dir, fmt.Sprintf("n%d", i+1)), routes[i], strings.Join(peers, ", "))
		if err := os.WriteFile(c.conf(i), []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range n {
			c.kill(t, i)
		}
	})
	for i := range n {
		c.start(t, i)
	}
	c.waitLeader(t)
	return c
}

func (c *natsCluster) conf(i int) string { return filepath.Join(c.dir, fmt.Sprintf("n%d.conf", i+1)) }

// URLs lists every node, as a client's AUTOCODER_NATS_URL does.
func (c *natsCluster) URLs() string {
	var urls []string
	for _, p := range c.ports {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(urls, ",")
}

func (c *natsCluster) start(t *testing.T, i int) {
	t.Helper()
	cmd := exec.Command(c.bin, "-c", c.conf(i))
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node %d: %v", i+1, err)
	}
	c.mu.Lock()
	c.procs[i], c.out[i] = cmd, out
	c.mu.Unlock()
	waitListening(t, c.ports[i])
}

// kill SIGKILLs node i, if it runs, and reaps it.
func (c *natsCluster) kill(t *testing.T, i int) {
	c.mu.Lock()
	cmd := c.procs[i]
	c.procs[i] = nil
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
}

// waitLeader waits until JetStream answers on the cluster.
func (c *natsCluster) waitLeader(t *testing.T) {
	t.Helper()
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
	}
	t.Fatalf("the cluster has no JetStream leader after a minute:\n%s", c.logs())
}

// leaderOf is the index of the node that leads stream.
func (c *natsCluster) leaderOf(t *testing.T, stream string) int {
	t.Helper()
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil || s.CachedInfo().Cluster == nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	var i int
	if _, err := fmt.Sscanf(s.CachedInfo().Cluster.Leader, "n%d", &i); err != nil {
		t.Fatalf("leader %q of %s", s.CachedInfo().Cluster.Leader, stream)
	}
	return i - 1
}

func (c *natsCluster) logs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for i, o := range c.out {
		if o != nil {
			fmt.Fprintf(&b, "--- n%d (last 2000 bytes)\n%s\n", i+1, tail(o.String(), 2000))
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
