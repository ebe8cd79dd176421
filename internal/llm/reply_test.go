package llm

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseReply(t *testing.T) {
	t.Parallel()
	node, err := compileSchema(PlanSchema)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"description":"d","approach":"a"}`
	tests := []struct {
		name    string
		content string
		want    string // empty: want an error containing wantErr
		wantErr string
	}{
		{"plain", `{"description": "d", "approach": "a"}`, want, ""},
		{"fenced", "```json\n{\"description\": \"d\", \"approach\": \"a\"}\n```", want, ""},
		{"fence inside a string", "```json\n{\"description\": \"d\", \"approach\": \"```py\\nx\\n```\"}\n```", `{"description":"d","approach":"` + "```py\\nx\\n```" + `"}`, ""},
		{"braces inside strings", `{"description": "use {name} and }", "approach": "a"}`, `{"description":"use {name} and }","approach":"a"}`, ""},
		{"prose with braces first", `Use {x}. {"description": "d", "approach": "a"} Thanks {y`, want, ""},
		{"think", `<think>{"description": "draft"}</think>{"description": "d", "approach": "a"}`, want, ""},
		{"nested", `{"plan": {"description": "d", "approach": "a"}}`, want, ""},
		// A string the cut fell in is not closed: the field goes, and a
		// required one is missing (a test file or a program cut short
		// would otherwise pass as whole).
		{"truncated string", `{"description": "d", "approach": "a`, "", `missing required field "approach"`},
		{"truncated after key", `{"approach": "a", "description": "d", "extra"`, `{"approach":"a","description":"d"}`, ""},
		{"truncated escape", `{"description": "d", "approach": "a\`, "", `missing required field "approach"`},
		{"truncated in a string after a whole field", `{"approach": "a", "description": "d", "extra": "cut`, `{"approach":"a","description":"d"}`, ""},
		{"truncated array", `{"description": "d", "approach": "a", "x": [1, 2`, `{"description":"d","approach":"a","x":[1,2]}`, ""},
		{"truncated inner object", `{"description": "d", "approach": "a", "x": [{"k": 1}, {"k": `, `{"description":"d","approach":"a","x":[{"k":1}]}`, ""},
		{"truncated, field missing", `{"description": "d", "appro`, "", `missing required field "approach"`},
		{"truncated in first key", `{"descr`, "", "cut off"},
		{"empty", "  ", "", "empty"},
		{"no object", "I cannot do that.", "", "no JSON object"},
		{"array", `["description", "approach"]`, "", "no JSON object"},
		{"syntax", `{"description": "d" "approach": "a"}`, "", "invalid JSON"},
		{"wrong kind", `{"description": null, "approach": "a"}`, "", `field "description": want string, got null`},
		{"schema error beats prose", `See {this}: {"description": "d"}`, "", `missing required field "approach"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseReply(tt.content, "plan", node)
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseReply = %s, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseReply: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseReplyBoundedOnHostileInput(t *testing.T) {
	t.Parallel()
	node, err := compileSchema(PlanSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		strings.Repeat("{", 100000),
		strings.Repeat(`{"a": [`, 20000),
		strings.Repeat(`{x} `, 50000),
		`{"description": "` + strings.Repeat(`\"`, 50000),
	} {
		if _, err := parseReply(s, "plan", node); err == nil {
			t.Errorf("parseReply(%.20q...) succeeded, want an error", s)
		}
	}
}

func TestValidateSchemas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schema  Schema
		reply   string
		wantErr string
	}{
		{SolutionSchema, `{"language": "python", "code": "x", "packages": ["pandas"], "system_packages": []}`, ""},
		{SolutionSchema, `{"language": "rust", "code": "x", "packages": [], "system_packages": []}`, `"rust" is not one of`},
		{SolutionSchema, `{"language": "python", "code": "x", "packages": "pandas", "system_packages": []}`, `field "packages": want array, got string`},
		{SolutionSchema, `{"language": "python", "code": "x", "packages": [1], "system_packages": []}`, `field "packages[0]": want string, got number`},
		{FixVerificationSchema, `{"all_fixes_applied": "yes", "missing_fixes": [], "explanation": ""}`, `want boolean`},
		{PackageReplacementSchema, `{"replacement": null}`, ""},
		{PackageReplacementSchema, `{"replacement": "pillow"}`, ""},
		{PackageReplacementSchema, `{"replacement": 3}`, `want string or null`},
		{ConstraintSchema, `{"column_name": "price", "check_type": "between", "parameters": {"value": null, "min": 0, "max": 10000, "pattern": null, "values": null}, "explanation": ""}`, ""},
		{ConstraintSchema, `{"column_name": "c", "check_type": "isin", "parameters": {"value": null, "min": null, "max": null, "pattern": null, "values": ["a", 1]}, "explanation": ""}`, ""},
		{ConstraintSchema, `{"column_name": "c", "check_type": "isin", "parameters": {"value": null, "min": null, "max": null, "pattern": null, "values": [true]}, "explanation": ""}`, `"parameters.values[0]" matches no alternative`},
		{ConstraintSchema, `{"column_name": "c", "check_type": "isin", "parameters": {}, "explanation": ""}`, `missing required field "parameters.value"`},
		{TestPatchesSchema, `{"patches": [{"test_name": "t"}]}`, `missing required field "patches[0].fixed_code"`},
	}
	for _, tt := range tests {
		node, err := compileSchema(tt.schema)
		if err != nil {
			t.Fatal(err)
		}
		_, err = parseReply(tt.reply, tt.schema.Name, node)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s %s: %v", tt.schema.Name, tt.reply, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s %s: err = %v, want %q", tt.schema.Name, tt.reply, err, tt.wantErr)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header, ms string
		want       time.Duration
	}{
		{"", "", 0},
		{"2", "", 2 * time.Second},
		{"0.5", "", 500 * time.Millisecond},
		{"-1", "", 0},
		{"soon", "", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), "", 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), "", 0},
		{"2", "250", 250 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := retryAfter(&attempt{retryAfter: tt.header, retryAfterMS: tt.ms}, now); got != tt.want {
			t.Errorf("retryAfter(%q, ms %q) = %s, want %s", tt.header, tt.ms, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	c := &OpenAI{initialBackoff: 500 * time.Millisecond, maxBackoff: 30 * time.Second}
	for n := 1; n <= 12; n++ {
		full := min(500*time.Millisecond<<(n-1), 30*time.Second)
		for range 50 {
			if d := c.backoff(n); d < full/2 || d > full {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", n, d, full/2, full)
			}
		}
	}
}

func TestRefusesFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{&CallError{StatusCode: 400, Message: "response_format type 'json_schema' is not supported"}, true},
		{&CallError{StatusCode: 400, Message: "Unsupported value: 'json_schema'"}, true},
		{&CallError{StatusCode: 422, Message: "body -> response_format -> type: unexpected value"}, true},
		{&CallError{StatusCode: 400, Message: "maximum context length exceeded"}, false},
		{&CallError{StatusCode: 500, Message: "response_format broke"}, false},
		{&CallError{StatusCode: 401, Message: "json_schema"}, false},
	}
	for _, tt := range tests {
		if got := refusesFormat(tt.err); got != tt.want {
			t.Errorf("refusesFormat(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
