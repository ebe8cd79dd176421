package profile

import (
	"errors"
	"fmt"
	"math"
	"regexp/syntax"
	"strings"
)

// Rendition is what a report's DataContext and PanderaSchemas are rendered
// from, without the data they were computed from: the samples part of the
// data context as text, each tabular sample's columns as its schema needs
// them, and the constraints. It marshals to JSON (every number in it is
// finite, which a Report's statistics need not be), so the profile stage
// can hand it on and another stage can render it again with more checks:
// the `constraint` LLM stage adds the checks the model read from the
// constraints the parser could not (WithChecks).
type Rendition struct {
	// Samples is the data context up to its constraints section.
	Samples string `json:"samples"`
	// Tables are the tabular samples with columns, in sample order.
	Tables []SchemaTable `json:"tables,omitempty"`
	Checks []Check       `json:"checks,omitempty"`
	// Kept are the constraints read into a check (by the parser or by the
	// model) that Admit turned down: they stay in the prompt as text the
	// code must enforce, with the reason, and as a comment in the schema.
	Kept     []KeptCheck `json:"kept,omitempty"`
	Unparsed []string    `json:"unparsed,omitempty"`
}

// KeptCheck is a check that does not apply to the samples (Admit says
// why), kept as text.
type KeptCheck struct {
	Check Check  `json:"check"`
	Why   string `json:"why"`
}

// SchemaTable is one tabular sample as its Pandera schema is rendered.
type SchemaTable struct {
	Name       string `json:"name"`   // the sample's name
	Header     string `json:"header"` // the schema's first comment line
	NeedEngine bool   `json:"need_engine,omitempty"`
	// NeedMixedDates: a column uses MIXED_DATES (see mixedDatesGuard).
	NeedMixedDates bool           `json:"need_mixed_dates,omitempty"`
	Columns        []SchemaColumn `json:"columns"`
}

// SchemaColumn is one column of a SchemaTable.
type SchemaColumn struct {
	Name     string     `json:"name"`
	Type     ColumnType `json:"type"`
	Dtype    string     `json:"dtype,omitempty"` // pa.Column's dtype argument, as Python source
	Kwargs   []string   `json:"kwargs,omitempty"`
	Comment  string     `json:"comment,omitempty"`
	Nullable bool       `json:"nullable"` // as observed
	Nulls    int        `json:"nulls,omitempty"`
}

// Rendition returns what the report's text is rendered from.
func (r *Report) Rendition() Rendition {
	return Rendition{Samples: r.samplesContext(), Tables: r.schemaTables(), Checks: r.Checks, Kept: r.Kept, Unparsed: r.Unparsed}
}

// schemaTables are the tabular samples with columns, as their schemas
// are rendered.
func (r *Report) schemaTables() []SchemaTable {
	var out []SchemaTable
	for _, sp := range r.Samples {
		if sp.Format.Tabular() && len(sp.Columns) > 0 {
			out = append(out, sp.schemaTable())
		}
	}
	return out
}

// DataContext is the text Report.DataContext returns.
func (rd Rendition) DataContext() string {
	var b strings.Builder
	b.WriteString(rd.Samples)
	writeConstraints(&b, rd.Checks, rd.Kept, rd.Unparsed)
	return b.String()
}

// PanderaSchemas is what Report.PanderaSchemas returns.
func (rd Rendition) PanderaSchemas() map[string]string {
	out := map[string]string{}
	for _, t := range rd.Tables {
		out[t.Name] = t.render(rd.Checks, rd.Kept)
	}
	return out
}

// WithChecks returns the rendition with checks added after its own and
// unparsed as the constraints left as text (replacing its Unparsed).
// Checks that Admit turns down are kept as text, with the reason.
func (rd Rendition) WithChecks(checks []Check, unparsed []string) Rendition {
	out := rd
	out.Checks = append([]Check(nil), rd.Checks...)
	out.Kept = append([]KeptCheck(nil), rd.Kept...)
	for _, c := range checks {
		if c, why := rd.Admit(c); why != "" {
			out.Kept = append(out.Kept, KeptCheck{Check: c, Why: why})
		} else {
			out.Checks = append(out.Checks, c)
		}
	}
	out.Unparsed = append([]string(nil), unparsed...)
	return out
}

// ColumnRef is a column of a tabular sample.
type ColumnRef struct {
	Sample string
	Name   string
	Type   ColumnType
}

// Columns lists the columns of every tabular sample, in order.
func (rd Rendition) Columns() []ColumnRef {
	var out []ColumnRef
	for _, t := range rd.Tables {
		for _, c := range t.Columns {
			out = append(out, ColumnRef{Sample: t.Name, Name: c.Name, Type: c.Type})
		}
	}
	return out
}

// Admit checks a check that came from elsewhere (the `constraint` LLM
// call) against the samples: it must name a column one of them has (as
// the parser compares names: case, spaces, hyphens and underscores aside;
// the returned check carries the column's own spelling), have the
// parameters its type needs, and fit the column's type. A check that does
// not is returned with the reason, and is better kept as prompt text.
func (rd Rendition) Admit(c Check) (Check, string) { return admit(rd.Tables, c) }

// admit is Admit over the tables: the one test for the parser's checks
// (Profile) and the model's (the constraint stage).
func admit(tables []SchemaTable, c Check) (Check, string) {
	var col *SchemaColumn
	for _, t := range tables {
		for i := range t.Columns {
			if sameColumn(t.Columns[i].Name, c.Column) {
				col = &t.Columns[i]
				break
			}
		}
		if col != nil {
			break
		}
	}
	if col == nil {
		return c, fmt.Sprintf("no sample has a column %q", c.Column)
	}
	c.Column = col.Name
	finite := func(fs ...float64) bool {
		for _, f := range fs {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return false
			}
		}
		return true
	}
	switch c.Type {
	case CheckGreaterThan, CheckLessThan:
		if !finite(c.Value) {
			return c, "the bound is not a finite number"
		}
	case CheckBetween:
		if !finite(c.Min, c.Max) || c.Min > c.Max {
			return c, "the range is not min <= max"
		}
	case CheckRegex:
		if strings.TrimSpace(c.Pattern) == "" {
			return c, "the pattern is empty"
		}
		if why := badPattern(c.Pattern); why != "" {
			return c, why
		}
	case CheckIsin:
		if len(c.Values) == 0 {
			return c, "the list of values is empty"
		}
	case CheckNotNull, CheckUnique:
	default:
		return c, fmt.Sprintf("check type %q cannot be enforced", c.Type)
	}
	if why := c.misfit(col.Type); why != "" {
		return c, why
	}
	return c, ""
}

// String is the check in words, as the data context lists it: "price" >= 0.
func (c Check) String() string { return c.describe() }

// badPattern says why a pattern cannot compile in Python's re either, or
// "". Go's parser is trusted only for the errors both engines share: RE2
// lacks lookarounds and backreferences, which Python has, so its other
// errors say nothing about Python.
func badPattern(p string) string {
	_, err := syntax.Parse(p, syntax.Perl)
	var se *syntax.Error
	if errors.As(err, &se) {
		switch se.Code {
		case syntax.ErrTrailingBackslash, syntax.ErrMissingParen, syntax.ErrMissingBracket, syntax.ErrUnexpectedParen:
			return "the pattern is not a valid regular expression (" + string(se.Code) + ")"
		}
	}
	return ""
}
