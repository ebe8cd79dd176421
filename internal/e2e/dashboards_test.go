package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/metrics"
)

// dashboardTarget is one query of a dashboard panel.
type dashboardTarget struct {
	file, panel, expr string
}

// dashboardTargets reads every query of dashboards/*.json.
func dashboardTargets(t testing.TB) []dashboardTarget {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "dashboards", "*.json"))
	if err != nil || len(files) < 2 {
		t.Fatalf("dashboards: %v (%d files, want the fleet and the loop)", err, len(files))
	}
	var out []dashboardTarget
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			UID    string `json:"uid"`
			Panels []struct {
				Type    string `json:"type"`
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" {
			t.Errorf("%s has no uid (Grafana provisioning needs one)", f)
		}
		for _, p := range d.Panels {
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", f, p.Title)
			}
			for _, tg := range p.Targets {
				out = append(out, dashboardTarget{file: filepath.Base(f), panel: p.Title, expr: tg.Expr})
			}
		}
	}
	return out
}

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = []string{"job", "instance"}

// checkExpr says what in expr the binaries do not register: a series no
// family has, a matcher on a label the family lacks, a grouping by a label
// none of the expression's families has.
func checkExpr(expr string) []string {
	q, err := parsePromQL(expr)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	known := slices.Clone(targetLabels)
	for _, s := range q.series {
		if s == "up" { // Prometheus's own, per target
			continue
		}
		f, ok := metrics.FamilyOf(s)
		if !ok {
			problems = append(problems, "no family registers "+s)
			continue
		}
		known = append(known, f.Labels...)
		if strings.HasSuffix(s, "_bucket") && f.Type == "histogram" {
			known = append(known, "le")
		}
	}
	if len(q.series) == 0 {
		problems = append(problems, "selects no series")
	}
	for _, l := range append(slices.Clone(q.matchers), q.groupings...) {
		if !slices.Contains(known, l) {
			problems = append(problems, "label "+l+" is on none of "+strings.Join(q.series, ", "))
		}
	}
	return problems
}

// TestDashboardExpressions checks every dashboard query against the metric
// families the binaries register (internal/metrics.Families, which the
// live test below holds against real scrapes).
func TestDashboardExpressions(t *testing.T) {
	t.Parallel()
	targets := dashboardTargets(t)
	used := map[string]bool{}
	for _, tg := range targets {
		for _, p := range checkExpr(tg.expr) {
			t.Errorf("%s, %q: %s\n  %s", tg.file, tg.panel, p, tg.expr)
		}
		q, _ := parsePromQL(tg.expr)
		for _, s := range q.series {
			if f, ok := metrics.FamilyOf(s); ok {
				used[f.Name] = true
			}
		}
	}
	for _, f := range metrics.Families {
		if !used[f.Name] {
			t.Errorf("family %s is on no dashboard", f.Name)
		}
	}
}

// TestPromQLReader: the reader the dashboard check rests on finds what an
// expression names and refuses what it cannot read.
func TestPromQLReader(t *testing.T) {
	t.Parallel()
	q, err := parsePromQL(`histogram_quantile(0.95, sum by (le, stage) (rate(autocoder_stage_duration_seconds_bucket{cached="false", stage=~"a|b"}[5m]))) / on (stage) group_left max(up)`)
	if err != nil {
		t.Fatal(err)
	}
	want := promQL{series: []string{"autocoder_stage_duration_seconds_bucket", "up"}, matchers: []string{"cached", "stage"},
		groupings: []string{"le", "stage", "stage"}, functions: []string{"histogram_quantile", "sum", "rate", "max"}}
	if diff := cmp.Diff(want, q, cmp.AllowUnexported(promQL{})); diff != "" {
		t.Errorf("parsePromQL (-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		`sum(rate(x[5m])`, `frobnicate(x)`, `x{a}`, `x{a="b"`, `rate(x[$__rate_interval])`, `sum by x`, `x{a="b}`,
	} {
		if _, err := parsePromQL(bad); err == nil {
			t.Errorf("parsePromQL(%q) accepted it", bad)
		}
	}
	for expr, problem := range map[string]string{
		`rate(autocoder_nope_total[5m])`:                          "no family registers autocoder_nope_total",
		`sum by (pool) (rate(autocoder_stage_results_total[5m]))`: "label pool is on none of autocoder_stage_results_total",
		`autocoder_jobs_running{stage="x"}`:                       "label stage is on none of autocoder_jobs_running",
	} {
		if got := checkExpr(expr); !slices.Contains(got, problem) {
			t.Errorf("checkExpr(%q) = %q, want it to say %q", expr, got, problem)
		}
	}
}
