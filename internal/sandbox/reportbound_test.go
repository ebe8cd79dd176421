package sandbox

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// hugeJUnit is a pytest report of n passing parametrised cases with the
// failing ones at the given indexes.
func hugeJUnit(n int, failing ...int) []byte {
	fails := map[int]bool{}
	for _, i := range failing {
		fails[i] = true
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">`)
	for i := range n {
		if fails[i] {
			fmt.Fprintf(&b, `<testcase classname="test_solution" name="test_x[%d]"><failure message="assert %d == 42">E   assert %d == 42</failure></testcase>`, i, i, i)
			continue
		}
		fmt.Fprintf(&b, `<testcase classname="test_solution" name="test_x[%d]" time="0.001" />`, i)
	}
	b.WriteString(`</testsuite></testsuites>`)
	return []byte(b.String())
}

// TestReportOf100kCasesIsBounded: a JUnit report of 100,000 cases becomes a
// report that counts them all, lists at most MaxReportCases with the
// failing ones first (even the last case of the file), says how many it
// left out, and encodes well under a message's size.
func TestReportOf100kCasesIsBounded(t *testing.T) {
	t.Parallel()
	const n = 100_000
	res := RunResult{ExitCode: 1, Files: map[string][]byte{JUnitFile: hugeJUnit(n, 5, n-1)}}
	rep := ParseTestReport(res, time.Minute)
	if rep.Passed != n-2 || rep.Failed != 2 {
		t.Errorf("counts: passed %d failed %d, want %d and 2", rep.Passed, rep.Failed, n-2)
	}
	if len(rep.Cases) != MaxReportCases {
		t.Errorf("%d cases listed, want %d", len(rep.Cases), MaxReportCases)
	}
	if rep.Cases[0].Name != "test_x[5]" || rep.Cases[1].Name != fmt.Sprintf("test_x[%d]", n-1) {
		t.Errorf("first cases %q, %q: want the failing ones first", rep.Cases[0].Name, rep.Cases[1].Name)
	}
	if want := fmt.Sprintf("lists %d of %d test cases", MaxReportCases, n); !strings.Contains(rep.Output, want) {
		t.Errorf("output %q does not say %q", rep.Output, want)
	}
	b, _ := json.Marshal(rep)
	if len(b) > 256<<10 {
		t.Errorf("the report encodes to %d bytes, want under 256 KiB", len(b))
	}
}

// TestReportCaseBytesAreBounded: few cases with long messages are cut by
// bytes, not by count.
func TestReportCaseBytesAreBounded(t *testing.T) {
	t.Parallel()
	cases := make([]messages.TestCase, 500)
	for i := range cases {
		cases[i] = messages.TestCase{Name: fmt.Sprint("t", i), Outcome: messages.OutcomeFailed, Message: strings.Repeat("m", 1000), Details: strings.Repeat("d", 4000)}
	}
	kept, omitted := boundCases(cases)
	if caseBytes(kept) > MaxReportCaseBytes || omitted == 0 || len(kept)+omitted != len(cases) {
		t.Errorf("kept %d cases of %d bytes, omitted %d: want under %d bytes and the rest counted", len(kept), caseBytes(kept), omitted, MaxReportCaseBytes)
	}
}

// TestOversizedJUnitIsUnreadable: a JUnit file past MaxJUnitBytes is not
// parsed; the report names the bound.
func TestOversizedJUnitIsUnreadable(t *testing.T) {
	t.Parallel()
	res := RunResult{ExitCode: 0, Files: map[string][]byte{JUnitFile: make([]byte, MaxJUnitBytes+1)}}
	rep := ParseTestReport(res, time.Minute)
	if rep.OK() || len(rep.Cases) != 1 || !strings.Contains(rep.Cases[0].Message, "over the 32 MiB bound") {
		t.Errorf("report %+v: want one error case naming the 32 MiB bound", rep.Cases)
	}
}
