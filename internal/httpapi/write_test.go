package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestWriteEndpointsWithoutCoordinator: over a NATS with no coordinator,
// the write endpoints still refuse what is invalid with the field (checked
// here first), answer 503 for what only a coordinator can accept, and
// upload samples and list dead letters, which need none.
func TestWriteEndpointsWithoutCoordinator(t *testing.T) {
	t.Parallel()
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	c := client.New(be.JS, be.Resources, be.Publisher)
	srv := httptest.NewServer(Handler(c, nil, Options{Open: true}))
	t.Cleanup(srv.Close)
	call := func(method, path, body string, header ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/v1/jobs", `{"v":1,"spec":{"prompt":"p","outputs":{"a":"int"}}}`, 503, `"kind":"unavailable"`},
		{"POST", "/v1/jobs", `{"v":1,"spec":{"prompt":"p","outputs":{"a":"complex"}}}`, 400, `"field":"spec.outputs.a"`},
		{"POST", "/v1/jobs", `not json`, 400, `malformed JSON`},
		{"POST", "/v1/jobs/job-1/run", `{"args":{"x":"1"},"bogus":1}`, 400, `"field":"bogus"`},
		{"POST", "/v1/jobs/a.b/run", `{}`, 400, `"code":"invalid","field":"id"`},
		{"POST", "/v1/tasks/t1/run", `{}`, 503, `"kind":"unavailable"`},
		// A run's settings are checked here first, with the field.
		{"POST", "/v1/jobs/job-1/run", `{"options":{"resources":{"memory":"lots"}}}`, 400, `"field":"options.resources.memory"`},
		{"POST", "/v1/jobs/job-1/run", `{"options":{"timeout":"2s","env_vars":{"LD_PRELOAD":"x"}}}`, 400, `"field":"options.env_vars.LD_PRELOAD"`},
		{"POST", "/v1/tasks/t1/run", `{"options":{"cache":"sometimes"}}`, 400, `"field":"options.cache"`},
		{"POST", "/v1/tasks/t1/run", `{"options":{"retries":2,"secrets":["DB_URL"],"timeout":"2s"}}`, 503, `"kind":"unavailable"`},
		// Tasks are kept in their bucket: no coordinator needed.
		{"GET", "/v1/tasks", "", 200, `[]`},
		{"GET", "/v1/tasks/t1", "", 404, `{"error":"no such task","code":"not_found"}`},
		// Every error answer is JSON, these too.
		{"GET", "/v1/codemode/tools", "", 400, `"code":"invalid"`},
		{"POST", "/v1/tasks/t1", `{"job_id":"job-1"}`, 400, `"field":"job_id"`},
		{"POST", "/v1/tasks/t1", `{"job_id":"job-1","defaults":{"timeout":"2h"}}`, 400, `"field":"defaults.timeout"`},
		{"POST", "/v1/tasks/bad.name", `{"job_id":"job-1"}`, 400, `"field":"task"`},
		{"POST", "/v1/samples?name=data.csv", "a,b\n1,2\n", 201, `"object":"sha256:`},
		{"POST", "/v1/samples", "x", 400, `name= is required`},
		{"POST", "/v1/pools/gpu/pause", "", 404, `"code":"not_found"`},
		{"POST", "/v1/pools/llm/pause", `{"why":"x"}`, 400, `"field":"reason"`},
		{"GET", "/v1/nothing", "", 404, `"code":"not_found"`},
		{"GET", "/v1/dlq", "", 200, `[]`},
		{"GET", "/v1/dlq/5", "", 404, `no such dead letter`},
		{"POST", "/v1/dlq/zero/replay", "", 400, `"code":"invalid","field":"seq"`},
		{"POST", "/v1/dlq/5/replay", "", 503, `no coordinator`},
	}
	for _, tc := range tests {
		status, body := call(tc.method, tc.path, tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s; want %d with %q", tc.method, tc.path, status, body, tc.status, tc.want)
		}
	}
	// A body over its bound is 413; one that could not be read for any
	// other reason (a malformed chunk here) is 400: the client must not
	// be told to make it smaller.
	if status, body := call("POST", "/v1/jobs", strings.Repeat(" ", maxRequestBytes+1)); status != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"code":"too_large"`) {
		t.Errorf("a body over the bound: %d %s, want 413", status, body)
	}
	if status, body := call("POST", "/v1/jobs/job-1/cancel", `{"reason":"`+strings.Repeat("x", maxCancelBody)+`"}`); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a cancel body over its bound: %d %s, want 413", status, body)
	}
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /v1/jobs HTTP/1.1\r\nHost: "+srv.Listener.Addr().String()+"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if status, err := bufio.NewReader(conn).ReadString('\n'); err != nil || !strings.Contains(status, " 400 ") {
		t.Errorf("a malformed chunked body: %q (%v), want 400", status, err)
	}
	// A browser's request from another site changes nothing (auth none
	// has no token to stop it); one from the UI's own origin, and one
	// from a client that is not a browser, go through.
	for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "https://evil.example"}} {
		if status, body := call("POST", "/v1/pools/llm/pause", ``, h...); status != http.StatusForbidden || !strings.Contains(body, "cross-origin") {
			t.Errorf("a cross-origin pause (%s: %s): %d %s, want 403", h[0], h[1], status, body)
		}
	}
	if status, _ := call("POST", "/v1/jobs", `{"v":1,"spec":{"prompt":"p","outputs":{"a":"int"}}}`, "Sec-Fetch-Site", "same-origin"); status != 503 {
		t.Errorf("a same-origin submit: %d, want it through (503: no coordinator)", status)
	}
	if status, _ := call("GET", "/v1/tasks", "", "Sec-Fetch-Site", "cross-site"); status != 200 {
		t.Errorf("a cross-origin read: %d, want 200 (reads change nothing)", status)
	}
	// The uploaded sample is in the store under its hash.
	_, body := call("POST", "/v1/samples?name=data.csv", "a,b\n1,2\n")
	var up struct{ Object string }
	if err := json.Unmarshal([]byte(body), &up); err != nil {
		t.Fatal(err)
	}
	ref, ok := messages.ParseObjectRef(up.Object)
	if !ok || ref.Ext != ".csv" {
		t.Fatalf("uploaded object %q", up.Object)
	}
	if _, err := be.Resources.Samples.GetInfo(t.Context(), ref.ObjectName()); err != nil {
		t.Errorf("uploaded sample not in the store: %v", err)
	}
}

// TestSampleUploadsAreBounded: an upload that says it is over the bound is
// refused before a byte is read, and past maxUploads uploads in progress
// the next is told to retry, not spooled to disk beside them.
func TestSampleUploadsAreBounded(t *testing.T) {
	t.Parallel()
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	c := client.New(be.JS, be.Resources, be.Publisher)
	h, a := handler(c, nil, Options{Open: true})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	post := func(body io.Reader, length int64) *http.Response {
		t.Helper()
		req, err := http.NewRequest("POST", srv.URL+"/v1/samples?name=data.csv", body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = length
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// Said to be over the bound: answered without the body being sent.
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /v1/samples?name=data.csv HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n", messages.MaxSampleBytes+1)
	status, err := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if err != nil || !strings.Contains(status, "413") {
		t.Errorf("an upload said to be over the bound: %q (%v), want 413", status, err)
	}
	// maxUploads uploads whose bodies have not ended hold their slots.
	var writers []*io.PipeWriter
	done := make(chan *http.Response, maxUploads)
	for range maxUploads {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		go func() { done <- post(pr, -1) }()
		if _, err := pw.Write([]byte("a,b\n")); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(time.Minute); len(a.uploads) < maxUploads; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d uploads hold a slot, want %d", len(a.uploads), maxUploads)
		}
	}
	resp := post(strings.NewReader("a,b\n1,2\n"), -1)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("an upload past %d in progress: %s, want 503 with Retry-After", maxUploads, resp.Status)
	}
	for _, pw := range writers {
		pw.Close()
	}
	for range maxUploads {
		if r := <-done; r.StatusCode != http.StatusCreated {
			t.Errorf("an upload in progress: %s, want 201", r.Status)
		}
	}
	if resp := post(strings.NewReader("a,b\n1,2\n"), -1); resp.StatusCode != http.StatusCreated {
		t.Errorf("an upload once the others ended: %s, want 201", resp.Status)
	}
}
