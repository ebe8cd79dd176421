package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// requirePromtool is Debian's promtool (apt package prometheus); outside
// CI its absence skips, in CI it fails (scripts/setup.sh installs it).
func requirePromtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not found: run scripts/setup.sh (apt package prometheus)")
		}
		t.Skip("promtool not found (apt package prometheus; scripts/setup.sh installs it)")
	}
	return p
}

// TestAlertRules: dashboards/alerts.yml passes `promtool check rules`, its
// unit tests (alerts_test.yml: each alert fires on the series that mean
// trouble and not before) pass `promtool test rules`, every expression
// selects only series and labels the binaries register, and every alert
// has a severity, a summary and a description.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	promtool := requirePromtool(t)
	dir := filepath.Join(repoRoot(t), "dashboards")
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			n++
			for _, p := range checkExpr(r.Expr) {
				t.Errorf("alert %s: %s\n  %s", r.Alert, p, r.Expr)
			}
			if !slices.Contains([]string{"warning", "critical"}, r.Labels["severity"]) || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: severity %q, summary %q, description %q", r.Alert, r.Labels["severity"], r.Annotations["summary"], r.Annotations["description"])
			}
		}
	}
	if n < 8 {
		t.Errorf("%d alert rules, want the queues, pools, jobs, model and integrity ones", n)
	}
}
