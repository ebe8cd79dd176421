package profile

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func profileFile(t *testing.T, name, body string, constraints ...string) *Report {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(name, filepath.Ext(name))
	rep, err := Profile(context.Background(), []Sample{{Name: base, FileName: name, Path: p}}, Options{Constraints: constraints})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestRenditionRoundTrip: a report's rendition survives JSON, even with
// statistics JSON cannot hold (infinite values), and renders to the same
// text as the report.
func TestRenditionRoundTrip(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"mixed.csv", "dates.csv", "records.json", "sales.tsv", "injection.csv"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(filepath.Join("testdata/samples", name))
			if err != nil {
				t.Fatal(err)
			}
			rep := profileFile(t, name, string(body), goldenConstraints[name]...)
			b, err := json.Marshal(rep.Rendition())
			if err != nil {
				t.Fatal(err)
			}
			var rd Rendition
			if err := json.Unmarshal(b, &rd); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(rep.DataContext(), rd.DataContext()); diff != "" {
				t.Errorf("data context (-report +rendition):\n%s", diff)
			}
			if diff := cmp.Diff(rep.PanderaSchemas(), rd.PanderaSchemas()); diff != "" {
				t.Errorf("schemas (-report +rendition):\n%s", diff)
			}
		})
	}
	rep := profileFile(t, "inf.csv", "x,y\ninf,1\n-inf,2\n1.5,3\n")
	if _, err := json.Marshal(rep.Rendition()); err != nil {
		t.Errorf("rendition of infinite values: %v", err)
	}
}

// TestWithChecks: checks added later (the constraint stage's) land in the
// schema and the data context like parsed ones, and what stays text is
// listed as text.
func TestWithChecks(t *testing.T) {
	t.Parallel()
	rep := profileFile(t, "orders.csv", "id,region,price\n1,north,2.5\n2,south,30\n", "price must be positive", "north orders cost more", "prices are sane")
	if diff := cmp.Diff([]string{"north orders cost more", "prices are sane"}, rep.Unparsed); diff != "" {
		t.Fatalf("unparsed (-want +got):\n%s", diff)
	}
	rd := rep.Rendition()
	c, why := rd.Admit(Check{Column: "PRICE", Type: CheckLessThan, Value: 10000, Text: "prices are sane"})
	if why != "" || c.Column != "price" {
		t.Fatalf("Admit = %+v, %q", c, why)
	}
	rd = rd.WithChecks([]Check{c}, []string{"north orders cost more"})
	schema := rd.PanderaSchemas()["orders"]
	if want := `"price": pa.Column("float64", checks=[pa.Check.gt(0), pa.Check.lt(10000)], nullable=False),  # constraint: price must be positive; constraint: prices are sane`; !strings.Contains(schema, want) {
		t.Errorf("schema lacks %q:\n%s", want, schema)
	}
	ctx := rd.DataContext()
	for _, want := range []string{
		"- \"price must be positive\": check \"price\" > 0\n- \"prices are sane\": check \"price\" < 10000\n- \"north orders cost more\": not parsed into a check",
	} {
		if !strings.Contains(ctx, want) {
			t.Errorf("data context lacks %q:\n%s", want, ctx)
		}
	}
	if strings.Count(ctx, "prices are sane") != 1 {
		t.Errorf("a constraint read by the model is still listed as text:\n%s", ctx)
	}
	// The report itself is unchanged.
	if strings.Contains(rep.DataContext(), "< 10000") {
		t.Error("WithChecks changed the report")
	}
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	rd := profileFile(t, "t.csv", "id,name,amount\n1,a,2.5\n2,b,3\n").Rendition()
	tests := []struct {
		check Check
		why   string
	}{
		{Check{Column: "amount", Type: CheckBetween, Min: 0, Max: 10}, ""},
		{Check{Column: "name", Type: CheckRegex, Pattern: "^[a-z]+$"}, ""},
		{Check{Column: "name", Type: CheckIsin, Values: []string{"a", "b"}}, ""},
		{Check{Column: "id", Type: CheckNotNull}, ""},
		{Check{Column: "total", Type: CheckGreaterThan}, `no sample has a column "total"`},
		{Check{Column: "amount", Type: CheckBetween, Min: 5, Max: 1}, "the range is not min <= max"},
		{Check{Column: "amount", Type: CheckGreaterThan, Value: math.Inf(1)}, "the bound is not a finite number"},
		{Check{Column: "name", Type: CheckGreaterThan, Value: 1}, "a numeric bound on a string column"},
		{Check{Column: "amount", Type: CheckRegex, Pattern: "x"}, "a pattern on a float column"},
		{Check{Column: "name", Type: CheckRegex}, "the pattern is empty"},
		{Check{Column: "name", Type: CheckRegex, Pattern: `ab\`}, "the pattern is not a valid regular expression (trailing backslash at end of expression)"},
		{Check{Column: "name", Type: CheckRegex, Pattern: `(ab`}, "the pattern is not a valid regular expression (missing closing ))"},
		{Check{Column: "name", Type: CheckRegex, Pattern: `[ab`}, "the pattern is not a valid regular expression (missing closing ])"},
		{Check{Column: "name", Type: CheckRegex, Pattern: `ab)`}, "the pattern is not a valid regular expression (unexpected ))"},
		{Check{Column: "name", Type: CheckRegex, Pattern: `(?=a)(b)\1\\`}, ""}, // Python has lookaheads and backreferences
		{Check{Column: "name", Type: CheckIsin}, "the list of values is empty"},
		{Check{Column: "name", Type: CheckNone}, `check type "none" cannot be enforced`},
	}
	for _, tc := range tests {
		if _, why := rd.Admit(tc.check); why != tc.why {
			t.Errorf("Admit(%+v) = %q, want %q", tc.check, why, tc.why)
		}
	}
}

// TestMisfitsKeptAsText: a check that does not fit its column's type is
// kept as text the code must enforce, never listed as a check, whether the
// parser read it (Profile) or the model did (WithChecks), and neither goes
// to the model again (Unparsed).
func TestMisfitsKeptAsText(t *testing.T) {
	t.Parallel()
	rep := profileFile(t, "orders.csv", "id,region,price\n1,north,2.5\n2,south,30\n",
		"region must be positive", "price matches /^[0-9]+$/", "price must be positive")
	wantKept := []KeptCheck{
		{Check: Check{Column: "region", Type: CheckGreaterThan, Text: "region must be positive"}, Why: "a numeric bound on a string column"},
		{Check: Check{Column: "price", Type: CheckRegex, Pattern: "^[0-9]+$", Text: "price matches /^[0-9]+$/"}, Why: "a pattern on a float column"},
	}
	if diff := cmp.Diff(wantKept, rep.Kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if len(rep.Checks) != 1 || rep.Checks[0].Text != "price must be positive" || len(rep.Unparsed) != 0 {
		t.Errorf("checks %+v, unparsed %q", rep.Checks, rep.Unparsed)
	}
	// The model reads a misfit too: the same path.
	rd := rep.Rendition().WithChecks([]Check{{Column: "id", Type: CheckRegex, Pattern: "x", Text: "ids look like x"}}, nil)
	ctx := rd.DataContext()
	for _, want := range []string{
		`- "price must be positive": check "price" > 0`,
		`- "region must be positive": not applied as a check (a numeric bound on a string column); the code must enforce it`,
		`- "price matches /^[0-9]+$/": not applied as a check (a pattern on a float column); the code must enforce it`,
		`- "ids look like x": not applied as a check (a pattern on a int column); the code must enforce it`,
	} {
		if !strings.Contains(ctx, want) {
			t.Errorf("data context lacks %q:\n%s", want, ctx)
		}
	}
	if strings.Contains(ctx, `check "region"`) || strings.Contains(ctx, "matches \"") {
		t.Errorf("a misfit is listed as a check:\n%s", ctx)
	}
	schema := rd.PanderaSchemas()["orders"]
	for _, want := range []string{
		`"region": pa.Column(str, nullable=False),  # constraint not applied (a numeric bound on a string column): region must be positive`,
		`"id": pa.Column("int64", nullable=False),  # constraint not applied (a pattern on a int column): ids look like x`,
		`"price": pa.Column("float64", checks=[pa.Check.gt(0)], nullable=False),`,
	} {
		if !strings.Contains(schema, want) {
			t.Errorf("schema lacks %q:\n%s", want, schema)
		}
	}
}
