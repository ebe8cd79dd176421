package machine

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// phaseDoc holds a phase diagram per built-in kind, generated from the
// kinds' transition tables (go test ./internal/machine -run
// TestPhaseDiagrams -update rewrites them).
const phaseDoc = "../../docs/architecture-machine.md"

// diagramRe is one kind's generated block: a marker naming the kind, then
// a mermaid block.
var diagramRe = regexp.MustCompile("(?s)<!-- phases: ([a-z ]+) -->\n```mermaid\n(.*?)```\n")

// diagram is a kind's phase diagram: every change of its table, PhaseNew
// as the start, in the order phases.go declares the phases, and its result
// table's stages in a comment.
func diagram(k *Kind) string {
	order := func(p Phase) int { return slices.Index(allPhases, p) }
	type change struct{ from, to Phase }
	var cs []change
	for to, froms := range k.Phases {
		for _, from := range froms {
			cs = append(cs, change{from, to})
		}
	}
	slices.SortFunc(cs, func(a, b change) int {
		if a.from != b.from {
			return order(a.from) - order(b.from)
		}
		return order(a.to) - order(b.to)
	})
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	stages := make([]string, 0, len(k.Results))
	for _, r := range k.Results {
		stages = append(stages, string(r.stage))
	}
	fmt.Fprintf(&b, "    %%%% result rows: %s\n", strings.Join(stages, ", "))
	for _, c := range cs {
		from := string(c.from)
		if c.from == PhaseNew {
			from = "[*]"
		}
		fmt.Fprintf(&b, "    %s --> %s\n", from, c.to)
	}
	return b.String()
}

// TestPhaseDiagrams: the doc's phase diagram of each kind lists exactly
// the changes of the kind's transition table (and its result rows), so
// the two cannot drift.
func TestPhaseDiagrams(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(phaseDoc)
	if err != nil {
		t.Fatal(err)
	}
	kinds := Default().kinds
	want := map[string]string{}
	for i := range kinds {
		want[kinds[i].Name] = diagram(&kinds[i])
	}
	if *update {
		doc = diagramRe.ReplaceAllFunc(doc, func(block []byte) []byte {
			name := diagramRe.FindSubmatch(block)[1]
			return []byte("<!-- phases: " + string(name) + " -->\n```mermaid\n" + want[string(name)] + "```\n")
		})
		if err := os.WriteFile(phaseDoc, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, m := range diagramRe.FindAllSubmatch(doc, -1) {
		name, got := string(m[1]), string(m[2])
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("%s has a diagram of %q, which is no built-in kind", phaseDoc, name)
		case seen[name]:
			t.Errorf("%s has two diagrams of %s", phaseDoc, name)
		case got != w:
			t.Errorf("%s: the diagram of %s is not its table (go test ./internal/machine -run TestPhaseDiagrams -update):\n%s\nwant:\n%s", phaseDoc, name, got, w)
		}
		seen[name] = true
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s has no diagram of %s: add a block <!-- phases: %s --> and run with -update", phaseDoc, name, name)
		}
	}
}
