package profile

import (
	"fmt"
	"math"
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
	Tables   []SchemaTable `json:"tables,omitempty"`
	Checks   []Check       `json:"checks,omitempty"`
	Unparsed []string      `json:"unparsed,omitempty"`
}

// SchemaTable is one tabular sample as its Pandera schema is rendered.
type SchemaTable struct {
	Name       string         `json:"name"`   // the sample's name
	Header     string         `json:"header"` // the schema's first comment line
	NeedEngine bool           `json:"need_engine,omitempty"`
	Columns    []SchemaColumn `json:"columns"`
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
	rd := Rendition{Samples: r.samplesContext(), Checks: r.Checks, Unparsed: r.Unparsed}
	for _, sp := range r.Samples {
		if sp.Format.Tabular() && len(sp.Columns) > 0 {
			rd.Tables = append(rd.Tables, sp.schemaTable())
		}
	}
	return rd
}

// DataContext is the text Report.DataContext returns.
func (rd Rendition) DataContext() string {
	var b strings.Builder
	b.WriteString(rd.Samples)
	writeConstraints(&b, rd.Checks, rd.Unparsed)
	return b.String()
}

// PanderaSchemas is what Report.PanderaSchemas returns.
func (rd Rendition) PanderaSchemas() map[string]string {
	out := map[string]string{}
	for _, t := range rd.Tables {
		out[t.Name] = t.render(rd.Checks)
	}
	return out
}

// WithChecks returns the rendition with checks added after its own and
// unparsed as the constraints left as text (replacing its Unparsed).
func (rd Rendition) WithChecks(checks []Check, unparsed []string) Rendition {
	out := rd
	out.Checks = append(append([]Check(nil), rd.Checks...), checks...)
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
func (rd Rendition) Admit(c Check) (Check, string) {
	var col *SchemaColumn
	for _, t := range rd.Tables {
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
