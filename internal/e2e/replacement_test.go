package e2e

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestInvalidPackageIsReplaced: the code asks for a package the index does
// not have; the build's typed invalid-package error makes the loop ask the
// model for a replacement, and the job passes with it.
func TestInvalidPackageIsReplaced(t *testing.T) {
	t.Parallel()
	wheels := t.TempDir()
	buildWheel(t, wheels, "autocoder_probe", "autocoder_probe", "VALUE = 42\n")
	fake := fakellm.New()
	defer fake.Close()
	c := strings.Replace(code("autocoder_probe.VALUE"), "import argparse", "import argparse\n\nimport autocoder_probe", 1)
	scriptBasics(fake, sol(c, "autocoder-probe-typo"))
	good := "autocoder-probe"
	fake.On("package_replacement", fakellm.JSON(messages.PackageReplacement{Replacement: &good}))
	cfg := testConfig(t, fake)
	cfg.PipFindLinks = wheels
	st := startLocal(t, cfg)
	res := runJob(t, st, answerSpec())
	if !res.Success {
		t.Fatalf("job failed: %s\n%s", res.Error, res.Output)
	}
	if countStage(res, messages.StagePackageReplacement) != 1 || countStage(res, messages.StageBuild) < 2 {
		t.Errorf("stages %v: want a replacement and a rebuild", stageNames(res))
	}
	var asked bool
	for _, r := range fake.Requests() {
		if r.SchemaName == "package_replacement" {
			asked = true
			if !strings.Contains(r.Messages[len(r.Messages)-1].Content, "autocoder-probe-typo") {
				t.Error("the replacement prompt does not name the missing package")
			}
		}
	}
	if !asked {
		t.Error("the model was not asked for a replacement")
	}
}
