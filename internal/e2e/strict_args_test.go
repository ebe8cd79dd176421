package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/submit"
	"github.com/autocoder/autocoder/pkg/messages"
)

// strictCode reads its sample only through a required option: it has no
// default path, so it runs only when the harness names the file.
const strictCode = `import argparse
import csv
import os
import sys


def total(path):
    with open(path, newline="", encoding="utf-8") as f:
        return round(sum(float(r["amount"]) for r in csv.DictReader(f)), 2)


def write_outputs(results, out_dir="/var/outputs"):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "total"), "w") as f:
        f.write(str(results["total"]))


def main(argv=None, out_dir="/var/outputs"):
    parser = argparse.ArgumentParser(description="sum the amounts")
    parser.add_argument("--sales", required=True)
    args = parser.parse_args(argv)
    write_outputs({"total": total(args.sales)}, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
`

const strictTests = `from solution import main, total


def test_total(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("amount\n1.5\n2\n")
    assert total(str(p)) == 3.5


def test_main(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("amount\n4\n")
    assert main(["--sales", str(p)], out_dir=str(tmp_path)) == 0
    assert (tmp_path / "total").read_text() == "4.0"
`

// TestStrictScriptOptions: a script whose sample option is required
// (argparse's required=True) passes its tests, its acceptance run and a
// run on new data, because every run names each sample by its option:
// a sample named sales from x.csv is --sales /var/inputs/sales.csv.
func TestStrictScriptOptions(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	fake := fakellm.New()
	defer fake.Close()
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "sum", Approach: "total(path) -> float; main writes it"}))
	fake.On("solution", fakellm.JSON(sol(strictCode)))
	fake.On("tests", fakellm.JSON(messages.Tests{Code: strictTests}))
	fake.On("packages", fakellm.JSON(messages.Packages{Packages: []string{}}))
	cfg := testConfig(t, fake)

	dir := t.TempDir()
	for name, body := range map[string]string{"x.csv": "amount\n1\n2.5\n", "y.csv": "amount\n10\n20\n0.25\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	job := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(job, []byte(`prompt: Sum the amount column of sales into total.
samples: {sales: x.csv}
outputs: {total: float}
options: {max_iterations: 2}
`), 0o644); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := cli(t, cfg, "--local", "--json", job)
	if code != submit.ExitSuccess {
		t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	res := decodeResult(t, stdout)
	if res.Outputs["total"] != 3.5 || countStage(res, messages.StageAcceptance) != 1 || countStage(res, messages.StageFix) != 0 {
		t.Errorf("outputs %v, stages %v: want total 3.5 from one acceptance run and no fix", res.Outputs, stageNames(res))
	}

	code, stdout, stderr = cli(t, cfg, "run", res.JobID, "--local", "--json", "--allow-outside", "--sample", "sales="+filepath.Join(dir, "y.csv"))
	if code != submit.ExitSuccess {
		t.Fatalf("submit run: exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	if run := decodeResult(t, stdout); run.Outputs["total"] != 30.25 {
		t.Errorf("run outputs %v, want total 30.25", run.Outputs)
	}
}
