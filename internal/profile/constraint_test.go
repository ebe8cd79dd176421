package profile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseConstraint(t *testing.T) {
	t.Parallel()
	cols := []string{"quantity", "unit_price", "Price", "order_id", "status", "email", "zip code", "discount", "created_at", "end_date", "start_date"}
	gt := func(col string, v float64, incl bool) Check {
		return Check{Column: col, Type: CheckGreaterThan, Value: v, Inclusive: incl}
	}
	lt := func(col string, v float64, incl bool) Check {
		return Check{Column: col, Type: CheckLessThan, Value: v, Inclusive: incl}
	}
	between := func(col string, lo, hi float64, incl bool) Check {
		return Check{Column: col, Type: CheckBetween, Min: lo, Max: hi, Inclusive: incl}
	}
	tests := []struct {
		text string
		want Check
		ok   bool
	}{
		// signs
		{"quantity must be positive", gt("quantity", 0, false), true},
		{"Quantity should be a positive integer.", gt("quantity", 0, false), true},
		{"quantity must be non-negative", gt("quantity", 0, true), true},
		{"quantity is nonnegative", gt("quantity", 0, true), true},
		{"quantity must not be negative", gt("quantity", 0, true), true},
		{"discount must be negative", lt("discount", 0, false), true},
		{"discount is non-positive", lt("discount", 0, true), true},
		{"discount can't be positive", lt("discount", 0, true), true},
		// comparisons
		{"unit_price > 0", gt("unit_price", 0, false), true},
		{"unit price >= 0.5", gt("unit_price", 0.5, true), true},
		{"Unit Price must be greater than 10", gt("unit_price", 10, false), true},
		{"unit-price greater than or equal to 10", gt("unit_price", 10, true), true},
		{"unit_price must be at least 1,000", gt("unit_price", 1000, true), true},
		{"unit_price must be at most $5,000.50", lt("unit_price", 5000.5, true), true},
		{"unit_price below 100", lt("unit_price", 100, false), true},
		{"unit_price < -3", lt("unit_price", -3, false), true},
		{"unit_price must not exceed 99.9", lt("unit_price", 99.9, true), true},
		{"unit_price cannot be more than 20", lt("unit_price", 20, true), true},
		{"unit_price no less than 2", gt("unit_price", 2, true), true},
		{"unit_price must be less than or equal to 1e6", lt("unit_price", 1e6, true), true},
		{"unit_price greater than zero", gt("unit_price", 0, false), true},
		{"unit_price ≤ 7", lt("unit_price", 7, true), true},
		// ranges
		{"price between 0 and 10000", between("Price", 0, 10000, true), true},
		{"PRICE must be between 1.5 and 2.5 (exclusive)", between("Price", 1.5, 2.5, false), true},
		{"price in the range 0 to 100", between("Price", 0, 100, true), true},
		{"price from 5 to 10", between("Price", 5, 10, true), true},
		{"0 <= price <= 100", between("Price", 0, 100, true), true},
		{"0 < price < 1", between("Price", 0, 1, false), true},
		{"price must be at least 1 and at most 9", between("Price", 1, 9, true), true},
		{"price between 10 and 1", Check{}, false},
		{"0 < price <= 1", Check{}, false},
		// isin
		{"status must be one of 'active', 'inactive' or 'pending'", Check{Column: "status", Type: CheckIsin, Values: []string{"active", "inactive", "pending"}}, true},
		{"status in ('A', 'B')", Check{Column: "status", Type: CheckIsin, Values: []string{"A", "B"}}, true},
		{"status is one of [open, closed]", Check{Column: "status", Type: CheckIsin, Values: []string{"open", "closed"}}, true},
		{"status is either Open or Closed", Check{Column: "status", Type: CheckIsin, Values: []string{"Open", "Closed"}}, true},
		{"allowed values for status: new, used", Check{Column: "status", Type: CheckIsin, Values: []string{"new", "used"}}, true},
		// regex
		{`email matches /^[^@]+@[^@]+$/`, Check{Column: "email", Type: CheckRegex, Pattern: `^[^@]+@[^@]+$`}, true},
		{`zip code must match the pattern '^\d{5}$'`, Check{Column: "zip code", Type: CheckRegex, Pattern: `^\d{5}$`}, true},
		{"zip_code matches regex `[0-9]{5}`", Check{Column: "zip code", Type: CheckRegex, Pattern: `[0-9]{5}`}, true},
		{`email matches ^\S+@\S+$`, Check{Column: "email", Type: CheckRegex, Pattern: `^\S+@\S+$`}, true},
		{"email must be in a valid format", Check{}, false},
		// not null, unique
		{"order_id is required", Check{Column: "order_id", Type: CheckNotNull}, true},
		{"order_id must not be null", Check{Column: "order_id", Type: CheckNotNull}, true},
		{"order_id cannot be empty", Check{Column: "order_id", Type: CheckNotNull}, true},
		{"no missing values in order_id", Check{Column: "order_id", Type: CheckNotNull}, true},
		{"order_id must be unique", Check{Column: "order_id", Type: CheckUnique}, true},
		{"`order_id` has no duplicates", Check{Column: "order_id", Type: CheckUnique}, true},
		// not for the parser
		{"end_date must be after start_date", Check{}, false},
		{"quantity must be positive and unique", Check{}, false},
		{"the totals must balance", Check{}, false},
		{"discount at most 50%", Check{}, false},
		{"", Check{}, false},
		// the longest column name wins: "unit_price" over "Price"
		{"unit_price is required", Check{Column: "unit_price", Type: CheckNotNull}, true},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			got, ok := ParseConstraint(tt.text, cols)
			if ok != tt.ok {
				t.Fatalf("ParseConstraint(%q) ok = %v, want %v (got %+v)", tt.text, ok, tt.ok, got)
			}
			if !ok {
				if got.Type != CheckNone || got.Text != tt.text {
					t.Errorf("unparsed: got Type %q Text %q, want none and the input", got.Type, got.Text)
				}
				return
			}
			tt.want.Text = tt.text
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseConstraint(%q) mismatch (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestParseConstraintWithoutColumns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want Check
	}{
		{"quantity must be positive", Check{Column: "quantity", Type: CheckGreaterThan}},
		{"The column unit_price should be at most 10", Check{Column: "unit_price", Type: CheckLessThan, Value: 10, Inclusive: true}},
		{"customer id is required", Check{Column: "customer id", Type: CheckNotNull}},
	}
	for _, tt := range tests {
		got, ok := ParseConstraint(tt.text, nil)
		if !ok {
			t.Errorf("ParseConstraint(%q, nil) not parsed", tt.text)
			continue
		}
		tt.want.Text = tt.text
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("ParseConstraint(%q, nil) mismatch (-want +got):\n%s", tt.text, diff)
		}
	}
}
