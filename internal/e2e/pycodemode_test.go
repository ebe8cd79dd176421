package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/httpapi"
	"github.com/autocoder/autocoder/internal/submit"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// End-to-end tests of issue 20 around the Python interpreter: embedded
// NATS, the fake model over real HTTP, the process sandbox.

// TestCodeModeMaxRetriesZero: max_retries 0 is no retry: the one program
// fails (a Python exception), and the job fails after one model turn.
func TestCodeModeMaxRetriesZero(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	fake.On(fakellm.NoSchema, fakellm.Text("```python\nitems = {}\nitems['missing']\n```"), fakellm.Text("```python\n1\n```"))
	st := startLocal(t, testConfig(t, fake))
	zero := 0
	res := runJob(t, st, messages.JobSpec{Mode: messages.ModeCodeMode, CodeModeSpec: messages.CodeModeSpec{
		Message: "What is in items?", MaxRetries: &zero,
	}})
	if res.Success || res.CodeMode == nil || res.CodeMode.Turns != 1 || len(fake.Requests()) != 1 {
		t.Fatalf("success %v, %d model requests, codemode %+v: want a failure after 1 turn", res.Success, len(fake.Requests()), res.CodeMode)
	}
	if !strings.Contains(res.Error, "max_retries reached: no program succeeded in 1 attempts") || !strings.Contains(res.Error, "KeyError: 'missing'") {
		t.Fatalf("error %q", res.Error)
	}
}

// TestCodeModeAliasChartsAndToolsListing: a tool served as get_weather is
// shown to the program as weather (--tool weather=get_weather); the
// program, plain Python as models write it, draws a chart (an SVG) and
// writes a table under /var/outputs; the result lists both, the chart
// under charts, and the HTTP API serves the chart's bytes. The tools
// listing (CLI and HTTP) shows the tool under its alias, as the model
// sees it in its prompt.
func TestCodeModeAliasChartsAndToolsListing(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	program := `temps = {}
for city in ["Paris", "Oslo", "Atlantis"]:
    try:
        temps[city] = weather(city)["temp_c"]
    except ToolError as e:
        print(f"skipped {city}: {e.message}")
bars = "".join(f'<rect x="{i * 30}" y="{100 - t * 2}" width="20" height="{t * 2}"/>' for i, t in enumerate(temps.values()))
with open(f"{OUTPUTS}/temps.svg", "w") as f:
    f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">{bars}</svg>')
with open(f"{OUTPUTS}/temps.csv", "w") as f:
    f.write("city,temp_c\n" + "".join(f"{c},{t}\n" for c, t in temps.items()))
{"mean": round(sum(temps.values()) / len(temps), 1), **temps}`
	fake.On(fakellm.NoSchema, fakellm.Text("```python\n"+program+"\n```"), fakellm.Text("Paris 21, Oslo 8: a mean of 14.5."))
	port := freePort(t)
	cfg := testConfig(t, fake)
	cfg.NATSAuth = config.NATSAuthNone
	browser := requireChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}, EmbeddedListen: fmt.Sprintf("127.0.0.1:%d", port)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := codemode.ServeTool(st.Conn, codemode.Tool{Name: "get_weather", Doc: "Current weather of a city: {city, temp_c}.",
		Params: []codemode.Param{{Name: "city", Type: codemode.TypeStr, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) {
			t, ok := map[string]int{"Paris": 21, "Oslo": 8}[args["city"].(string)]
			if !ok {
				return nil, fmt.Errorf("unknown city %s", args["city"])
			}
			return map[string]any{"city": args["city"], "temp_c": t}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Stop() }()

	res := runJob(t, st, messages.JobSpec{Mode: messages.ModeCodeMode, CodeModeSpec: messages.CodeModeSpec{
		Message: "Mean temperature of Paris and Oslo, with a chart?", Tools: []string{"weather=get_weather"}, MaxTurns: 3,
	}})
	if !res.Success || res.CodeMode == nil {
		t.Fatalf("job %s: %s", res.Status, res.Error)
	}
	cm := res.CodeMode
	if string(cm.Value) != `{"Oslo":8,"Paris":21,"mean":14.5}` {
		t.Fatalf("value %s", cm.Value)
	}
	if len(cm.Charts) != 1 || cm.Charts[0].Name != "temps.svg" || cm.Charts[0].ContentType != "image/svg+xml" || len(cm.Outputs) != 2 {
		t.Fatalf("charts %+v, outputs %+v", cm.Charts, cm.Outputs)
	}
	if obs := cm.Events[1].Observation; !strings.Contains(obs, "skipped Atlantis: unknown city Atlantis") {
		t.Fatalf("observation %q", obs)
	}
	prompt := fake.Requests()[0].Messages[0].Content
	if !strings.Contains(prompt, `"name":"weather"`) || strings.Contains(prompt, `"name":"get_weather"`) || !strings.Contains(prompt, "ToolError") {
		t.Fatalf("the system prompt does not show the alias (or Python's rules):\n%s", prompt)
	}

	const token = "e2e-read-token-pycodemode-0123"
	tokens, err := httpapi.ParseTokens(strings.NewReader("ui:read:" + token))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.Handler(st.Client, nil, httpapi.Options{Tokens: tokens}))
	defer srv.Close()
	get := func(path string) (int, string, string) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	code, ctype, body := get("/v1/jobs/" + res.JobID + "/files/temps.svg")
	if code != 200 || ctype != "image/svg+xml" || !strings.HasPrefix(body, "<svg") || int64(len(body)) != cm.Charts[0].Size {
		t.Fatalf("chart: %d %s %q", code, ctype, body)
	}
	if code, _, _ := get("/v1/jobs/" + res.JobID + "/files/nope.png"); code != 404 {
		t.Fatalf("a file the job has not: %d", code)
	}
	code, _, body = get("/v1/codemode/tools?tool=weather=get_weather")
	var listed []struct {
		Name string `json:"name"`
		Doc  string `json:"doc"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &listed) != nil || len(listed) != 1 || listed[0].Name != "weather" || !strings.Contains(body, "Current weather") {
		t.Fatalf("tools listing over HTTP: %d %s", code, body)
	}
	if code, _, body := get("/v1/codemode/tools?tool=nothing_served"); code != 404 || !strings.Contains(body, "no process serves the tool nothing_served") {
		t.Fatalf("listing an unserved tool: %d %s", code, body)
	}

	checkChartInBrowser(ctx, t, browser, srv.URL+"/", token, res.JobID)

	remote := testConfig(t, fake)
	remote.NATSURL = fmt.Sprintf("nats://127.0.0.1:%d", port)
	var stdout, stderr bytes.Buffer
	if rc := submit.Run(ctx, []string{"codemode", "tools", "--tool", "weather=get_weather"}, remote, submit.IO{Stdout: &stdout, Stderr: &stderr}); rc != 0 {
		t.Fatalf("submit codemode tools: exit %d: %s", rc, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"name": "weather"`) || !strings.Contains(stdout.String(), `"city"`) {
		t.Fatalf("submit codemode tools printed:\n%s", stdout.String())
	}
}

// TestCodeRunnerOutputAndImportCheck: the code runner's script imports a
// module the model forgot to list (its package is in a local wheelhouse,
// like an index): the import check in the sandbox finds it missing before
// the run, the package is added and the environment rebuilt, and the
// script then runs; what it printed is on the result.
func TestCodeRunnerOutputAndImportCheck(t *testing.T) {
	t.Parallel()
	wheels := t.TempDir()
	buildWheel(t, wheels, "zrl_helpers", "zrl_helpers", "def double(x):\n    return 2 * x\n")
	fake := fakellm.New()
	defer fake.Close()
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "double", Approach: "use zrl_helpers"}))
	code := "import argparse\nimport zrl_helpers\n\ndef main():\n    print('doubled:', zrl_helpers.double(21))\n    with open('/var/outputs/answer', 'w') as f:\n        f.write(str(zrl_helpers.double(21)))\n\nif __name__ == '__main__':\n    main()\n"
	fake.On("solution", fakellm.JSON(messages.Solution{Language: "python", Code: code, Packages: []string{}, SystemPackages: []string{}}))
	fake.On("packages", fakellm.JSON(map[string]any{"packages": []string{}})) // the model forgets it
	cfg := testConfig(t, fake)
	cfg.PipFindLinks = wheels
	st := startLocal(t, cfg)
	res := runJob(t, st, messages.JobSpec{
		Prompt:  "Print and write the double of 21.",
		Outputs: map[string]messages.Type{"answer": messages.TypeInt},
		Options: messages.Options{Validate: messages.ValidateRun, MaxIterations: 3},
	})
	if !res.Success {
		t.Fatalf("job %s: %s\nnotes: %s", res.Status, res.Error, strings.Join(res.Notes, "\n"))
	}
	if !strings.Contains(res.Output, "doubled: 42") || res.Outputs["answer"] != 42.0 {
		t.Fatalf("result output %q, outputs %v: want what the run printed", res.Output, res.Outputs)
	}
	notes := strings.Join(res.Notes, "\n")
	if !strings.Contains(notes, "imports zrl_helpers, missing from its sandbox: adding packages zrl_helpers") {
		t.Fatalf("notes do not show the import check's diagnosis:\n%s", notes)
	}
	if n := countStage(res, messages.StageAcceptance); n != 2 {
		t.Fatalf("%d acceptance stages, want 2 (the import check, then the run)", n)
	}
}

// codeModeScreenshot makes TestCodeModeAliasChartsAndToolsListing write
// the code-mode job's page, with its chart, to this PNG file.
var codeModeScreenshot = flag.String("codemode-screenshot", "", "write the code-mode job page to this PNG file")

// checkChartInBrowser opens the job's page in headless Chromium, as a
// person would: the code-mode section shows the value and the chart, an
// image fetched with the token, decoded by the browser.
func checkChartInBrowser(ctx context.Context, t *testing.T, browser, base, token, jobID string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Headless, chromedp.WindowSize(1280, 900))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	page := &uiPage{t: t, ctx: bctx, base: base}
	page.run("open the list", chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#auth button")),
		chromedp.WaitVisible(chromedp.CSS(`tr.job[data-id="`+jobID+`"]`)))
	page.job(jobID, `#codemode #charts img[data-loaded="1"]`)
	page.contains("#codemode-value", `"mean":14.5`)
	page.contains("#codemode-summary", "a mean of 14.5")
	page.contains("#codemode-files", "temps.csv")
	width, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelector('#charts img').naturalWidth`))
	if err != nil || width != 100 {
		t.Fatalf("the chart's image is %d px wide (%v), want the SVG's 100", width, err)
	}
	if *codeModeScreenshot != "" {
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(*codeModeScreenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
