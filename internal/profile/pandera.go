package profile

import (
	"fmt"
	"strconv"
	"strings"
)

// PanderaSchemas returns, per tabular sample (keyed by sample name), Python
// source that defines `schema = pa.DataFrameSchema({...})`: one pa.Column
// per column with the dtype pandas will give it when reading the file with
// its defaults, nullable as observed, and the checks of every parsed
// constraint whose column the sample has. Datetime columns are coerced
// from text with the detected format.
func (r *Report) PanderaSchemas() map[string]string {
	return r.Rendition().PanderaSchemas()
}

// schemaTable is what the sample's schema is rendered from.
func (sp *SampleProfile) schemaTable() SchemaTable {
	t := SchemaTable{Name: sp.Name}
	for _, c := range sp.Columns {
		dtype, kwargs, comment := c.panderaType()
		if strings.HasPrefix(dtype, "pandas_engine.") {
			t.NeedEngine = true
		}
		if strings.Contains(dtype, mixedDates) {
			t.NeedMixedDates = true
		}
		t.Columns = append(t.Columns, SchemaColumn{
			Name: c.Name, Type: c.Type, Dtype: dtype, Kwargs: kwargs, Comment: comment,
			Nullable: c.Nulls > 0 || c.Count == 0, Nulls: c.Nulls,
		})
	}
	scope := "every row"
	if sp.Truncated {
		scope = fmt.Sprintf("the first %d rows", sp.Rows)
	}
	t.Header = fmt.Sprintf("# Pandera schema for sample %s (%s), inferred from %s;\n", oneLine(strconv.Quote(sp.Name)), oneLine(sp.InputPath()), scope)
	return t
}

// render writes the schema source with the checks whose column the table
// has, and the kept ones (checks Admit turned down) as comments.
func (t SchemaTable) render(checks []Check, kept []KeptCheck) string {
	var cols strings.Builder
	for _, c := range t.Columns {
		nullable := c.Nullable
		unique := false
		var pyChecks, notes []string
		for _, ch := range checks {
			if !sameColumn(ch.Column, c.Name) {
				continue
			}
			switch ch.Type {
			case CheckNotNull:
				nullable = false
				if c.Nulls > 0 {
					notes = append(notes, fmt.Sprintf("required, though the sample has %s", plural(c.Nulls, "null")))
				}
			case CheckUnique:
				unique = true
			default:
				// A check that does not fit the column was kept as text
				// before it got here (Admit); this guards a hand-built
				// rendition.
				if why := ch.misfit(c.Type); why != "" {
					notes = append(notes, "constraint not applied ("+why+"): "+oneLine(ch.Text))
					continue
				}
				if py := ch.python(c.Type); py != "" {
					pyChecks = append(pyChecks, py)
				}
			}
			notes = append(notes, "constraint: "+oneLine(ch.Text))
		}
		for _, k := range kept {
			if sameColumn(k.Check.Column, c.Name) {
				notes = append(notes, "constraint not applied ("+oneLine(k.Why)+"): "+oneLine(k.Check.Text))
			}
		}
		args := []string{}
		if c.Dtype != "" {
			args = append(args, c.Dtype)
		}
		if len(pyChecks) > 0 {
			args = append(args, "checks=["+strings.Join(pyChecks, ", ")+"]")
		}
		args = append(args, "nullable="+pyBool(nullable))
		if unique {
			args = append(args, "unique=True")
		}
		args = append(args, c.Kwargs...)
		line := fmt.Sprintf("        %s: pa.Column(%s),", pyString(c.Name), strings.Join(args, ", "))
		if c.Comment != "" {
			notes = append([]string{c.Comment}, notes...)
		}
		if len(notes) > 0 {
			line += "  # " + strings.Join(notes, "; ")
		}
		cols.WriteString(line + "\n")
	}
	var b strings.Builder
	b.WriteString(t.Header)
	b.WriteString("# dtypes are what pandas reads by default; checks come from the job's constraints.\n")
	b.WriteString("try:\n    import pandera.pandas as pa\nexcept ImportError:  # pandera < 0.24\n    import pandera as pa\n")
	if t.NeedEngine {
		b.WriteString("from pandera.engines import pandas_engine\n")
	}
	if t.NeedMixedDates {
		b.WriteString(mixedDatesGuard)
	}
	b.WriteString("\nschema = pa.DataFrameSchema(\n    {\n")
	b.WriteString(cols.String())
	b.WriteString("    },\n    strict=False,\n)\n")
	return b.String()
}

// mixedDates names the to_datetime keyword arguments of a column with
// dates in several formats, and mixedDatesGuard defines them. pandas >= 2
// infers one format from the first value and needs format="mixed" to parse
// each value on its own; pandas 1.x (Debian bookworm's 1.5.3) rejects
// "mixed" ("does not match format 'mixed'") and already parses each value
// on its own when given no format. The schema must work with either, as
// the sandbox may have either.
const (
	mixedDates      = "MIXED_DATES"
	mixedDatesGuard = "import pandas as pd\n\n" +
		"# format=\"mixed\" is pandas >= 2; pandas 1.x rejects it and parses mixed formats without a format.\n" +
		mixedDates + " = {\"format\": \"mixed\"} if int(pd.__version__.split(\".\")[0]) >= 2 else {}\n"
)

// panderaType is the dtype argument, extra keyword arguments and a comment.
func (c *ColumnProfile) panderaType() (dtype string, kwargs []string, comment string) {
	switch c.Type {
	case TypeInt:
		if c.Nulls > 0 {
			return `"float64"`, nil, "integers with missing values: pandas reads them as float64"
		}
		return `"int64"`, nil, ""
	case TypeFloat:
		return `"float64"`, nil, ""
	case TypeBool:
		if c.Nulls > 0 {
			return "object", nil, "True/False with missing values: pandas reads them as object"
		}
		return `"bool"`, nil, ""
	case TypeDatetime:
		t := c.Time
		coerce := []string{"coerce=True"}
		switch {
		case len(t.Mixed) > 0:
			return "pandas_engine.DateTime(to_datetime_kwargs=" + mixedDates + ")", coerce, "dates in mixed formats"
		case t.Zoned:
			return `pandas_engine.DateTime(tz="UTC", to_datetime_kwargs={"utc": True})`, coerce, "timestamps with UTC offsets, as UTC"
		case t.ISO:
			return `"datetime64[ns]"`, coerce, "ISO 8601 text, parsed on validation"
		}
		comment := "dates as " + t.Strftime
		if len(t.Ambiguous) > 0 {
			comment += " (ambiguous with day-first; month-first assumed)"
		}
		return fmt.Sprintf(`pandas_engine.DateTime(to_datetime_kwargs={"format": %s})`, pyString(t.Strftime)), coerce, comment
	case TypeString:
		if c.DecimalComma {
			return "object", nil, `numbers with a decimal comma: pandas reads them as text unless decimal=","`
		}
		if c.ThousandsComma {
			return "object", nil, `numbers with a thousands separator: pandas reads them as text unless thousands=","`
		}
		if len(c.Kinds) > 1 {
			return "object", nil, "mixed values: " + kindsText(c)
		}
		if c.Nested {
			return "object", nil, "JSON objects or arrays"
		}
		return "str", nil, ""
	}
	return "", nil, "no values in the sample"
}

// misfit says why a check cannot apply to the column as pandas reads it
// (a numeric bound on text, a pattern on numbers), or "".
func (ch Check) misfit(t ColumnType) string {
	switch ch.Type {
	case CheckGreaterThan, CheckLessThan, CheckBetween:
		if t != TypeInt && t != TypeFloat && t != TypeNull {
			return "a numeric bound on a " + string(t) + " column"
		}
	case CheckRegex:
		if t != TypeString && t != TypeNull {
			return "a pattern on a " + string(t) + " column"
		}
	}
	return ""
}

// python is the pa.Check expression for a check on a column of type t, or "".
func (ch Check) python(t ColumnType) string {
	switch ch.Type {
	case CheckGreaterThan:
		if ch.Inclusive {
			return "pa.Check.ge(" + pyNumber(ch.Value) + ")"
		}
		return "pa.Check.gt(" + pyNumber(ch.Value) + ")"
	case CheckLessThan:
		if ch.Inclusive {
			return "pa.Check.le(" + pyNumber(ch.Value) + ")"
		}
		return "pa.Check.lt(" + pyNumber(ch.Value) + ")"
	case CheckBetween:
		if ch.Inclusive {
			return fmt.Sprintf("pa.Check.in_range(%s, %s)", pyNumber(ch.Min), pyNumber(ch.Max))
		}
		return fmt.Sprintf("pa.Check.in_range(%s, %s, include_min=False, include_max=False)", pyNumber(ch.Min), pyNumber(ch.Max))
	case CheckRegex:
		return "pa.Check.str_matches(" + pyRegex(ch.Pattern) + ")"
	case CheckIsin:
		vals := make([]string, len(ch.Values))
		for i, v := range ch.Values {
			vals[i] = pyLiteralFor(t, v)
		}
		return "pa.Check.isin([" + strings.Join(vals, ", ") + "])"
	}
	return ""
}

// sameColumn compares column names as the constraint parser does.
func sameColumn(a, b string) bool {
	norm := func(s string) string {
		return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '_' || r == ' ' || r == '-' }), " ")
	}
	return norm(a) == norm(b)
}

// pyLiteralFor writes v as a literal of the column's type when it reads as
// one, else as a string.
func pyLiteralFor(t ColumnType, v string) string {
	switch t {
	case TypeInt:
		if n, ok := parseInt(v); ok {
			return strconv.FormatInt(n, 10)
		}
	case TypeFloat:
		if f, ok := parseFloat(v); ok {
			return pyNumber(f)
		}
	case TypeBool:
		switch strings.ToLower(v) {
		case "true":
			return "True"
		case "false":
			return "False"
		}
	}
	return pyString(v)
}

func pyNumber(f float64) string {
	s := fmtFloat(f)
	if strings.Contains(s, "Inf") || strings.Contains(s, "NaN") {
		return fmt.Sprintf("float(%q)", s)
	}
	return s
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// pyString is a Python string literal for any text (escapes quotes,
// backslashes and control characters; other Unicode is kept as is).
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range clean(s) {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// pyRegex prefers a raw string, which keeps the pattern readable.
func pyRegex(p string) string {
	trailing := len(p) - len(strings.TrimRight(p, `\`))
	if !strings.ContainsAny(p, "\"\n\r") && trailing%2 == 0 && clean(p) == p {
		return `r"` + p + `"`
	}
	return pyString(p)
}

// oneLine keeps user text inside a Python comment.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\u2028", " ", "\u2029", " ").Replace(clean(s))
}
