package sandbox

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// junitSuite is a <testsuite> or the <testsuites> root: pytest writes
// <testsuites><testsuite>...</testsuite></testsuites> (older versions a bare
// <testsuite>), and other producers nest suites.
type junitSuite struct {
	XMLName xml.Name
	Suites  []junitSuite `xml:"testsuite"`
	Cases   []junitCase  `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failures  []junitResult `xml:"failure"`
	Errors    []junitResult `xml:"error"`
	Skipped   []junitResult `xml:"skipped"`
}

type junitResult struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// parseJUnit reads the test cases of a JUnit XML report, in file order.
//
// A case with a <failure> failed (even if its teardown also errored); one
// with only an <error> (a fixture, setup or teardown error, or pytest's
// collection error of the file) is an error; <skipped> (skip and xfail) is
// skipped; anything else passed.
func parseJUnit(data []byte) ([]messages.TestCase, error) {
	var root junitSuite
	dec := xml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("parse JUnit XML: %w", err)
	}
	if n := root.XMLName.Local; n != "testsuites" && n != "testsuite" {
		return nil, fmt.Errorf("parse JUnit XML: root element is <%s>, want <testsuites> or <testsuite>", n)
	}
	var out []messages.TestCase
	var walk func(s junitSuite)
	walk = func(s junitSuite) {
		for _, c := range s.Cases {
			out = append(out, junitToCase(c))
		}
		for _, sub := range s.Suites {
			walk(sub)
		}
	}
	walk(root)
	return out, nil
}

func junitToCase(c junitCase) messages.TestCase {
	tc := messages.TestCase{Name: c.Name, ClassName: c.ClassName, Outcome: messages.OutcomePassed}
	var results []junitResult
	switch {
	case len(c.Failures) > 0:
		tc.Outcome = messages.OutcomeFailed
		results = append(append([]junitResult{}, c.Failures...), c.Errors...)
	case len(c.Errors) > 0:
		tc.Outcome = messages.OutcomeError
		results = c.Errors
	case len(c.Skipped) > 0:
		tc.Outcome = messages.OutcomeSkipped
		results = c.Skipped
	}
	var msgs, details []string
	for _, r := range results {
		if m := strings.TrimSpace(r.Message); m != "" {
			msgs = append(msgs, m)
		}
		if d := strings.TrimSpace(r.Text); d != "" {
			details = append(details, d)
		}
	}
	tc.Message = trim.Head(strings.ToValidUTF8(strings.Join(msgs, "; "), ""), caseMessageLimit)
	tc.Details = trim.Tail(strings.ToValidUTF8(strings.Join(details, "\n\n"), ""), caseDetailsLimit)
	return tc
}
