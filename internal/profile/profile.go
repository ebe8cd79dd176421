package profile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Defaults for Options fields left at their zero value.
const (
	DefaultMaxSampleRows = 100
	DefaultMaxScanRows   = 1_000_000
)

// Sample is one file to profile.
type Sample struct {
	Name     string // sample name in the job spec, e.g. "sales"
	FileName string // file name under /var/inputs, e.g. "sales.csv"; its extension picks the format
	Path     string // where to read the file on this host
}

// Options tune Profile. The zero value of every field means its default.
type Options struct {
	// MaxSampleRows is how many representative rows are shown per sample;
	// default 100 (DefaultMaxSampleRows), negative means none.
	MaxSampleRows int
	// MaxScanRows caps the data rows read per sample for statistics; default
	// 1_000_000. The report says when a file continues past the cap.
	MaxScanRows int
	// MaxScanBytes caps the bytes read per sample (checked between rows);
	// default 0, no cap beyond MaxScanRows.
	MaxScanBytes int64
	// Seed picks the representative rows. Same file and seed, same rows; the
	// zero value is as good a fixed seed as any.
	Seed uint64
	// Constraints are natural-language rules from the job spec ("price
	// between 0 and 10000"). Parsed ones become checks in the schemas.
	Constraints []string
}

func (o Options) withDefaults() Options {
	if o.MaxSampleRows == 0 {
		o.MaxSampleRows = DefaultMaxSampleRows
	}
	if o.MaxSampleRows < 0 {
		o.MaxSampleRows = 0
	}
	if o.MaxScanRows <= 0 {
		o.MaxScanRows = DefaultMaxScanRows
	}
	if o.MaxScanBytes <= 0 {
		o.MaxScanBytes = math.MaxInt64
	}
	return o
}

// Format is how a sample was read.
type Format string

// The formats Profile recognises.
const (
	FormatCSV     Format = "csv"
	FormatTSV     Format = "tsv"
	FormatJSON    Format = "json"  // a JSON array of objects
	FormatJSONL   Format = "jsonl" // JSON Lines: one object per line
	FormatParquet Format = "parquet"
	FormatExcel   Format = "xlsx"
	FormatText    Format = "text"  // fallback: line count and first lines
	FormatEmpty   Format = "empty" // a zero-byte file (or only whitespace)
)

// Tabular reports whether the format has rows and columns.
func (f Format) Tabular() bool {
	switch f {
	case FormatCSV, FormatTSV, FormatJSON, FormatJSONL, FormatParquet, FormatExcel:
		return true
	}
	return false
}

// ColumnType is the inferred type of a column.
type ColumnType string

// The column types. TypeNull is a column whose every value is missing.
const (
	TypeInt      ColumnType = "int"
	TypeFloat    ColumnType = "float"
	TypeBool     ColumnType = "bool"
	TypeDatetime ColumnType = "datetime"
	TypeString   ColumnType = "string"
	TypeNull     ColumnType = "null"
)

// Report is the profile of every sample plus the constraints read from Options.
type Report struct {
	Samples []*SampleProfile
	// Checks are the constraints ParseConstraint understood, in input order.
	// A caller may append checks it got elsewhere (the `constraint` LLM
	// call) before rendering the schemas.
	Checks []Check
	// Kept are the constraints ParseConstraint read into a check that does
	// not fit the samples (a numeric bound on a text column, ...; Admit
	// says why): the data context keeps them as text the code must
	// enforce, the schema as a comment, and they are not sent to the
	// model, which could only read them the same way.
	Kept []KeptCheck
	// Unparsed are the constraints it did not; ask the model, or keep them as
	// prompt text (DataContext lists them).
	Unparsed []string
}

// SampleProfile describes one sample.
type SampleProfile struct {
	Name      string
	FileName  string // under /var/inputs
	Format    Format
	Delimiter rune   // CSV/TSV only
	Encoding  string // "utf-8", "utf-8 with BOM", "latin-1", "cp1252", "utf-16le", "utf-16be"; empty for binary formats
	// Compression is "gzip" when the file was gzip-compressed, else empty.
	Compression string
	SizeBytes   int64 // on disk
	// ScannedBytes is how far into the (decompressed) file the scan read;
	// approximate, as reads are buffered.
	ScannedBytes int64

	Rows          int  // data rows scanned (header excluded)
	Truncated     bool // the file has more rows than were scanned
	DuplicateRows int  // rows equal to an earlier scanned row
	// RaggedShort and RaggedLong count CSV rows with fewer or more fields than
	// the header; missing cells count as null, extra cells are ignored.
	RaggedShort, RaggedLong int
	Columns                 []*ColumnProfile
	// SampleRows are the representative rows, as text, in file order;
	// SampleRowNumbers are their 1-based data row numbers.
	SampleRows       [][]string
	SampleRowNumbers []int
	Sheet            string   // Excel: the sheet profiled (pandas' default, the first)
	Sheets           []string // Excel: every sheet

	// Text fallback.
	Lines      int      // lines counted
	FirstLines []string // the first lines, as read

	Notes []string
}

// ColumnProfile is what one column holds, over the scanned rows.
type ColumnProfile struct {
	Name  string
	Type  ColumnType
	Count int // non-null values
	Nulls int
	// Kinds counts the non-null values by the type each one parsed as; more
	// than one kind in a string column means mixed values.
	Kinds map[ColumnType]int
	// Examples are a few values of each kind, first seen first, for mixed columns.
	Examples map[ColumnType][]string

	Distinct      int
	DistinctExact bool // false: a HyperLogLog estimate (about 1% error)
	Unique        bool // every non-null value differs (known exactly)
	IDLike        bool // unique, no nulls, int or string, and an id-ish name

	Num  *NumericStats  // int and float columns
	Time *DatetimeStats // datetime columns
	// Top are the most frequent values, for low-cardinality columns.
	Top            []ValueCount
	MinLen, MaxLen int  // string columns: length in characters
	Nested         bool // JSON objects or arrays among the values
	// DecimalComma: every string value is a number written with a decimal
	// comma ("1,5"); pandas reads them as numbers with decimal=",".
	DecimalComma bool
	// ThousandsComma: every string value is a number whose digits are
	// grouped in threes by commas ("1,234", "12,500.5"); pandas reads them
	// as numbers with thousands=",".
	ThousandsComma bool
}

// NumericStats are computed over every scanned value, at full float64 precision.
type NumericStats struct {
	Min, Max float64
	// IntMin and IntMax are exact for int columns (float64 is not, past 2^53).
	IntMin, IntMax int64
	Mean           float64
	Std            float64 // sample standard deviation (n-1), as pandas
	Median         float64
	// MedianExact is false when the column had more values than the
	// in-memory budget: the median is then that of a uniform random sample
	// (seeded) of MedianSample values, accurate to about 1/sqrt(n) in rank.
	MedianExact  bool
	MedianSample int
	distinct     int // exact distinct values when every value was kept, else 0
}

// DatetimeStats describe a datetime column.
type DatetimeStats struct {
	Layout   string // Go layout, e.g. "2006-01-02"
	Strftime string // the same for Python, e.g. "%Y-%m-%d"
	// ISO is true for ISO 8601 / RFC 3339 values, which pandas parses without a format.
	ISO bool
	// Zoned values carry a UTC offset or "Z".
	Zoned bool
	// Ambiguous lists other layouts that read every value too, with another
	// meaning (01/02/2006 against 02/01/2006). Layout is pandas' default reading.
	Ambiguous []string
	// Mixed lists the layouts found when no single one reads every value,
	// with how many values each reads.
	Mixed    []LayoutCount
	Min, Max string // earliest and latest values, as written
}

// LayoutCount is a datetime layout and how many values it reads.
type LayoutCount struct {
	Layout, Strftime string
	Count            int
}

// ValueCount is a value and how often it occurs.
type ValueCount struct {
	Value string
	Count int
}

// SampleError is the error for a sample that cannot be profiled.
type SampleError struct {
	Name, FileName string
	Err            error
}

func (e *SampleError) Error() string {
	return fmt.Sprintf("profile sample %q (%s): %v", e.Name, e.FileName, e.Err)
}

func (e *SampleError) Unwrap() error { return e.Err }

// Errors a SampleError may wrap.
var (
	// ErrNotText: a file that should be text (CSV, JSON, ...) is binary.
	ErrNotText = errors.New("profile: not a text file")
	// ErrUnsupported: a format the profiler cannot read (legacy .xls, a zip archive).
	ErrUnsupported = errors.New("profile: unsupported format")
	// ErrRecordTooLarge: one record is larger than maxRecordBytes, usually an unclosed quote.
	ErrRecordTooLarge = errors.New("profile: record too large")
)

// Profile reads each sample (streaming, within the row cap), infers column
// types and statistics, picks representative rows, and parses the
// constraints. A sample that cannot be read is an error (*SampleError);
// an empty file is not, it gets an "empty" profile.
func Profile(ctx context.Context, samples []Sample, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	rep := &Report{}
	for _, s := range samples {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sp, err := profileSample(ctx, s, opts)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &SampleError{Name: s.Name, FileName: s.FileName, Err: err}
		}
		rep.Samples = append(rep.Samples, sp)
	}
	var columns []string
	for _, sp := range rep.Samples {
		for _, c := range sp.Columns {
			columns = append(columns, c.Name)
		}
	}
	tables := rep.schemaTables()
	for _, text := range opts.Constraints {
		if strings.TrimSpace(text) == "" {
			continue
		}
		c, ok := ParseConstraint(text, columns)
		if !ok {
			rep.Unparsed = append(rep.Unparsed, text)
			continue
		}
		if c, why := admit(tables, c); why != "" {
			rep.Kept = append(rep.Kept, KeptCheck{Check: c, Why: why})
		} else {
			rep.Checks = append(rep.Checks, c)
		}
	}
	return rep, nil
}

func profileSample(ctx context.Context, s Sample, opts Options) (*SampleProfile, error) {
	fileName := s.FileName
	if fileName == "" {
		fileName = filepath.Base(s.Path)
	}
	sp := &SampleProfile{Name: s.Name, FileName: fileName}
	f, err := os.Open(s.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%w: %s is a directory", ErrUnsupported, s.Path)
	}
	sp.SizeBytes = st.Size()
	sc := &scanner{ctx: ctx, opts: opts, sp: sp, file: f}
	if err := sc.run(); err != nil {
		return nil, err
	}
	return sp, nil
}
