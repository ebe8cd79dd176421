package wiring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestSlowConnectionFloodLeavesTheAPIAndNATSServing: with the process's
// descriptors lowered to 2048, 1,800 unauthenticated connections that
// send a request's headers and then nothing are held open against the
// coordinator's HTTP API, and a real client still submits and reads a job
// over HTTP and over the embedded NATS listener. The flood gets its
// client's cap of connections and the rest are refused at once, so the
// process keeps descriptors for its own listeners. Before, every slow
// connection was kept, the descriptors ran out (at about 20,000 with the
// default limit) and both the API and the NATS listener stopped accepting.
//
// Not parallel: it lowers the process's RLIMIT_NOFILE while it runs.
func TestSlowConnectionFloodLeavesTheAPIAndNATSServing(t *testing.T) {
	lowerOpenFiles(t, 2048)
	httpAddr, natsAddr := freeAddr(t), freeAddr(t)
	cfg := config.FromEnv()
	cfg.StateDir = t.TempDir()
	cfg.NATSURL, cfg.RedisURL = "", ""
	cfg.NATSListen, cfg.HTTPListen = natsAddr, httpAddr
	cfg.HTTPAuth, cfg.NATSAuth, cfg.NATSUsersFile = config.HTTPAuthNone, config.NATSAuthNone, ""
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- wiring.Serve(ctx, wiring.RoleCoordinator, wiring.ServeOptions{Config: cfg, Embedded: true})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	waitHealthy(t, "http://"+httpAddr+"/healthz", served)

	const flood = 1800
	held := 0
	for i := range flood {
		c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).Dial("tcp", httpAddr)
		if err != nil {
			t.Fatalf("slow connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := fmt.Fprintf(c, "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{"); err == nil {
			held++
		}
	}
	t.Logf("%d slow connections sent their headers", held)

	spec := messages.JobSpec{Prompt: "Compute 42 and write it as the output answer.", Outputs: map[string]messages.Type{"answer": messages.TypeInt}}
	body, _ := json.Marshal(messages.APIRequest{Spec: &spec})
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post("http://"+httpAddr+"/v1/jobs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("submit over HTTP during the flood: %v", err)
	}
	var reply messages.APIReply
	_ = json.NewDecoder(resp.Body).Decode(&reply)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || reply.JobID == "" {
		t.Fatalf("submit over HTTP: %d %+v", resp.StatusCode, reply)
	}
	// The job is queued at once and exists once the coordinator takes it.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		resp, err = client.Get("http://" + httpAddr + "/v1/jobs/" + reply.JobID)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("read the job over HTTP during the flood: %v, %v", resp, err)
		}
	}

	producer := cfg
	producer.NATSURL, producer.StateDir = "nats://"+natsAddr, t.TempDir()
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	st, err := wiring.Start(sctx, wiring.Options{Config: producer, ConnectTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("connect to the embedded NATS during the flood: %v", err)
	}
	defer st.Close()
	nr, err := st.Client.SubmitRequest(sctx, messages.APIRequest{Spec: &spec})
	if err != nil || nr.JobID == "" {
		t.Fatalf("submit over NATS during the flood: %+v, %v", nr, err)
	}
	// The job is queued at once and exists once the coordinator takes it.
	for {
		res, err := st.Client.Status(sctx, nr.JobID)
		if err == nil && res.Status == messages.StatusRunning {
			break
		}
		if sctx.Err() != nil {
			t.Fatalf("read the job over NATS during the flood: %+v, %v", res, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lowerOpenFiles sets the process's soft RLIMIT_NOFILE to n until the test ends.
func lowerOpenFiles(t *testing.T, n uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lowered := old
	lowered.Cur = min(n, old.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitHealthy(t *testing.T, url string, served <-chan error) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-served:
			t.Fatalf("Serve returned: %v", err)
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		} else if !strings.Contains(err.Error(), "refused") {
			t.Logf("waiting for %s: %v", url, err)
		}
	}
	t.Fatalf("%s did not answer within a minute", url)
}
