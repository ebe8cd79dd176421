package sandbox

import (
	"fmt"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Bounds of a test report. A test file may hold any number of tests (a
// parametrised one 100,000), and a report travels in a stage result and
// is kept on the job state: past the bounds it keeps the failing and
// erroring cases first, then the others, and says in its output how many
// it left out. The counts (passed, failed, ...) always cover every case.
const (
	// MaxReportCases bounds the cases a report lists.
	MaxReportCases = 1000
	// MaxReportCaseBytes bounds the names, messages and details of the
	// listed cases together.
	MaxReportCaseBytes = 256 << 10
	// MaxJUnitBytes bounds the JUnit XML a report is read from; a larger
	// one is reported as unreadable, naming the bound.
	MaxJUnitBytes = 32 << 20
)

// boundCases keeps at most MaxReportCases cases within MaxReportCaseBytes,
// failing ones first, each group in file order; omitted counts the rest.
func boundCases(cases []messages.TestCase) (kept []messages.TestCase, omitted int) {
	if len(cases) <= MaxReportCases && caseBytes(cases) <= MaxReportCaseBytes {
		return cases, 0
	}
	size := 0
	take := func(c messages.TestCase) {
		n := len(c.Name) + len(c.ClassName) + len(c.Message) + len(c.Details)
		if len(kept) < MaxReportCases && size+n <= MaxReportCaseBytes {
			kept = append(kept, c)
			size += n
		}
	}
	for _, c := range cases {
		if protocol.Failing(c) {
			take(c)
		}
	}
	for _, c := range cases {
		if !protocol.Failing(c) {
			take(c)
		}
	}
	return kept, len(cases) - len(kept)
}

func caseBytes(cases []messages.TestCase) int {
	n := 0
	for _, c := range cases {
		n += len(c.Name) + len(c.ClassName) + len(c.Message) + len(c.Details)
	}
	return n
}

// omittedNote is the line a bounded report's output ends with.
func omittedNote(omitted, total int) string {
	return fmt.Sprintf("\n[autocoder: the report lists %d of %d test cases, failing ones first; %d left out (bounds: %d cases, %s)]",
		total-omitted, total, omitted, MaxReportCases, messages.FormatBytes(MaxReportCaseBytes))
}
