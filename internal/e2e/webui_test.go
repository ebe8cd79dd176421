package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

	cdpbrowser "github.com/chromedp/cdproto/browser"
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
// real jobs (the stack, the process sandbox, the fake model): one fixed in
// its second iteration, one failed, one rejected, one started from the
// launch form with a sample file, one queued behind a paused pool and then
// running, and cancelled. It checks what each job page shows (the diff
// between two iterations, the schemas, what the model did, highlighted
// code, downloads), the queues page pausing and resuming a pool, the job
// list's filters, search and bulk actions, what a read token is offered,
// and that no page ever shows "[object ".
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
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: testConfig(t, fake), Roles: []wiring.Role{wiring.RoleLocal}, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const token, readToken = "e2e-ui-token-0123456789", "e2e-ui-read-token-0123456789"
	tokens, err := httpapi.ParseTokens(strings.NewReader("ui:submit:" + token + "\nviewer:read:" + readToken))
	if err != nil {
		t.Fatal(err)
	}
	streams := &eventRequests{}
	srv := httptest.NewServer(streams.record(httpapi.Handler(st.Client, m.Handler(), httpapi.Options{Tokens: tokens})))
	defer srv.Close()

	fixedSpec := planFirst(answerSpec()) // the timeline below shows its plan
	fixedSpec.Name = "answer-fixed"
	fixedSpec.Outputs["report"], fixedSpec.Outputs["charts"] = messages.TypeFile, messages.TypeDir
	fixed := runJob(t, st, fixedSpec)
	requireSuccess(t, fixed)

	fake.On("solution", fakellm.JSON(sol(code("6 * 5"))))
	failedSpec := planFirst(answerSpec())
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

	checkEventResumption(t, srv.URL, token, fixed.JobID)
	checkDownloads(t, srv.URL, token, fixed.JobID)
	checkSlimView(t, srv.URL, token, fixed.JobID)

	page := startBrowser(t, ctx, browser, srv.URL+"/")

	// The list asks for a token, then shows the three jobs; a filter keeps
	// the failed one.
	page.run("open the list", chromedp.Navigate(page.base), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#auth button")),
		chromedp.WaitVisible(chromedp.CSS(`tr.job[data-id="`+fixed.JobID+`"]`)))
	for _, id := range []string{fixed.JobID, failed.JobID, rejectedID} {
		page.run("list "+id, chromedp.WaitVisible(chromedp.CSS(`tr.job[data-id="`+id+`"]`)))
	}
	page.clean("the job list")
	checkRedrawKeepsDetails(t, page)
	page.run("filter failed", chromedp.Click(chromedp.CSS(`button[data-filter="failed"]`)), chromedp.WaitVisible(chromedp.CSS(`button.on[data-filter="failed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.job[data-id="`+failed.JobID+`"]`)))
	if n := page.count(`tr.job`); n != 2 {
		t.Errorf("the failed filter shows %d jobs, want 2 (the failed and the rejected one)", n)
	}
	page.contains(`tr.job[data-id="`+rejectedID+`"]`, "invalid job spec")

	checkFixedJobPage(t, page, fixed.JobID)
	checkNoStaleJobPage(t, page, streams, failed.JobID)
	// The failed job: why, the failing test and pytest's output, the data
	// context and the generated Pandera schema of its sample.
	page.job(failed.JobID, `#job-status [data-status="failed"]`)
	page.contains(`#job-error`, "tests still failing after 1 iterations")
	page.contains(`#iterations tr[data-test="test_answer"][data-outcome="failed"]`, "assert")
	page.contains(`#iterations [data-role="pytest-output"]`, "test_answer")
	page.contains(`#data-context`, "amount")
	page.contains(`#data [data-schema="sales"] pre.code`, "DataFrameSchema")
	if n := page.count(`#data [data-schema="sales"] pre.code .tok-str`); n < 2 {
		t.Errorf("the schema's strings are not highlighted: %d", n)
	}
	page.contains(`#timeline tr[data-stage="profile"]`, "ok")

	// The launched job's script takes its sample (--sales), as the
	// acceptance run passes it.
	fake.On("solution", fakellm.JSON(sol(strings.Replace(code("6 * 7"), `argparse.ArgumentParser(description="the answer").parse_args(argv)`,
		`p = argparse.ArgumentParser(description="the answer")
    p.add_argument("--sales")
    p.parse_args(argv)`, 1))))
	launched := launchFromForm(t, page, sales)
	if res, err := st.Client.Result(ctx, launched); err != nil || !strings.HasPrefix(res.Spec.Samples["sales"], "sha256:") || res.Spec.Name != "launched" {
		t.Errorf("the launched job's result: %v %+v", err, res)
	}

	// The queues page: pausing the llm pool (a provider's outage) leaves
	// the next job's plan queued, shown as queued on its page; resumed, a
	// worker takes it and the page shows it running on that worker.
	page.visit("#/queues", `#pools-table tr[data-pool="llm"]`)
	page.run("workers", chromedp.WaitVisible(chromedp.CSS(`#workers-table tr[data-pool="llm"]`)), chromedp.WaitVisible(chromedp.CSS(`#workers-table tr[data-pool="sandbox"]`)))
	page.run("pause llm", chromedp.SendKeys(chromedp.CSS(`input[data-reason="llm"]`), "provider outage"),
		chromedp.Click(chromedp.CSS(`button[data-action="pause"][data-pool="llm"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#pools-table tr[data-pool="llm"][data-paused="true"] #paused-llm`)))
	page.contains(`#pools-table tr[data-pool="llm"]`, "paused by http:ui")
	page.contains(`#pools-table tr[data-pool="llm"]`, "provider outage")
	page.clean("the queues page")

	// The running job waits on its plan: the fake model answers it after
	// the test is over.
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "slow", Approach: "slow"}).Delay(10*time.Minute))
	runningSpec := planFirst(answerSpec())
	runningSpec.Name, runningSpec.Prompt = "answer-running", "Compute the answer slowly (42), as the output answer."
	runningID := client.NewJobID()
	if err := st.Client.Submit(ctx, runningID, runningSpec); err != nil {
		t.Fatal(err)
	}
	waitStored(ctx, t, st, runningID)
	page.waitText(`#pools-table tr[data-pool="llm"] td[data-role="pending"]`, "1")
	checkResultWhileRunning(t, srv.URL, token, runningID)
	checkSummaryPages(t, srv.URL, token, runningID)
	page.job(runningID, `#job-status [data-status="running"]`)
	page.run("queued plan", chromedp.WaitVisible(chromedp.CSS(`#running li[data-stage="plan"][data-state="queued"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline tr[data-stage="plan"][data-inflight="queued"]`)))
	page.contains(`#running li[data-stage="plan"]`, "queued for")

	page.visit("#/queues", `#pools-table tr[data-pool="llm"][data-paused="true"]`)
	page.run("resume llm", chromedp.Click(chromedp.CSS(`button[data-action="resume"][data-pool="llm"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#pools-table tr[data-pool="llm"][data-paused="false"]`)))
	page.job(runningID, `#job-status [data-status="running"]`)
	page.run("running plan", chromedp.WaitVisible(chromedp.CSS(`#running li[data-stage="plan"][data-state="running"]`)), chromedp.WaitVisible(chromedp.CSS(`#live[data-state="live"]`)))
	page.contains(`#running li[data-stage="plan"]`, "running for")
	page.contains(`#running li[data-stage="plan"]`, "(queued ")
	// A dropped stream: the page opens a new one, with a new ticket, after
	// the last event it saw, and is live again.
	opened := streams.count()
	srv.CloseClientConnections()
	resumed := streams.waitNext(t, opened)
	if resumed.Get("ticket") == "" || resumed.Get("last_event_id") == "" || resumed.Get("last_event_id") == "0" {
		t.Errorf("the page reconnected with %q, want a ticket and the last event id", resumed.Encode())
	}
	page.run("live again", chromedp.WaitVisible(chromedp.CSS(`#live[data-state="live"]`)), chromedp.WaitVisible(chromedp.CSS(`#running li[data-stage="plan"][data-state="running"]`)))
	// The server out of reach for a moment (the ticket's fetch fails, as
	// on a refused connection, twice): the page keeps trying, and is live
	// again. It once gave up at the first failed fetch, "reconnecting" for
	// ever.
	streams.failTickets(2)
	opened = streams.count()
	srv.CloseClientConnections()
	streams.waitNext(t, opened)
	page.run("live after the server came back", chromedp.WaitVisible(chromedp.CSS(`#live[data-state="live"]`)))
	// Rerun submits its spec again (202 and the new job's ID), Cancel ends
	// it (200 and the result, which says who cancelled it): cancelled, with
	// the plan stopped in flight in its timeline.
	page.run("rerun", chromedp.Click(chromedp.CSS(`#rerun`)), chromedp.WaitVisible(chromedp.CSS(`#action-answer[data-done="1"]`)))
	answer := page.text(`#action-answer`)
	rerun := regexp.MustCompile(`^202 .*: new job (\S+)`).FindStringSubmatch(answer)
	if rerun == nil {
		t.Fatalf("the rerun button shows %q, want 202 and the new job's ID", answer)
	}
	page.run("cancel", chromedp.SetAttributeValue(chromedp.CSS(`#action-answer`), "data-done", "0"), chromedp.Click(chromedp.CSS(`#cancel`)),
		chromedp.WaitVisible(chromedp.CSS(`#action-answer[data-done="1"]`)))
	if a := page.text(`#action-answer`); !regexp.MustCompile(`^200 .*: cancelled by http:ui at `).MatchString(a) {
		t.Errorf("the cancel button shows %q, want 200 and the result saying who cancelled", a)
	}
	page.job(runningID, `#job-status [data-status="cancelled"]`)
	page.contains(`#timeline tr[data-stage="plan"][data-outcome="cancelled"]`, "cancelled")
	page.contains(`#job-cancelled`, "http:ui")

	checkListActions(t, page, runningID, rerun[1], launched)
	checkReadToken(t, page, readToken, fixed.JobID, rerun[1])
}

// checkNoStaleJobPage: a job page whose data arrives after another page
// was opened does not draw over it. Its fetch has resolved (headers) and
// its read of the body is held while the list opens; released, the job
// page must not replace the list. It did once: the page checked that it
// was still shown before reading the body, not after (TestWebUI failed in
// CI on it, the job page drawn over the list it had just opened).
func checkNoStaleJobPage(t *testing.T, page *uiPage, streams *eventRequests, id string) {
	t.Helper()
	held := streams.hold("/v1/jobs/" + id + "/iterations")
	page.run("open job "+id+" (its iterations held)", chromedp.Navigate(page.base+"#/jobs/"+id))
	select {
	case <-held.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the job page did not ask for its iterations")
	}
	page.visit("#/?status=failed", `tr.job[data-id="`+id+`"]`)
	close(held.release)
	<-held.done
	// The page reads the rest of the body and would draw at once; a
	// second is ample for that to have happened.
	if _, err := chromedp.Run(page.ctx, chromedp.Evaluate[chromedp.Void](`new Promise((r) => setTimeout(r, 1000))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	if n := page.count(`#job-status`); n != 0 || page.count(`tr.job[data-id="`+id+`"]`) != 1 {
		t.Errorf("the job page, loaded after the list was opened, drew over it")
	}
}

// checkFixedJobPage: the fixed job's page has its two iterations, the
// diagnosis and its route, the diff of the fix, highlighted code, what the
// model did, and its script to download.
func checkFixedJobPage(t *testing.T, page *uiPage, id string) {
	t.Helper()
	page.job(id, `#job-status [data-status="succeeded"]`)
	page.run("iterations", chromedp.WaitVisible(chromedp.CSS(`#iterations button[data-iteration="2"].on`)))
	page.contains(`#iterations [data-role="code-diff"] .del`, "6 * 6")
	page.contains(`#iterations [data-role="code-diff"] .add`, "6 * 7")
	page.contains(`#iterations [data-role="counts"]`, "2 passed, 0 failed")
	page.contains(`#activity #conversation`, "Conversation")
	if n := page.count(`#conversation li[data-role="user"]`); n == 0 {
		t.Error("the conversation shows no user message")
	}
	if *uiScreenshot {
		png, err := chromedp.Run(page.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join(repoRoot(t), "docs", "ui.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing is wider than the page: the long image name wraps.
	if wide, err := chromedp.Run(page.ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth ||
		document.getElementById("job-image").scrollWidth > document.getElementById("job-image").clientWidth`)); err != nil || wide {
		t.Errorf("the job page is wider than the window (%v)", err)
	}
	page.run("download solution.py", chromedp.Click(chromedp.CSS(`#downloads button[data-file="solution.py"]`)))
	if got := page.downloaded(t, "solution.py"); !strings.Contains(got, "return 6 * 7") {
		t.Errorf("the downloaded solution.py: %q", got)
	}
	page.run("iteration 1", chromedp.Click(chromedp.CSS(`#iterations button[data-iteration="1"]`)), chromedp.WaitVisible(chromedp.CSS(`#iterations [data-role="diagnosis"]`)))
	page.contains(`#iterations [data-role="diagnosis"] tr[data-test="test_answer"]`, "return 6 * 7")
	page.contains(`#iterations [data-role="diagnosis"] tr[data-test="test_answer"]`, "fix (applied)")
	page.contains(`#iterations tr[data-test="test_answer"][data-outcome="failed"]`, "failed")
	page.contains(`#iterations [data-role="code"] pre.code .tok-def`, "answer")
	page.contains(`#iterations [data-role="code"] pre.code .tok-kw`, "import")
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
	page.contains(`#strength-facts`, "Mutants killed") // the tests' strength by mutation
	page.clean("the fixed job's page")
}

// launchFromForm starts a job from the launch form, with sales as its
// sample file, and returns its ID once the page shows it succeeded.
func launchFromForm(t *testing.T, page *uiPage, sales string) string {
	t.Helper()
	page.visit("#/new", `#launch-form`)
	page.run("fill the launch form",
		chromedp.SendKeys(chromedp.CSS(`#f-name`), "launched"),
		chromedp.SendKeys(chromedp.CSS(`#f-prompt`), "Compute the answer (42) from the sales sample, as the output answer."),
		chromedp.SetValue(chromedp.CSS(`#outputs .row .name`), "answer"),
		chromedp.SetValue(chromedp.CSS(`#outputs .row .type`), "int"),
		chromedp.SetValue(chromedp.CSS(`#o-max_iterations`), "3"),
		chromedp.Click(chromedp.CSS(`button[data-add="samples"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#samples .row input.file`)),
		chromedp.SetUploadFiles(chromedp.CSS(`#samples .row input.file`), []string{sales}),
		chromedp.SetValue(chromedp.CSS(`#samples .row input.name`), "sales"))
	page.clean("the launch form")
	page.runFor("launch", 3*time.Minute, chromedp.Click(chromedp.CSS(`#launch`)),
		chromedp.WaitVisible(chromedp.CSS(`#job-status [data-status]`)),
		chromedp.WaitVisible(chromedp.CSS(`#job-status [data-status="succeeded"]`)))
	id := page.text(`#job-id`)
	page.contains(`#job-name`, "launched")
	page.contains(`#data-context`, "amount")
	page.clean("the launched job's page")
	return id
}

// checkListActions: the list's cancelled filter, its search, and its bulk
// cancel and rerun.
func checkListActions(t *testing.T, page *uiPage, cancelled, rerun, launched string) {
	t.Helper()
	page.visit("#/?status=cancelled", `tr.job[data-id="`+cancelled+`"]`)
	if n := page.count(`tr.job`); n != 1 {
		t.Errorf("the cancelled filter shows %d jobs, want 1", n)
	}
	// A page past the last (emptied by a bulk cancel, or a filter that now
	// matches fewer) goes back to the last page with jobs.
	page.visit("#/?status=cancelled&offset=50", `tr.job[data-id="`+cancelled+`"]`)
	if p := page.text(`#pager`); !strings.Contains(p, "1–1 of 1") {
		t.Errorf("past the last page the pager shows %q, want 1–1 of 1", p)
	}
	page.visit("#/", `#search`)
	page.run("search", chromedp.SendKeys(chromedp.CSS(`#search`), "launched"), chromedp.Click(chromedp.CSS(`#search-form button`)),
		chromedp.WaitVisible(chromedp.CSS(`tr.job[data-id="`+launched+`"]`)))
	page.waitCount(`tr.job`, 1)
	page.visit("#/?status=running", `tr.job[data-id="`+rerun+`"]`)
	page.run("bulk cancel", chromedp.Click(chromedp.CSS(`input[data-pick="`+rerun+`"]`)), chromedp.Click(chromedp.CSS(`#bulk-cancel`)),
		chromedp.WaitVisible(chromedp.CSS(`#bulk-answer[data-done="1"]`)))
	page.contains(`#bulk-answer`, "1 of 1 cancelled")
	page.visit("#/?q=launched", `tr.job[data-id="`+launched+`"]`)
	page.run("bulk rerun", chromedp.Click(chromedp.CSS(`#pick-all`)), chromedp.Click(chromedp.CSS(`#bulk-rerun`)),
		chromedp.WaitVisible(chromedp.CSS(`#bulk-answer[data-done="1"]`)))
	page.contains(`#bulk-answer`, "1 of 1 submitted again")
	page.waitCount(`tr.job`, 2) // the launched job and its rerun
	page.clean("the job list")
}

// checkReadToken: a read token is offered no Cancel, Rerun, launch, bulk
// action or pause.
func checkReadToken(t *testing.T, page *uiPage, readToken, finished, running string) {
	t.Helper()
	page.run("use the read token", chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem("autocoder-token", "`+readToken+`")`),
		chromedp.Navigate(page.base+"#/"), chromedp.Reload())
	page.job(finished, `#job-status [data-status="succeeded"]`)
	page.job(running, `#job-status [data-status]`)
	page.visit("#/", `tr.job`)
	page.visit("#/queues", `#pools-table tr[data-pool="llm"]`)
	for _, sel := range []string{`#cancel`, `#rerun`, `#edit`, `#bulk`, `#new-job`, `button[data-action="pause"]`} {
		if n := page.count(sel); n != 0 {
			t.Errorf("a read token is offered %s", sel)
		}
	}
	page.visit("#/new", `#launch-denied`)
	page.job(running, `#job-status [data-status]`)
	if n := page.count(`#cancel`) + page.count(`#rerun`); n != 0 {
		t.Errorf("a read token is offered Cancel or Rerun on a job page")
	}
}

// startBrowser starts headless chromium, saving downloads in a folder of
// the test's.
func startBrowser(t *testing.T, ctx context.Context, browser, base string) *uiPage {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Headless, chromedp.WindowSize(1280, 1000))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil { // starts the browser, under no timeout
		t.Fatalf("start chromium: %v", err)
	}
	downloads := t.TempDir()
	if err := chromedp.Do(bctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads})
		return err
	})); err != nil {
		t.Fatalf("set the download folder: %v", err)
	}
	return &uiPage{t: t, ctx: bctx, base: base, downloads: downloads}
}

// waitStored waits until the coordinator has stored job id.
func waitStored(ctx context.Context, t *testing.T, st *wiring.Stack, id string) {
	t.Helper()
	for {
		if _, err := st.Client.Status(ctx, id); err == nil {
			return
		} else if ctx.Err() != nil {
			t.Fatalf("job %s was never stored: %v", id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// uiPage is the browser, with steps that fail the test with what they waited for.
type uiPage struct {
	t         *testing.T
	ctx       context.Context
	base      string
	downloads string // where the browser saves downloads
}

func (p *uiPage) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	p.runFor(what, time.Minute, actions...)
}

func (p *uiPage) runFor(what string, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.fail(what, err)
	}
}

// visit opens a page of the UI (a hash) and waits for ready; the page
// must not show "[object ".
func (p *uiPage) visit(hash, ready string) {
	p.t.Helper()
	p.run("open "+hash, chromedp.Navigate(p.base+hash), chromedp.WaitVisible(chromedp.CSS(ready)))
	p.clean(hash)
}

// clean fails the test when the page shows a value stringified by
// mistake: "[object HTMLPreElement]", "[object Object]".
func (p *uiPage) clean(where string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		p.fail("read "+where, err)
	}
	if i := strings.Index(body, "[object "); i >= 0 {
		p.t.Errorf("%s shows %q", where, body[max(0, i-80):min(len(body), i+80)])
	}
}

// waitText waits until sel's text is want (a page that refreshes itself).
func (p *uiPage) waitText(sel, want string) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for got := ""; ; {
		if got = p.text(sel); got == want {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s shows %q, want %q", sel, got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitCount waits until n elements match sel.
func (p *uiPage) waitCount(sel string, n int) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for got := 0; ; {
		if got = p.count(sel); got == n {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%d elements match %s, want %d", got, sel, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// downloaded waits for the browser to have saved name and returns it.
func (p *uiPage) downloaded(t *testing.T, name string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(p.downloads, name)); err == nil && len(b) > 0 {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser did not save %s in %s", name, p.downloads)
		}
		time.Sleep(100 * time.Millisecond)
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
	p.clean("the page of job " + id)
}

// text reads sel's visible text once it is shown. The page re-renders
// its tables as events arrive, so the text is read in the page in one
// step (a node found by one call may be gone by the next); a read that
// finds no node waits for it again.
func (p *uiPage) text(sel string) string {
	p.t.Helper()
	quoted, _ := json.Marshal(sel)
	read := `(() => { const e = document.querySelector(` + string(quoted) + `); return e ? e.innerText : null })()`
	deadline := time.Now().Add(30 * time.Second)
	for {
		p.run("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
		text, err := chromedp.Run(p.ctx, chromedp.Evaluate[*string](read))
		if err != nil {
			p.fail("read "+sel, err)
		}
		if text != nil {
			return strings.TrimSpace(*text)
		}
		if time.Now().After(deadline) {
			p.fail("read "+sel, errors.New("the element went away each time it was read"))
		}
	}
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

// checkSummaryPages: the job index pages, filters, search, sort and
// dates; the running job's line says its plan is queued (its pool is
// paused).
func checkSummaryPages(t *testing.T, base, token, running string) {
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
	if all.Total != 5 || len(all.Jobs) != 5 || all.Counts[messages.StatusFailed] != 2 || all.Jobs[0].JobID != running {
		t.Fatalf("the index: total %d, %d jobs, counts %v; want 5 jobs, 2 failed, the running one first", all.Total, len(all.Jobs), all.Counts)
	}
	second := get("limit=1&offset=1")
	if len(second.Jobs) != 1 || second.Jobs[0].JobID != all.Jobs[1].JobID || second.Total != 5 {
		t.Errorf("page 2 of 1: %+v, want %s", second.Jobs, all.Jobs[1].JobID)
	}
	for _, j := range get("status=running").Jobs {
		if j.Status != messages.StatusRunning || len(j.Running) == 0 {
			t.Errorf("a running job's line: %+v", j)
		}
		if j.JobID == running && (len(j.Queued) != 1 || j.Queued[0] != messages.StagePlan) {
			t.Errorf("the running job's line: queued %v, want its plan", j.Queued)
		}
	}
	if p := get("q=ANSWER-FAILED"); p.Total != 1 || p.Counts[messages.StatusFailed] != 1 {
		t.Errorf("search for answer-failed: %d jobs, counts %v", p.Total, p.Counts)
	}
	if p := get("sort=oldest"); len(p.Jobs) != 5 || p.Jobs[4].JobID != running {
		t.Errorf("oldest first: the running job is not last: %+v", p.Jobs)
	}
	if p := get("since=" + time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)); p.Total != 0 {
		t.Errorf("jobs submitted from tomorrow: %d", p.Total)
	}
}

// checkResultWhileRunning: the result of a running job is 202 with the
// result so far and Retry-After, JSON; an unknown job is a JSON 404.
func checkResultWhileRunning(t *testing.T, base, token, running string) {
	t.Helper()
	get := func(path string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b := get("/v1/jobs/" + running + "/result")
	var res messages.Result
	if err := json.Unmarshal(b, &res); err != nil || resp.StatusCode != http.StatusAccepted || res.Status != messages.StatusRunning ||
		resp.Header.Get("Retry-After") == "" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("the result of a running job: %s %q %s", resp.Status, resp.Header.Get("Retry-After"), b)
	}
	resp, b = get("/v1/jobs/job-nope/result")
	var e messages.HTTPError
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != http.StatusNotFound || e.Code != messages.CodeNotFound {
		t.Errorf("the result of no job: %s %s", resp.Status, b)
	}
}

// checkSlimView: ?view=slim leaves the conversation out and keeps the
// outcome, at a fraction of the size.
func checkSlimView(t *testing.T, base, token, id string) {
	t.Helper()
	get := func(path string) []byte {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return b
	}
	full, slim := get("/v1/jobs/"+id+"/result"), get("/v1/jobs/"+id+"/result?view=slim")
	var f, s messages.Result
	if json.Unmarshal(full, &f) != nil || json.Unmarshal(slim, &s) != nil {
		t.Fatal("a result view does not decode")
	}
	if len(f.ConversationHistory) == 0 || len(s.ConversationHistory) != 0 || !s.Success || s.Solution == nil || len(s.Stages) != len(f.Stages) ||
		len(slim) >= len(full)/2 {
		t.Errorf("slim view: %d bytes of %d, %d messages, success %v", len(slim), len(full), len(s.ConversationHistory), s.Success)
	}
	t.Logf("the slim view of a job fixed in two iterations: %d bytes, the full result %d", len(slim), len(full))
}

// eventRequests records the queries of the events streams the page opens.
type eventRequests struct {
	mu      sync.Mutex
	queries []url.Values
	held    map[string]*heldBody // by path: the next response's body is held
	refuse  int                  // ticket requests still to cut off, as a server out of reach would
}

// failTickets makes the next n ticket requests fail as a fetch does when
// the server is out of reach: the connection closes with no answer.
func (e *eventRequests) failTickets(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refuse = n
}

// heldBody is a response whose headers went out and whose body waits for
// release: the page's fetch has resolved, its read of the body has not.
type heldBody struct {
	arrived, release, done chan struct{}
}

// hold holds the body of the next response to path.
func (e *eventRequests) hold(path string) *heldBody {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := &heldBody{arrived: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
	if e.held == nil {
		e.held = map[string]*heldBody{}
	}
	e.held[path] = h
	return h
}

func (e *eventRequests) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		if strings.HasSuffix(r.URL.Path, "/events") {
			e.queries = append(e.queries, r.URL.Query())
		}
		held := e.held[r.URL.Path]
		delete(e.held, r.URL.Path)
		refuse := strings.HasSuffix(r.URL.Path, "/ticket") && e.refuse > 0
		if refuse {
			e.refuse--
		}
		e.mu.Unlock()
		if refuse {
			panic(http.ErrAbortHandler) // the connection closes, no answer: fetch throws
		}
		if held == nil {
			next.ServeHTTP(w, r)
			return
		}
		defer close(held.done)
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		_, _ = w.Write(body[:1])
		w.(http.Flusher).Flush()
		close(held.arrived)
		select {
		case <-held.release:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write(body[1:])
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

// checkRedrawKeepsDetails: a live job page is drawn again whenever a stage
// ends; each <details> the user opened or closed stays so (dom.js,
// keepDetails), where the redraw closed the traceback being read. Run on
// the page's own module, in the browser.
func checkRedrawKeepsDetails(t *testing.T, page *uiPage) {
	t.Helper()
	const js = `(async () => {
  const { keepDetails, h } = await import("./ui/dom.js");
  const root = h("div", { id: "redraw-probe" });
  document.body.append(root);
  const draw = () => root.replaceChildren(h("section", { id: "case-a" },
    h("details", {}, h("summary", {}, "traceback"), "x"),
    h("details", {}, h("summary", {}, "traceback"), "y"),
    h("details", { open: true }, h("summary", {}, "pytest output"), "z")));
  draw();
  const before = root.querySelectorAll("details");
  before[1].open = true;  // opened by the user
  before[2].open = false; // closed by the user
  keepDetails(root, draw);
  const after = [...root.querySelectorAll("details")];
  root.remove();
  return after[0] !== before[0] && after.map((d) => d.open).join(",");
})()`
	got, err := chromedp.Run(page.ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("keepDetails in the browser: %v", err)
	}
	if got != "false,true,false" {
		t.Errorf("after a redraw the details are open %q, want false,true,false (as the user left them)", got)
	}
}
