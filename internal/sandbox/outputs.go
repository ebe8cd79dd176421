package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The Go values of typed outputs (AcceptanceOutput.Outputs), by type:
//
//	int        int64
//	float      float64 (finite)
//	str        string (one trailing newline removed)
//	bool       bool, from exactly "true" or "false"
//	datetime   string, ISO-8601 normalized: "2024-05-01T13:30:00+02:00", or
//	           without an offset when the script wrote none ("2024-05-01T13:30:00")
//	timedelta  float64 seconds
//	File       FileValue
//	Dir        DirValue

// FileValue is the value of a File output.
type FileValue struct {
	Path   string `json:"path"` // relative to /var/outputs: the output's name
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Object is where the file was stored (sha256:<hex> in the outputs
	// object store), when the worker stores outputs.
	Object string `json:"object,omitempty"`
}

// DirValue is the value of a Dir output.
type DirValue struct {
	Path  string `json:"path"`  // relative to /var/outputs: the output's name
	Files int    `json:"files"` // regular files in it, at any depth
	Size  int64  `json:"size"`  // their total size
	// Object is where the directory's manifest was stored (sha256:<hex> in
	// the outputs object store; see DirManifest), when the worker stores
	// outputs. Each file is stored as its own object.
	Object string `json:"object,omitempty"`
}

// DirManifest and ManifestFile are the manifest of a Dir output in the
// outputs object store: part of the wire contract (messages.DirManifest),
// named here for the code that makes them.
type (
	DirManifest  = messages.DirManifest
	ManifestFile = messages.ManifestFile
)

// maxScalarOutput caps a scalar output file: more is not a scalar.
const maxScalarOutput = 1 << 20

var (
	intRe     = regexp.MustCompile(`^[+-]?[0-9]+$`)
	decimalRe = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	// ISO-8601 duration without years and months (they have no fixed length).
	durationRe = regexp.MustCompile(`^([+-])?P(?:([0-9]+(?:[.,][0-9]+)?)W)?(?:([0-9]+(?:[.,][0-9]+)?)D)?` +
		`(?:T(?:([0-9]+(?:[.,][0-9]+)?)H)?(?:([0-9]+(?:[.,][0-9]+)?)M)?(?:([0-9]+(?:[.,][0-9]+)?)S)?)?$`)
	calendarDurationRe = regexp.MustCompile(`^[+-]?P[0-9.,]*[YM]|^[+-]?P(?:[0-9.,]+[YMWD])*[0-9.,]+M`)
)

// ParseValue parses the content of a scalar output file as typ, strictly.
// Surrounding whitespace is ignored (a str keeps it, minus one trailing
// newline).
func ParseValue(typ messages.Type, data []byte) (any, error) {
	if len(data) > maxScalarOutput {
		return nil, fmt.Errorf("is %d bytes, too large for a %s value (declare it File)", len(data), typ)
	}
	if !utf8.Valid(data) {
		return nil, errors.New("is not UTF-8 text")
	}
	raw := string(data)
	s := strings.TrimSpace(raw)
	switch typ {
	case messages.TypeStr:
		raw = strings.TrimSuffix(raw, "\n")
		return strings.TrimSuffix(raw, "\r"), nil
	case messages.TypeInt:
		if !intRe.MatchString(s) {
			return nil, fmt.Errorf("%s is not an integer", quote(s))
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s does not fit in 64 bits", quote(s))
		}
		return n, nil
	case messages.TypeFloat:
		if !decimalRe.MatchString(s) {
			return nil, fmt.Errorf("%s is not a finite decimal number", quote(s))
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s is out of the float64 range", quote(s))
		}
		return f, nil
	case messages.TypeBool:
		// Contract 2 (docs/contracts.md): exactly true or false. Python's str(True) is "True",
		// so the message says what to write instead.
		switch s {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("%s is not a bool: write true or false (lower case; not str(True))", quote(s))
	case messages.TypeDatetime:
		return parseDatetime(s)
	case messages.TypeTimedelta:
		return parseTimedelta(s)
	}
	return nil, fmt.Errorf("type %q is not a scalar type", typ)
}

// datetimeLayouts are the ISO-8601 forms accepted, 'T' separated (a space
// is turned into 'T' first, as Python's str(datetime) uses one). Go accepts
// a fractional second after the seconds without it being in the layout.
var datetimeLayouts = []struct {
	layout string
	zoned  bool
}{
	{"2006-01-02T15:04:05Z07:00", true},
	{"2006-01-02T15:04:05Z0700", true},
	{"2006-01-02T15:04:05Z07", true},
	{"2006-01-02T15:04:05", false},
	{"2006-01-02T15:04Z07:00", true},
	{"2006-01-02T15:04", false},
	{"2006-01-02", false},
}

func parseDatetime(s string) (any, error) {
	v := s
	if len(v) > 10 && (v[10] == ' ' || v[10] == 't') {
		v = v[:10] + "T" + v[11:]
	}
	for _, l := range datetimeLayouts {
		t, err := time.Parse(l.layout, v)
		if err != nil {
			continue
		}
		if l.zoned {
			return t.Format("2006-01-02T15:04:05.999999999Z07:00"), nil
		}
		return t.Format("2006-01-02T15:04:05.999999999"), nil
	}
	return nil, fmt.Errorf("%s is not an ISO-8601 datetime (e.g. 2024-05-01T13:30:00+00:00)", quote(s))
}

func parseTimedelta(s string) (any, error) {
	if decimalRe.MatchString(s) {
		f, err := strconv.ParseFloat(s, 64)
		if err == nil && !math.IsInf(f, 0) {
			return f, nil
		}
	}
	m := durationRe.FindStringSubmatch(s)
	if m == nil || strings.HasSuffix(s, "P") || strings.HasSuffix(s, "T") {
		if calendarDurationRe.MatchString(s) {
			return nil, fmt.Errorf("%s uses years or months, which have no fixed length", quote(s))
		}
		return nil, fmt.Errorf("%s is not an ISO-8601 duration (e.g. PT1H30M) or a number of seconds "+
			"(write timedelta.total_seconds() or an isoformat)", quote(s))
	}
	units := []float64{7 * 86400, 86400, 3600, 60, 1}
	total := 0.0
	for i, u := range units {
		if m[i+2] == "" {
			continue
		}
		f, err := strconv.ParseFloat(strings.Replace(m[i+2], ",", ".", 1), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: bad number %q", quote(s), m[i+2])
		}
		total += f * u
	}
	if math.IsInf(total, 0) {
		return nil, fmt.Errorf("%s is out of range", quote(s))
	}
	if m[1] == "-" {
		total = -total
	}
	return total, nil
}

func quote(s string) string { return strconv.Quote(trim.Head(s, 80)) }

// ParseOutputs checks every declared output of a run against what it left
// in /var/outputs (res from a RunSpec with CollectOutputs), and returns the
// typed values of the good ones and a problem, naming the output, for each
// other one.
func ParseOutputs(res RunResult, outputs map[string]messages.Type) (map[string]any, []string) {
	return ParseOutputsWithin(res, outputs, OutputCaps{})
}

// ParseOutputsWithin is ParseOutputs of a run collected within caps, which
// its problems name.
func ParseOutputsWithin(res RunResult, outputs map[string]messages.Type, caps OutputCaps) (map[string]any, []string) {
	values := map[string]any{}
	var problems []string
	names := make([]string, 0, len(outputs))
	for name := range outputs {
		names = append(names, name)
	}
	sort.Strings(names)
	isDir := map[string]bool{}
	for _, d := range res.OutputDirs {
		isDir[d] = true
	}
	omitted := map[string]bool{}
	for _, o := range res.OutputsOmitted {
		omitted[o] = true
	}
	for _, name := range names {
		typ := outputs[name]
		where := OutputsDir + "/" + name
		problem := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("output %s (%s): ", name, typ)+fmt.Sprintf(format, args...))
		}
		data, isFile := res.Outputs[name]
		switch {
		case name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == "..":
			problem("not a file name")
		case typ == messages.TypeDir:
			if !isDir[name] {
				if isFile || omitted[name] {
					problem("%s is a file, want a directory", where)
				} else {
					problem("%s was not written", where)
				}
				continue
			}
			if left := omittedUnder(name, res.OutputsOmitted); len(left) > 0 {
				problem("%d entries left out (the first: %s): past %s, or not regular files", len(left), left[0], caps)
				continue
			}
			v := DirValue{Path: name}
			for path, content := range res.Outputs {
				if strings.HasPrefix(path, name+"/") {
					v.Files++
					v.Size += int64(len(content))
				}
			}
			values[name] = v
		case isDir[name]:
			problem("%s is a directory, want a file", where)
		case omitted[name]:
			problem("%s is not a regular file, or is past %s", where, caps)
		case !isFile:
			problem("%s was not written", where)
		case typ == messages.TypeFile:
			sum := sha256.Sum256(data)
			values[name] = FileValue{Path: name, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
		default:
			v, err := ParseValue(typ, data)
			if err != nil {
				problem("%s", err)
				continue
			}
			values[name] = v
		}
	}
	return values, problems
}
