package e2e

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/httpapi"
	"github.com/autocoder/autocoder/pkg/messages"
)

// salesSummaryCode is what a model writes for the quick start's task:
// plain Python over the csv module.
const salesSummaryCode = `import argparse
import csv
import os


def summarize(path):
    revenue, units, rows = 0.0, 0, 0
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            qty = int(row["quantity"])
            revenue += qty * float(row["price"])
            units += qty
            rows += 1
    return round(revenue, 2), units, rows


def main(argv=None):
    p = argparse.ArgumentParser(description="summarize sales")
    p.add_argument("--sales", default="/var/inputs/sales.csv")
    a = p.parse_args(argv)
    revenue, units, rows = summarize(a.sales)
    os.makedirs("/var/outputs", exist_ok=True)
    for name, value in (("total_revenue", revenue), ("total_units", units), ("row_count", rows)):
        with open(os.path.join("/var/outputs", name), "w") as f:
            f.write(str(value))


if __name__ == "__main__":
    main()
`

const salesSummaryTests = `from solution import summarize


def test_summarize(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("date,region,product,quantity,price\n2024-01-01,n,w,2,1.5\n2024-01-02,s,g,1,4\n")
    assert summarize(str(p)) == (7.0, 3, 2)
`

// pythonStack starts a local stack scripted for the sales summary, with
// its HTTP API, and returns the API's URL and a token of scope submit.
func pythonStack(t *testing.T) (*fakellm.Server, string, string) {
	t.Helper()
	fake := fakellm.New()
	t.Cleanup(fake.Close)
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "summarize sales", Approach: "csv.DictReader; sums"}))
	fake.On("solution", fakellm.JSON(sol(salesSummaryCode)))
	fake.On("tests", fakellm.JSON(messages.Tests{Code: salesSummaryTests}))
	fake.On("packages", fakellm.JSON(messages.Packages{Packages: []string{}}))
	st := startLocal(t, testConfig(t, fake))
	const token = "python-client-submit-token-0123456789"
	tokens, err := httpapi.ParseTokens(strings.NewReader("py:submit:" + token))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.Handler(st.Client, nil, httpapi.Options{Tokens: tokens}))
	t.Cleanup(srv.Close)
	return fake, srv.URL, token
}

// runPyClient runs a script of python/ with Debian's python3 against the
// HTTP API at url, in dir, and returns its output.
func runPyClient(t *testing.T, url, token, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(repoRoot(t), "python"),
		"AUTOCODER_URL="+url, "AUTOCODER_TOKEN="+token, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestPythonQuickStart runs the Python client's quick start, written as the
// reference's first example (a CSV sample, three typed outputs, then
// result.run()), and its DataFrame example, with Debian's python3 against a
// live stack's HTTP API.
func TestPythonQuickStart(t *testing.T) {
	t.Parallel()
	fake, url, token := pythonStack(t)
	root := repoRoot(t)
	dir := t.TempDir()

	out := runPyClient(t, url, token, dir, filepath.Join(root, "python", "examples", "quickstart.py"), filepath.Join(root, "examples", "sales", "sales.csv"))
	for _, want := range []string{"outputs of the acceptance run: {", "run: total_revenue=1485.95 total_units=127 row_count=24"} {
		if !strings.Contains(out, want) {
			t.Errorf("quickstart output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "job job-") {
		t.Errorf("no job line:\n%s", out)
	}
	// The agent's litellm_params went with every model call of the job.
	quick := fake.Requests()
	for _, r := range quick {
		if r.Temperature == nil || float32(*r.Temperature) != 0.2 || r.MaxTokens != 4096 {
			t.Errorf("a %s request of the quick start: temperature %v, max_tokens %d", r.SchemaName, r.Temperature, r.MaxTokens)
		}
	}

	out = runPyClient(t, url, token, dir, filepath.Join(root, "python", "examples", "dataframe.py"))
	for _, want := range []string{
		"generated from the DataFrame: {'row_count': 3, 'total_revenue': 65.0, 'total_units': 23}",
		"february: (40.0, 4, 2)",
		"task: (40.0, 4, 2)",
		"refused: options.resources.memory |",
		"refused: run.samples.sales |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dataframe example output lacks %q:\n%s", want, out)
		}
	}
	if got := readFile(t, filepath.Join(dir, "sales.csv")); !strings.HasPrefix(got, "date,region,product,quantity,price\n2024-01-01,north,widget,10,2.5") {
		t.Errorf("downloaded original sample (the DataFrame as CSV) %q", got)
	}
	// The DataFrame example's temperature and seed, on its own calls.
	for _, r := range fake.Requests()[len(quick):] {
		if r.Temperature == nil || float32(*r.Temperature) != 0.2 || r.Seed == nil || *r.Seed != 7 {
			t.Errorf("a %s request of the DataFrame example: temperature %v, seed %v", r.SchemaName, r.Temperature, r.Seed)
		}
	}
	if len(quick) == 0 || len(fake.Requests()) == len(quick) {
		t.Error("the model was never asked")
	}
}

// TestPythonClientUnitTests runs the client's own unit tests (python -m
// unittest) with Debian's python3.
func TestPythonClientUnitTests(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	cmd := exec.Command(python, "-m", "unittest", "discover", "-s", filepath.Join(root, "python", "tests"), "-v")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "python"), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("python unit tests: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestPythonClientTypes type-checks the client with mypy --strict, as
// Python 3.9 (the oldest it supports) reads it: the hints its users' type
// checkers and editors see must hold. Debian's python3-mypy
// (scripts/setup.sh); without it the test fails, it does not skip.
func TestPythonClientTypes(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	cmd := exec.Command(python, "-m", "mypy", "--strict", "--python-version", "3.9", "--no-incremental", "autocoder")
	cmd.Dir = filepath.Join(root, "python")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "MYPY_CACHE_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Success: no issues found") {
		t.Fatalf("mypy --strict python/autocoder: %v\n%s", err, out)
	}
}
