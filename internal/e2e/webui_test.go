package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/httpapi"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// uiScreenshot makes TestWebUI write the job page of its finished job to
// docs/ui.png, the README's screenshot: go test ./internal/e2e -run TestWebUI -ui-screenshot
var uiScreenshot = flag.Bool("ui-screenshot", false, "write docs/ui.png from TestWebUI")

// requireChromium finds Debian's chromium (scripts/setup.sh installs it).
// Without it the test skips, except in CI, where it fails.
func requireChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not found: run scripts/setup.sh")
	}
	t.Skip("chromium not found (run scripts/setup.sh); the web UI test needs it")
	return ""
}

// TestWebUI drives the coordinator's web UI in headless chromium over
// three real jobs (the stack, the process sandbox, the fake model): one
// fixed in its second iteration, one failed, one running. It checks what
// each job page shows, the diff between two iterations included, and the
// job list's status filter.
func TestWebUI(t *testing.T) {
	t.Parallel()
	browser := requireChromium(t)
	requireSandboxTools(t)
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(withFiles(code("6 * 6"))), sol(withFiles(code("6 * 7"))))
	fake.On("diagnosis", diagnosis(nil, failure("test_answer", messages.ErrorLogic, "assert 36 == 42", "return 6 * 7")))
	reg := prometheus.NewRegistry()
	m := metrics.NewBuilderOn(reg)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: testConfig(t, fake), Roles: []wiring.Role{wiring.RoleLocal}, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const token = "e2e-ui-token-0123456789"
	tokens, err := httpapi.ParseTokens(strings.NewReader("ui:submit:" + token))
	if err != nil {
		t.Fatal(err)
	}
	streams := &eventRequests{}
	srv := httptest.NewServer(streams.record(httpapi.Handler(st.Client, m.Handler(), httpapi.Options{Tokens: tokens})))
	defer srv.Close()

	fixedSpec := answerSpec()
	fixedSpec.Name = "answer-fixed"
	fixedSpec.Outputs["report"], fixedSpec.Outputs["charts"] = messages.TypeFile, messages.TypeDir
	fixed := runJob(t, st, fixedSpec)
	requireSuccess(t, fixed)

	fake.On("solution", fakellm.JSON(sol(code("6 * 5"))))
	failedSpec := answerSpec()
	failedSpec.Name, failedSpec.Prompt = "answer-failed", "Compute the answer (42) once more, as the output answer."
	failedSpec.Options.MaxIterations = 1
	sales := filepath.Join(t.TempDir(), "sales.csv")
	if err := os.WriteFile(sales, []byte("region,amount\nnorth,3\nsouth,5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	failedSpec.Samples = map[string]string{"sales": sales} // a data context to show
	failed := runJob(t, st, failedSpec)
	if failed.Status != messages.StatusFailed {
		t.Fatalf("the failing job: status %s (%s)", failed.Status, failed.Error)
	}
	// A submission the coordinator refuses has a result and no state; the
	// index lists it all the same.
	rejectedID := client.NewJobID()
	if err := st.Client.Submit(ctx, rejectedID, messages.JobSpec{Name: "no-prompt"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Client.Watch(ctx, rejectedID, nil); err != nil {
		t.Fatal(err)
	}

	// The running job waits on its plan: the fake model answers it after
	// the test is over.
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "slow", Approach: "slow"}).Delay(10*time.Minute))
	runningSpec := answerSpec()
	runningSpec.Name, runningSpec.Prompt = "answer-running", "Compute the answer slowly (42), as the output answer."
	runningID := client.NewJobID()
	if err := st.Client.Submit(ctx, runningID, runningSpec); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := st.Client.Status(ctx, runningID); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("the running job was never stored: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	checkEventResumption(t, srv.URL, token, fixed.JobID)
	checkDownloads(t, srv.URL, token, fixed.JobID)
	checkSummaryPages(t, srv.URL, token)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Headless, chromedp.WindowSize(1280, 1000))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil { // starts the browser, under no timeout
		t.Fatalf("start chromium: %v", err)
	}
	page := &uiPage{t: t, ctx: bctx, base: srv.URL + "/"}

	// The list asks for a token, then shows the three jobs; a filter keeps
	// the failed one.
	page.run("open the list", chromedp.Navigate(page.base), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#auth button")),
		chromedp.WaitVisible(chromedp.CSS(`tr.job[data-id="`+runningID+`"]`)))
	for _, id := range []string{fixed.JobID, failed.JobID, rejectedID} {
		page.run("list "+id, chromedp.WaitVisible(chromedp.CSS(`tr.job[data-id="`+id+`"]`)))
	}
	page.run("filter failed", chromedp.Click(chromedp.CSS(`button[data-filter="failed"]`)), chromedp.WaitVisible(chromedp.CSS(`button.on[data-filter="failed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.job[data-id="`+failed.JobID+`"]`)))
	if n := page.count(`tr.job`); n != 2 {
		t.Errorf("the failed filter shows %d jobs, want 2 (the failed and the rejected one)", n)
	}
	page.contains(`tr.job[data-id="`+rejectedID+`"]`, "invalid job spec")

	// The finished job: two iterations, the diagnosis and its route, and
	// the diff of the fix.
	page.job(fixed.JobID, `#job-status [data-status="succeeded"]`)
	page.run("iterations", chromedp.WaitVisible(chromedp.CSS(`#iterations button[data-iteration="2"].on`)))
	page.contains(`#iterations [data-role="code-diff"] .del`, "6 * 6")
	page.contains(`#iterations [data-role="code-diff"] .add`, "6 * 7")
	page.contains(`#iterations [data-role="counts"]`, "2 passed, 0 failed")
	if *uiScreenshot {
		png, err := chromedp.Run(page.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join(repoRoot(t), "docs", "ui.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	page.run("iteration 1", chromedp.Click(chromedp.CSS(`#iterations button[data-iteration="1"]`)), chromedp.WaitVisible(chromedp.CSS(`#iterations [data-role="diagnosis"]`)))
	page.contains(`#iterations [data-role="diagnosis"] tr[data-test="test_answer"]`, "return 6 * 7")
	page.contains(`#iterations [data-role="diagnosis"] tr[data-test="test_answer"]`, "fix (applied)")
	page.contains(`#iterations tr[data-test="test_answer"][data-outcome="failed"]`, "failed")
	page.contains(`#timeline tr[data-stage="run_tests"][data-iteration="2"]`, "2 passed")
	if w := page.text(`#timeline tr[data-stage="plan"] td.worker`); w == "" || w == "—" {
		t.Errorf("the plan stage names no worker: %q", w)
	}
	page.contains(`#plan`, "a function and a main block")
	page.contains(`#usage tr[data-stage="code"]`, "code")
	page.contains(`#outputs tr[data-output="answer"]`, "42")
	page.contains(`#outputs button[data-download="report"]`, "download report")
	page.contains(`#outputs button[data-download="charts"]`, "download charts.tar")
	page.contains(`#notes`, "iteration 2: every test passes")
	// The failed job: why, the failing test and pytest's output.
	page.job(failed.JobID, `#job-status [data-status="failed"]`)
	page.contains(`#job-error`, "tests still failing after 1 iterations")
	page.contains(`#iterations tr[data-test="test_answer"][data-outcome="failed"]`, "assert")
	page.contains(`#iterations [data-role="pytest-output"]`, "test_answer")
	page.contains(`#data-context`, "amount")
	page.contains(`#timeline tr[data-stage="profile"]`, "ok")

	// The running job: the stage running now, live over SSE; Rerun submits
	// its spec again (202 and the new job's ID), Cancel ends it (200 and
	// the result, which says who cancelled it).
	page.job(runningID, `#job-status [data-status="running"]`)
	page.run("running plan", chromedp.WaitVisible(chromedp.CSS(`#running li[data-stage="plan"]`)), chromedp.WaitVisible(chromedp.CSS(`#live[data-state="live"]`)))
	// A dropped stream: the page opens a new one, with a new ticket, after
	// the last event it saw, and is live again.
	opened := streams.count()
	srv.CloseClientConnections()
	resumed := streams.waitNext(t, opened)
	if resumed.Get("ticket") == "" || resumed.Get("last_event_id") == "" || resumed.Get("last_event_id") == "0" {
		t.Errorf("the page reconnected with %q, want a ticket and the last event id", resumed.Encode())
	}
	page.run("live again", chromedp.WaitVisible(chromedp.CSS(`#live[data-state="live"]`)), chromedp.WaitVisible(chromedp.CSS(`#running li[data-stage="plan"]`)))
	page.run("rerun", chromedp.Click(chromedp.CSS(`#rerun`)), chromedp.WaitVisible(chromedp.CSS(`#action-answer[data-done="1"]`)))
	if a := page.text(`#action-answer`); !regexp.MustCompile(`^202 .*: new job \S+`).MatchString(a) {
		t.Errorf("the rerun button shows %q, want 202 and the new job's ID", a)
	}
	page.run("cancel", chromedp.SetAttributeValue(chromedp.CSS(`#action-answer`), "data-done", "0"), chromedp.Click(chromedp.CSS(`#cancel`)),
		chromedp.WaitVisible(chromedp.CSS(`#action-answer[data-done="1"]`)))
	if a := page.text(`#action-answer`); !regexp.MustCompile(`^200 .*: cancelled by http:ui at `).MatchString(a) {
		t.Errorf("the cancel button shows %q, want 200 and the result saying who cancelled", a)
	}
}

// uiPage is the browser, with steps that fail the test with what they waited for.
type uiPage struct {
	t    *testing.T
	ctx  context.Context
	base string
}

func (p *uiPage) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.fail(what, err)
	}
}

func (p *uiPage) fail(what string, err error) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	p.t.Fatalf("%s: %v\npage text:\n%s", what, err, body)
}

func (p *uiPage) job(id, ready string) {
	p.t.Helper()
	p.run("open job "+id, chromedp.Navigate(p.base+"#/jobs/"+id), chromedp.WaitVisible(chromedp.CSS(ready)))
}

func (p *uiPage) text(sel string) string {
	p.t.Helper()
	p.run("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.fail("read "+sel, err)
	}
	return strings.TrimSpace(text)
}

func (p *uiPage) contains(sel, want string) {
	p.t.Helper()
	if text := p.text(sel); !strings.Contains(text, want) {
		p.t.Errorf("%s shows %q, want it to contain %q", sel, text, want)
	}
}

func (p *uiPage) count(sel string) int {
	p.t.Helper()
	n, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+"`"+sel+"`"+`).length`))
	if err != nil {
		p.fail("count "+sel, err)
	}
	return n
}

// sseEvent is one Server-Sent Event: its id, type and data.
type sseEvent struct{ id, event, data string }

// readEvents reads a finished job's events stream to its end.
func readEvents(t *testing.T, url, token, lastID string) []sseEvent {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			out = append(out, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return out
}

// checkEventResumption: every progress event has an id, and a stream
// opened with Last-Event-ID sends only the events after it, then the result.
func checkEventResumption(t *testing.T, base, token, jobID string) {
	t.Helper()
	url := base + "/v1/jobs/" + jobID + "/events"
	all := readEvents(t, url, token, "")
	if len(all) < 3 || all[len(all)-1].event != "result" {
		t.Fatalf("events of a finished job: %+v", all)
	}
	for _, e := range all[:len(all)-1] {
		if e.id == "" {
			t.Fatalf("event %s has no id", e.event)
		}
	}
	cut := len(all) - 3 // resume after the third event from the end
	resumed := readEvents(t, url, token, all[cut].id)
	var got, want []string
	for _, e := range resumed {
		got = append(got, e.id+" "+e.event)
	}
	for _, e := range all[cut+1:] {
		want = append(want, e.id+" "+e.event)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("resumed after id %s: %q, want %q", all[cut].id, got, want)
	}
	if last := readEvents(t, url+"?last_event_id="+all[len(all)-2].id, token, ""); len(last) != 1 || last[0].event != "result" {
		t.Errorf("resumed after the last event: %+v, want the result alone", last)
	}
}

// checkSummaryPages: the job index pages and filters.
func checkSummaryPages(t *testing.T, base, token string) {
	t.Helper()
	get := func(query string) client.SummaryPage {
		req, _ := http.NewRequest("GET", base+"/v1/summaries?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p client.SummaryPage
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/summaries?%s: %s %v", query, resp.Status, err)
		}
		return p
	}
	all := get("")
	if all.Total != 4 || len(all.Jobs) != 4 || all.Counts[messages.StatusFailed] != 2 {
		t.Fatalf("the index: total %d, %d jobs, counts %v; want 4 jobs, 2 failed", all.Total, len(all.Jobs), all.Counts)
	}
	second := get("limit=1&offset=1")
	if len(second.Jobs) != 1 || second.Jobs[0].JobID != all.Jobs[1].JobID || second.Total != 4 {
		t.Errorf("page 2 of 1: %+v, want %s", second.Jobs, all.Jobs[1].JobID)
	}
	for _, j := range get("status=running").Jobs {
		if j.Status != messages.StatusRunning || len(j.Running) == 0 {
			t.Errorf("a running job's line: %+v", j)
		}
	}
}

// eventRequests records the queries of the events streams the page opens.
type eventRequests struct {
	mu      sync.Mutex
	queries []url.Values
}

func (e *eventRequests) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			e.mu.Lock()
			e.queries = append(e.queries, r.URL.Query())
			e.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (e *eventRequests) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.queries)
}

// waitNext waits for a stream opened after the first n and returns its query.
func (e *eventRequests) waitNext(t *testing.T, n int) url.Values {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		if len(e.queries) > n {
			q := e.queries[n]
			e.mu.Unlock()
			return q
		}
		e.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the page did not reopen its events stream")
	return nil
}

// withFiles makes an answer script write a File output (report) and a Dir
// output (charts) too.
func withFiles(script string) string {
	return strings.Replace(script, "        f.write(str(answer()))\n", `        f.write(str(answer()))
    with open("/var/outputs/report", "w") as f:
        f.write("the answer is %d\n" % answer())
    os.makedirs("/var/outputs/charts/sub", exist_ok=True)
    with open("/var/outputs/charts/sub/a.txt", "w") as f:
        f.write("chart\n")
`, 1)
}

// checkDownloads: the job's File output downloads as is, its Dir output as
// a tar under its name.
func checkDownloads(t *testing.T, base, token, jobID string) {
	t.Helper()
	get := func(name string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", base+"/v1/jobs/"+jobID+"/outputs/"+name, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	if resp, b := get("report"); resp.StatusCode != 200 || string(b) != "the answer is 42\n" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), `filename=report`) {
		t.Errorf("GET report: %s %q %q", resp.Status, b, resp.Header.Get("Content-Disposition"))
	}
	resp, b := get("charts")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-tar" {
		t.Fatalf("GET charts: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	tr := tar.NewReader(bytes.NewReader(b))
	var files []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Typeflag == tar.TypeReg {
			files = append(files, h.Name)
		}
	}
	if strings.Join(files, ",") != "charts/sub/a.txt" {
		t.Errorf("charts.tar holds %q", files)
	}
	if resp, _ := get("answer"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET a scalar output: %s, want 404", resp.Status)
	}
}
