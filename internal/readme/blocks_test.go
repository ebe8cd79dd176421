package readme

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Markers say how a shell block of the README is tested: the HTML comment
// `<!-- readme-test: KIND -->` on the line before its opening fence.
const (
	markFreshMachine = "fresh-machine" // TestFreshMachine: in a bare Debian container
	markRun          = "run"           // TestReadmeBlocks: on this machine, as written
	markSkip         = "skip"          // not run; the marker gives the reason: "skip (why)"
)

// block is a fenced shell block of the README.
type block struct {
	section string // the heading it is under
	mark    string // its marker's kind; "" if it has none
	reason  string // a skip's reason
	line    int    // of its opening fence, 1-based
	code    string
}

var (
	markerRe = regexp.MustCompile(`^<!-- readme-test: ([a-z-]+)(?: \((.+)\))? -->$`)
	fenceRe  = regexp.MustCompile("^```([a-z]*)\\s*$")
)

// shellInfo are the info strings of fenced blocks that are commands.
var shellInfo = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// readmeBlocks reads the README's fenced shell blocks with their markers.
func readmeBlocks(t *testing.T) []block {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out                []block
		section, prev      string
		cur                *block
		inFence, shellCode bool
		n                  int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		n++
		m := fenceRe.FindStringSubmatch(line)
		switch {
		case inFence && m != nil && m[1] == "":
			if shellCode {
				out = append(out, *cur)
			}
			inFence, cur = false, nil
		case inFence:
			if shellCode {
				cur.code += line + "\n"
			}
		case m != nil:
			inFence, shellCode = true, shellInfo[m[1]]
			cur = &block{section: section, line: n}
			if mm := markerRe.FindStringSubmatch(prev); mm != nil {
				cur.mark, cur.reason = mm[1], mm[2]
			}
		case strings.HasPrefix(line, "#"):
			section = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadmeBlocksAreMarked: every shell block of the README says how it
// is tested, and a skipped one says why, so no command can drift unseen.
func TestReadmeBlocksAreMarked(t *testing.T) {
	t.Parallel()
	blocks := readmeBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("README.md has no shell blocks: the parser is broken")
	}
	kinds := map[string]int{}
	for _, b := range blocks {
		switch {
		case b.mark == "":
			t.Errorf("README.md:%d (%s): a shell block with no <!-- readme-test: KIND --> marker on the line before", b.line, b.section)
		case b.mark == markSkip && b.reason == "":
			t.Errorf("README.md:%d (%s): a skipped block must say why: <!-- readme-test: skip (why) -->", b.line, b.section)
		case b.mark != markSkip && b.mark != markRun && b.mark != markFreshMachine:
			t.Errorf("README.md:%d (%s): unknown marker %q", b.line, b.section, b.mark)
		}
		kinds[b.mark]++
	}
	if kinds[markFreshMachine] != 1 {
		t.Errorf("%d fresh-machine blocks, want 1: the first command", kinds[markFreshMachine])
	}
}

// blocksMarked returns the README's blocks with marker kind.
func blocksMarked(t *testing.T, kind string) []block {
	t.Helper()
	var out []block
	for _, b := range readmeBlocks(t) {
		if b.mark == kind {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		t.Fatalf("README.md has no %s block", kind)
	}
	return out
}

// afterRun are the checks of a run block beyond its exit status, by the
// heading it is under: what its output and the files it left must show.
var afterRun = map[string]func(t *testing.T, dir, out string){
	"The parts as separate processes": checkDistributedQuickstart,
	"Using it":                        checkExamples,
}

// TestReadmeBlocks runs every run block of the README as written, each in
// a copy of the checkout, and checks what it did.
func TestReadmeBlocks(t *testing.T) {
	t.Parallel()
	for _, b := range blocksMarked(t, markRun) {
		t.Run(b.section, func(t *testing.T) {
			t.Parallel()
			check, ok := afterRun[b.section]
			if !ok {
				t.Fatalf("README.md:%d: no check for the run block under %q: add one to afterRun", b.line, b.section)
			}
			requireSandboxTools(t)
			dir := copyCheckout(t)
			out := runBlock(t, dir, b)
			check(t, dir, out)
		})
	}
}

// checkDistributedQuickstart: the job went through the separate
// processes, with each logged in as its role, and the llm-worker answered
// from the scripted transcript, said so, and kept its answers apart.
func checkDistributedQuickstart(t *testing.T, dir, out string) {
	demo := filepath.Join(dir, "demo")
	mustContain(t, "submit's output", out, "SUCCESS: the generated script passed its tests", "total_revenue = 1485.95")
	mustContain(t, "llm-worker.log", readFile(t, filepath.Join(demo, "llm-worker.log")), "SCRIPTED MODEL", "examples/sales/transcript.json")
	mustNotContain(t, "coordinator.log", readFile(t, filepath.Join(demo, "coordinator.log")), "AUTOCODER_NATS_AUTH=none", "lets any process")
	for _, w := range []string{"llm-worker", "sandbox-worker"} {
		mustNotContain(t, w+".log", readFile(t, filepath.Join(demo, w+".log")), "Authorization Violation", "authorization violation")
	}
	if _, err := os.Stat(filepath.Join(demo, "state", "llm-worker", "scripted", "cache")); err != nil {
		t.Errorf("the scripted llm-worker's cache is not under state/llm-worker/scripted: %v", err)
	}
	if _, err := os.Stat(filepath.Join(demo, "state", "llm-worker", "cache")); err == nil {
		t.Error("the scripted llm-worker wrote into the cache real answers are kept in (state/llm-worker/cache)")
	}
}

// checkExamples: each example ran to success on its scripted transcript.
func checkExamples(t *testing.T, _, out string) {
	if n := strings.Count(out, "SCRIPTED MODEL"); n != 3 {
		t.Errorf("%d runs said SCRIPTED MODEL, want 3", n)
	}
	mustContain(t, "the examples' output", out,
		"SUCCESS: the generated script passed its tests",                                         // orders
		"SUCCESS: the generated script ran on the samples and wrote its outputs (validate: run)", // coderunner
		"mean_t1",
		`"turns": 3`) // code mode
}

func mustContain(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, tail(text, 4000))
		}
	}
}

func mustNotContain(t *testing.T, what, text string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(text, w) {
			t.Errorf("%s has %q:\n%s", what, w, tail(text, 4000))
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v", err)
	}
	return string(b)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// requireSandboxTools fails (never skips) where the process sandbox
// cannot run: scripts/setup.sh installs what it needs.
func requireSandboxTools(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("bwrap")
	if err == nil {
		err = exec.Command("/usr/bin/python3", "-c", "import pytest, pandas").Run()
	}
	if err != nil {
		t.Fatalf("bubblewrap, or pytest and pandas under /usr/bin/python3: %v (run scripts/setup.sh)", err)
	}
}
