package profile_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/profile"
)

func ExampleProfile() {
	rep, err := profile.Profile(context.Background(), []profile.Sample{
		{Name: "sales", FileName: "sales.tsv", Path: "testdata/samples/sales.tsv"},
	}, profile.Options{MaxSampleRows: 2, Constraints: []string{"units must be positive", "revenue must reconcile with the ledger"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(rep.DataContext(), "\n") {
		if strings.HasPrefix(line, "- \"units\"") || strings.HasPrefix(line, "rows:") {
			fmt.Println(line)
		}
	}
	fmt.Println(len(rep.Checks), "parsed,", len(rep.Unparsed), "for the model:", rep.Unparsed[0])
	fmt.Println(strings.Contains(rep.PanderaSchemas()["sales"], `"units": pa.Column("int64", checks=[pa.Check.gt(0)], nullable=False)`))
	// Output:
	// rows: 5 scanned (the whole file); 1 duplicate row
	// - "units" int: 5 values, no nulls, 4 distinct; min 0, max 10, mean 6.4, median 7, std 4.159326868617084; top "10" x2, "0" x1, "5" x1, "7" x1
	// 1 parsed, 1 for the model: revenue must reconcile with the ledger
	// true
}

func ExampleParseConstraint() {
	c, ok := profile.ParseConstraint("Price must be between 0 and 10,000", []string{"price", "quantity"})
	fmt.Println(ok, c.Column, c.Type, c.Min, c.Max, c.Inclusive)
	_, ok = profile.ParseConstraint("end date after start date", []string{"start date", "end date"})
	fmt.Println(ok)
	// Output:
	// true price between 0 10000 true
	// false
}
