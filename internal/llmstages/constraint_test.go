package llmstages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/profile"
	"github.com/autocoder/autocoder/pkg/messages"
)

// seqClient answers structured calls in order: a string is a JSON reply,
// an error is returned as it is.
type seqClient struct {
	mu      sync.Mutex
	replies []any
	reqs    []llm.StructuredRequest
}

func (c *seqClient) Structured(_ context.Context, req llm.StructuredRequest) (llm.StructuredReply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
	usage := messages.Usage{InputTokens: 50, OutputTokens: 10, Calls: 1}
	if len(c.replies) == 0 {
		return llm.StructuredReply{}, errors.New("seq: no reply left")
	}
	r := c.replies[0]
	c.replies = c.replies[1:]
	if err, ok := r.(error); ok {
		return llm.StructuredReply{Usage: usage}, err
	}
	js := r.(string)
	return llm.StructuredReply{JSON: json.RawMessage(js), Raw: js, Usage: usage}, nil
}

// constraintInput profiles a small CSV as the profile stage does and
// returns the constraint stage's input for the constraints the parser
// leaves.
func constraintInput(t *testing.T, constraints ...string) messages.ConstraintInput {
	t.Helper()
	p := filepath.Join(t.TempDir(), "orders.csv")
	if err := os.WriteFile(p, []byte("id,region,price,shipped\n1,north,2.5,2024-01-02\n2,south,30,2024-01-05\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := profile.Profile(context.Background(), []profile.Sample{{Name: "orders", FileName: "orders.csv", Path: p}}, profile.Options{Constraints: constraints})
	if err != nil {
		t.Fatal(err)
	}
	rd := rep.Rendition()
	in := messages.ConstraintInput{Constraints: rep.Unparsed}
	for _, c := range rd.Columns() {
		in.Columns = append(in.Columns, messages.DataColumn{Sample: c.Sample, Name: c.Name, Type: string(c.Type)})
	}
	if in.Render, err = json.Marshal(rd); err != nil {
		t.Fatal(err)
	}
	return in
}

func constraintReply(column, checkType string, params string) string {
	col := "null"
	if column != "" {
		col = fmt.Sprintf("%q", column)
	}
	if params == "" {
		params = `{"value": null, "min": null, "max": null, "pattern": null, "values": null}`
	}
	return fmt.Sprintf(`{"column_name": %s, "check_type": %q, "parameters": %s, "explanation": "because"}`, col, checkType, params)
}

func TestConstraintStage(t *testing.T) {
	t.Parallel()
	in := constraintInput(t, "price must be positive", "prices are sane", "regions are the four compass points",
		"north orders ship first", "price stays low", "costs are sane", "we like it")
	if len(in.Constraints) != 6 {
		t.Fatalf("unparsed %q", in.Constraints)
	}
	c := &seqClient{replies: []any{
		constraintReply("PRICE", "between", `{"value": null, "min": 0, "max": 10000, "pattern": null, "values": null}`),
		constraintReply("region", "isin", `{"value": null, "min": null, "max": null, "pattern": null, "values": ["north", "south", "east", "west", 1.5]}`),
		constraintReply("", "none", ""),
		constraintReply("cost", "less_than", `{"value": 5, "min": null, "max": null, "pattern": null, "values": null}`),
		fmt.Errorf("price stays low: %w: the reply never parsed", llm.ErrInvalidReply),
		constraintReply("region", "greater_than", `{"value": 3, "min": null, "max": null, "pattern": null, "values": null}`),
	}}
	h := newHandlers(t, c, Config{})
	out, err := h.Handle(context.Background(), command(t, messages.StageConstraint, in))
	if err != nil {
		t.Fatal(err)
	}
	got := value[messages.ConstraintOutput](t, out)
	wantChecks := []messages.ConstraintCheck{
		{Constraint: "prices are sane", Check: `0 <= "price" <= 10000`, Explanation: "because"},
		{Constraint: "regions are the four compass points", Check: `"region" in ["north", "south", "east", "west", "1.5"]`, Explanation: "because"},
	}
	if diff := cmp.Diff(wantChecks, got.Checks); diff != "" {
		t.Errorf("checks (-want +got):\n%s", diff)
	}
	wantUnapplied := []string{
		"north orders ship first: not a check on one column (because)",
		`price stays low: no sample has a column "cost"`,
		"costs are sane: the model's reply was unusable",
		"we like it: a numeric bound on a string column",
	}
	if diff := cmp.Diff(wantUnapplied, got.Unapplied); diff != "" {
		t.Errorf("unapplied (-want +got):\n%s", diff)
	}
	schema := got.GeneratedSchemas["orders"]
	for _, want := range []string{
		`"price": pa.Column("float64", checks=[pa.Check.gt(0), pa.Check.in_range(0, 10000)]`,
		`"region": pa.Column(str, checks=[pa.Check.isin(["north", "south", "east", "west", "1.5"])]`,
	} {
		if !strings.Contains(schema, want) {
			t.Errorf("schema lacks %q:\n%s", want, schema)
		}
	}
	for _, want := range []string{`"prices are sane": check 0 <= "price" <= 10000`, `"we like it": not applied as a check (a numeric bound on a string column); the code must enforce it`, `"price stays low": not applied as a check (no sample has a column "cost"); the code must enforce it`, `"north orders ship first": not parsed into a check`} {
		if !strings.Contains(got.DataContext, want) {
			t.Errorf("data context lacks %q:\n%s", want, got.DataContext)
		}
	}
	if len(c.reqs) != 6 || out.Usage.Calls != 6 {
		t.Errorf("%d calls, usage %+v: want one per unparsed constraint", len(c.reqs), out.Usage)
	}
	for i, r := range c.reqs {
		if r.Schema.Name != "constraint" || !strings.Contains(r.Messages[1].Content, in.Constraints[i]) || strings.Contains(r.Messages[1].Content, "price must be positive") {
			t.Errorf("request %d: schema %s, user message:\n%s", i, r.Schema.Name, r.Messages[1].Content)
		}
	}
	if n := len(out.Messages); n != 5*3 {
		t.Errorf("%d conversation messages, want system, user and reply for each of the 5 answered calls", n)
	}
}

func TestConstraintStageModelDown(t *testing.T) {
	t.Parallel()
	in := constraintInput(t, "prices are sane")
	down := &llm.CallError{Err: errors.New("connection refused")}
	h := newHandlers(t, &seqClient{replies: []any{error(down)}}, Config{})
	out, err := h.Handle(context.Background(), command(t, messages.StageConstraint, in))
	if err == nil || errors.Is(err, llm.ErrInvalidReply) {
		t.Fatalf("err = %v, want the client's error", err)
	}
	if out.Usage.Calls != 1 {
		t.Errorf("usage %+v: the failed call is still counted", out.Usage)
	}
}

func TestConstraintStageBadInput(t *testing.T) {
	t.Parallel()
	h := newHandlers(t, &seqClient{}, Config{})
	for _, in := range []messages.ConstraintInput{
		{Constraints: []string{"x"}},
		{Constraints: []string{"x"}, Render: json.RawMessage(`[1]`)},
	} {
		if _, err := h.Handle(context.Background(), command(t, messages.StageConstraint, in)); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: err = %v, want ErrBadInput", in.Render, err)
		}
	}
	if h.Version(messages.StageConstraint) == "" {
		t.Error("the constraint stage has no version")
	}
}
