package profile

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDatetime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		pats   []datePat
		layout string // of the first reading
	}{
		{"2024-01-05", []datePat{patISO}, "2006-01-02"},
		{"2024-1-5", []datePat{patISO}, "2006-01-02"},
		{"2024-01-05T10:30:00Z", []datePat{patISO}, "2006-01-02T15:04:05Z07:00"},
		{"2024-01-05T10:30:00.123456789+05:30", []datePat{patISO}, "2006-01-02T15:04:05.999999999Z07:00"},
		{"2024-01-05 10:30", []datePat{patISO}, "2006-01-02 15:04"},
		{"2024-01-05 10:30:00 UTC", []datePat{patISO}, "2006-01-02 15:04:05Z07:00"},
		{"2024/01/05", []datePat{patYMDSlash}, "2006/01/02"},
		{"01/02/2024", []datePat{patMDYSlash, patDMYSlash}, "01/02/2006"},
		{"13/02/2024", []datePat{patDMYSlash}, "02/01/2006"},
		{"02/13/2024", []datePat{patMDYSlash}, "01/02/2006"},
		{"1/5/2024 9:05 AM", []datePat{patMDYSlash, patDMYSlash}, "01/02/2006 3:04 PM"},
		{"05-01-2024", []datePat{patMDYDash, patDMYDash}, "01-02-2006"},
		{"31.12.2023", []datePat{patDMYDot}, "02.01.2006"},
		{"05-Jan-2024", []datePat{patDMonY}, "02-Jan-2006"},
		{"5 January 2024", []datePat{patDMonYSpace}, "2 January 2006"},
		{"Jan 5, 2024", []datePat{patMonDY}, "Jan 2, 2006"},
		{"Sept 5, 2024", []datePat{patMonDY}, "Jan 2, 2006"},
		// not dates
		{"2024-02-30", nil, ""},
		{"2023-02-29", nil, ""},
		{"13/13/2024", nil, ""},
		{"2024-01-05T25:00", nil, ""},
		{"555-123-4567", nil, ""},
		{"20240105", nil, ""},
		{"Mayor Smith", nil, ""},
		{"2024-01-05x", nil, ""},
		{"1.2.3", nil, ""},
	}
	for _, tt := range tests {
		var r dtParse
		ok := parseDatetime(tt.in, &r)
		if ok != (tt.pats != nil) {
			t.Errorf("parseDatetime(%q) ok = %v", tt.in, ok)
			continue
		}
		if !ok {
			continue
		}
		if got := r.pats[:r.n]; !slices.Equal(got, tt.pats) {
			t.Errorf("parseDatetime(%q) patterns = %v, want %v", tt.in, got, tt.pats)
		}
		if l, _ := layoutOf(r.pats[0], r.shape); l != tt.layout {
			t.Errorf("parseDatetime(%q) layout = %q, want %q", tt.in, l, tt.layout)
		}
	}
}

// TestParseDatetimeInstant checks instants against the standard library.
func TestParseDatetimeInstant(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"1970-01-01", "1969-12-31T23:59:59Z", "2024-02-29T12:00:00.5-07:00", "1600-03-01", "9999-12-31 23:59:59"} {
		var r dtParse
		if !parseDatetime(s, &r) {
			t.Fatalf("parseDatetime(%q) failed", s)
		}
		l, _ := layoutOf(r.pats[0], r.shape)
		want, err := timeParse(l, s)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.at[0]; got.sec != want.Unix() || int(got.nsec) != want.Nanosecond() {
			t.Errorf("parseDatetime(%q) = %+v, want %v", s, got, want)
		}
	}
}

func TestNumericStats(t *testing.T) {
	t.Parallel()
	var a numAcc
	a.init(1<<20, 1, 0)
	for _, v := range []int64{5, -3, 9223372036854775807, 7} {
		a.addInt(v)
	}
	st := a.stats()
	if st.IntMax != math.MaxInt64 || st.IntMin != -3 || !st.MedianExact || st.Median != 6 {
		t.Errorf("ints: %+v", st)
	}
	if want := (float64(math.MaxInt64) + 9) / 4; st.Mean != want {
		t.Errorf("mean = %v, want %v (exact int128 sum)", st.Mean, want)
	}

	// Past the storage limit the median comes from a seeded sample.
	var b numAcc
	b.init(1000, 1, 0)
	for i := range 100_000 {
		b.addFloat(float64((i * 7919) % 100_000))
	}
	st = b.stats()
	if st.MedianExact || st.MedianSample != 1000 {
		t.Errorf("want an approximate median from 1000 values, got %+v", st)
	}
	if math.Abs(st.Median-50_000) > 5_000 {
		t.Errorf("approximate median %v too far from 50000", st.Median)
	}
	if st.Min != 0 || st.Max != 99_999 || st.Mean != 49_999.5 {
		t.Errorf("min/max/mean are exact: %+v", st)
	}
}

func TestHLL(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1000, 50_000, 1_000_000} {
		d := distinctAcc{exact: map[uint64]int32{}, limit: exactDistinctKeys}
		for i := range n {
			s := "v" + itoa(i)
			d.add(xxhashString(s), s)
			d.add(xxhashString(s), s) // repeats do not count
		}
		got, exact := d.count()
		if n <= exactDistinctKeys {
			if !exact || got != n {
				t.Errorf("n=%d: got %d exact=%v", n, got, exact)
			}
			continue
		}
		if exact || math.Abs(float64(got-n))/float64(n) > 0.03 {
			t.Errorf("n=%d: estimate %d (exact=%v), want within 3%%", n, got, exact)
		}
	}
}

func TestReservoir(t *testing.T) {
	t.Parallel()
	pick := func(seed uint64, n int) []int {
		r := newRowReservoir(10, seed)
		for i := range n {
			if r.want(i) {
				r.put(i, []string{itoa(i)})
			}
		}
		_, nums := r.sorted()
		return nums
	}
	if a, b := pick(3, 100_000), pick(3, 100_000); !slices.Equal(a, b) {
		t.Fatalf("same seed, different rows: %v %v", a, b)
	}
	if a, b := pick(3, 100_000), pick(4, 100_000); slices.Equal(a, b) {
		t.Error("different seeds, same rows")
	}
	if got := pick(3, 5); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Errorf("fewer rows than k: %v", got)
	}
	// Uniform: over many seeds, rows in each tenth of the file are chosen
	// about equally often.
	var buckets [10]int
	for seed := range uint64(400) {
		for _, n := range pick(seed, 10_000) {
			buckets[(n-1)/1000]++
		}
	}
	for i, c := range buckets {
		if c < 300 || c > 500 {
			t.Errorf("tenth %d chosen %d times of 4000, want about 400", i, c)
		}
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"bin.csv", []byte("a,b\n1,\x00\x01\x02\n"), ErrNotText},
		{"ctrl.json", []byte(strings.Repeat("\x01\x02\x03\x04abc", 50)), ErrNotText},
		{"old.xls", []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest"), ErrUnsupported},
		{"archive.csv", []byte("PK\x03\x04rest of a zip"), ErrUnsupported},
		{"fake.parquet", []byte("a,b\n1,2\n"), ErrUnsupported},
		{"unclosed.csv", append([]byte("a,b\n1,\""), make([]byte, 0)...), nil},
	}
	for _, tt := range tests {
		p := write(tt.name, tt.data)
		_, err := Profile(context.Background(), []Sample{{Name: "s", FileName: tt.name, Path: p}}, Options{})
		if !errors.Is(err, tt.want) && !(tt.want == nil && err == nil) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
		var se *SampleError
		if tt.want != nil && (!errors.As(err, &se) || se.Name != "s" || se.FileName != tt.name) {
			t.Errorf("%s: want a *SampleError naming the sample, got %v", tt.name, err)
		}
	}
	if _, err := Profile(context.Background(), []Sample{{Name: "s", FileName: "x.csv", Path: filepath.Join(dir, "missing.csv")}}, Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestRecordTooLarge: an unclosed quote must not make the reader buffer
// the rest of a large file.
func TestRecordTooLarge(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "q.csv")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("a,b\n1,\"open quote\n")
	line := strings.Repeat("x", 1<<20) + "\n"
	for range (maxRecordBytes >> 20) + 4 {
		f.WriteString(line)
	}
	f.Close()
	_, err = Profile(context.Background(), []Sample{{Name: "q", FileName: "q.csv", Path: p}}, Options{})
	if !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("err = %v, want ErrRecordTooLarge", err)
	}
}

func TestCanceled(t *testing.T) {
	t.Parallel()
	path, _ := writeLargeCSV(t, t.TempDir(), 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Profile(ctx, []Sample{{Name: "s", FileName: "s.csv", Path: path}}, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestInvalidUTF8Later: bytes that are not UTF-8 past the sniffed prefix
// are counted and shown as U+FFFD, not passed to the prompt raw.
func TestInvalidUTF8Later(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("id,name\n")
	for i := range 20_000 {
		b.WriteString(itoa(i) + ",plain\n")
	}
	b.WriteString("20000,caf\xe9\n")
	p := filepath.Join(t.TempDir(), "late.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Profile(context.Background(), []Sample{{Name: "late", FileName: "late.csv", Path: p}}, Options{MaxSampleRows: 30_000})
	if err != nil {
		t.Fatal(err)
	}
	ctx := rep.DataContext()
	if !strings.Contains(ctx, "1 invalid UTF-8 sequence past the first 64 KiB") || !strings.Contains(ctx, "caf\uFFFD") {
		t.Errorf("invalid UTF-8 not reported or not replaced")
	}
	if strings.Contains(ctx, "\xe9") {
		t.Error("raw invalid byte in DataContext")
	}
}

func TestPandasNames(t *testing.T) {
	t.Parallel()
	got, renamed := pandasNames([]string{"a", "a", "", "a.1", "b", "a"})
	want := []string{"a", "a.2", "Unnamed: 2", "a.1", "b", "a.3"}
	if !renamed {
		t.Error("renamed = false")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pandasNames (-want +got):\n%s", diff)
	}
}

// TestWideFile: thousands of columns share the memory budgets.
func TestWideFile(t *testing.T) {
	t.Parallel()
	const cols, rows = 3000, 50
	var b strings.Builder
	for j := range cols {
		if j > 0 {
			b.WriteByte(',')
		}
		b.WriteString("c" + itoa(j) + "_id")
	}
	b.WriteByte('\n')
	for i := range rows {
		for j := range cols {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(itoa(i*j + i))
		}
		b.WriteByte('\n')
	}
	p := filepath.Join(t.TempDir(), "wide.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Profile(context.Background(), []Sample{{Name: "wide", FileName: "wide.csv", Path: p}}, Options{MaxSampleRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	sp := rep.Samples[0]
	if len(sp.Columns) != cols || sp.Rows != rows {
		t.Fatalf("got %d columns, %d rows", len(sp.Columns), sp.Rows)
	}
	ids := 0
	for _, c := range sp.Columns {
		if c.IDLike {
			ids++
		}
	}
	// Only the first idColumnsTracked id-ish columns keep hashes; the rest
	// are known unique through their exact distinct sets. Column 0 is all
	// distinct too (i*0+i).
	if ids != cols {
		t.Errorf("%d id-like columns, want %d", ids, cols)
	}
}

// TestThousandsSeparators: a column of numbers grouped in threes by
// commas, as US and Excel exports write them ("1,234", "12,500"), is told
// to the model as a thousands separator (thousands=","), never as a
// decimal comma, which would read 1,234 as 1.234; a European decimal comma
// ("1,5") stays one.
func TestThousandsSeparators(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sales.csv")
	body := "amount,rate\n999,\"1,5\"\n\"1,234\",\"2,25\"\n\"12,500\",\"0,5\"\n\"2,000\",\"3,75\"\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Profile(t.Context(), []Sample{{Name: "sales", FileName: "sales.csv", Path: path}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	amount, rate := rep.Samples[0].Columns[0], rep.Samples[0].Columns[1]
	if !amount.ThousandsComma || amount.DecimalComma {
		t.Errorf("amount: thousands %v, decimal comma %v; want a thousands separator", amount.ThousandsComma, amount.DecimalComma)
	}
	if !rate.DecimalComma || rate.ThousandsComma {
		t.Errorf("rate: thousands %v, decimal comma %v; want a decimal comma", rate.ThousandsComma, rate.DecimalComma)
	}
	if text := rep.DataContext(); !strings.Contains(text, `thousands=","`) {
		t.Errorf("the data context does not say thousands=\",\":\n%s", text)
	}
}

// TestDatesWithAndWithoutATime: a column whose dates have a time of day
// on some values only (2024/01/05 and 2024/01/05 14:30) has no one format
// that reads them all: it is told as mixed, each shape with its count,
// where it was told the majority's format, on which pandas fails for the
// rest ("unconverted data remains").
func TestDatesWithAndWithoutATime(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "orders.csv")
	body := "ordered\n2024/01/05\n2024/01/06\n2024/01/07\n2024/01/08 14:30\n2024/01/09 09:15\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Profile(t.Context(), []Sample{{Name: "orders", FileName: "orders.csv", Path: path}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Samples[0].Columns[0]
	if c.Time == nil || len(c.Time.Mixed) != 2 || c.Time.Mixed[0].Strftime != "%Y/%m/%d" || c.Time.Mixed[0].Count != 3 ||
		c.Time.Mixed[1].Strftime != "%Y/%m/%d %H:%M" || c.Time.Mixed[1].Count != 2 {
		t.Fatalf("time %+v: want two shapes, 3 dates and 2 with a time", c.Time)
	}
	if text := rep.DataContext(); !strings.Contains(text, "format='mixed'") {
		t.Errorf("the data context does not say the formats are mixed:\n%s", text)
	}
}
