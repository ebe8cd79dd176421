package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeMapMatchesTree: the README's newcomer's map has one line per
// package of the module, and names no package that is gone.
func TestReadmeMapMatchesTree(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## A newcomer's map")
	if !ok {
		t.Fatal("README.md has no \"## A newcomer's map\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var mapped []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(section, -1) {
		mapped = append(mapped, m[1])
	}
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, filepath.ToSlash(rel))
	}
	for _, p := range pkgs {
		if !slices.Contains(mapped, p) {
			t.Errorf("package %s is not in the README's map", p)
		}
	}
	for _, m := range mapped {
		if !slices.Contains(pkgs, m) {
			t.Errorf("the README's map names %s, which is not a package of the module", m)
		}
	}
}
