package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/submit"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestSalesExampleDataAware: the README's sales example (scripted model)
// carries what issue 4 promises on its result: Pandera schemas with the
// constraints' checks, a data context with statistics, typed outputs from
// the acceptance run; and `submit run` of its script on a new CSV gives
// new typed outputs.
func TestSalesExampleDataAware(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	cfg := testConfig(t, nil)
	cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "", ""
	job := filepath.Join(repoRoot(t), "examples", "sales", "job.yaml")
	code, stdout, stderr := cli(t, cfg, "--local", "--json", job)
	if code != submit.ExitSuccess {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	res := decodeResult(t, stdout)
	schema := res.GeneratedSchemas["sales"]
	for _, want := range []string{
		"schema = pa.DataFrameSchema(",
		`"quantity": pa.Column("int64", checks=[pa.Check.gt(0)], nullable=False),  # constraint: quantity must be positive`,
		`"price": pa.Column("float64", checks=[pa.Check.in_range(0, 10000)], nullable=False),  # constraint: price between 0 and 10000`,
		`"date": pa.Column("datetime64[ns]"`,
	} {
		if !strings.Contains(schema, want) {
			t.Errorf("generated schema lacks %q:\n%s", want, schema)
		}
	}
	for _, want := range []string{
		"## Sample \"sales\": /var/inputs/sales.csv",
		`"quantity" int: 24 values, no nulls, 9 distinct; min 1, max 9, mean 5.291666666666667, median 6`,
		`"price" float: 24 values`,
		"representative rows (24 of 24",
		`"quantity must be positive": check "quantity" > 0`,
	} {
		if !strings.Contains(res.DataContext, want) {
			t.Errorf("data context lacks %q:\n%s", want, res.DataContext)
		}
	}
	if res.Outputs["total_revenue"] != 1485.95 || res.Outputs["total_units"] != 127.0 || res.Outputs["row_count"] != 24.0 {
		t.Errorf("outputs %v", res.Outputs)
	}
	if countStage(res, messages.StageConstraint) != 0 {
		t.Errorf("both constraints parse, yet the model was asked: stages %v", stageNames(res))
	}

	newCSV := filepath.Join(t.TempDir(), "april.csv")
	if err := os.WriteFile(newCSV, []byte("date,region,product,quantity,price\n2024-04-01,north,widget,2,1.25\n2024-04-02,south,gizmo,3,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = cli(t, cfg, "run", res.JobID, "--local", "--json", "--allow-outside", "--sample", "sales="+newCSV)
	if code != submit.ExitSuccess {
		t.Fatalf("submit run: exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	run := decodeResult(t, stdout)
	if run.Outputs["total_revenue"] != 32.5 || run.Outputs["total_units"] != 5.0 || run.Outputs["row_count"] != 2.0 {
		t.Errorf("run outputs %v", run.Outputs)
	}
}

// TestOrdersExampleScripted runs the second example (typed inputs, File
// and Dir outputs, a constraint only the model reads) with its scripted
// transcript and downloads the outputs.
func TestOrdersExampleScripted(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	cfg := testConfig(t, nil)
	cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "", ""
	out := t.TempDir()
	job := filepath.Join(repoRoot(t), "examples", "orders", "job.yaml")
	code, stdout, stderr := cli(t, cfg, "--local", "--json", "--out", out, job)
	if code != submit.ExitSuccess {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	res := decodeResult(t, stdout)
	if res.Outputs["total"] != 371.21 || res.Outputs["big_orders"] != 10.0 {
		t.Errorf("outputs %v", res.Outputs)
	}
	if got := readFile(t, filepath.Join(out, "report")); got != "region,amount\neast,113.25\nnorth,128.72\nsouth,100.75\nwest,28.49\n" {
		t.Errorf("report %q", got)
	}
	if got := readFile(t, filepath.Join(out, "charts", "west.txt")); got != "28.49\n" {
		t.Errorf("charts/west.txt %q", got)
	}
	if !strings.Contains(res.GeneratedSchemas["orders"], "pa.Check.lt(10000)") || countStage(res, messages.StageConstraint) != 1 {
		t.Errorf("the model's check is not in the schema (stages %v):\n%s", stageNames(res), res.GeneratedSchemas["orders"])
	}
}
