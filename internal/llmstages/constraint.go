package llmstages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/profile"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// maxModelConstraints caps the constraints one stage asks the model about;
// the rest stay in the prompt as text.
const maxModelConstraints = 20

// constraint asks the model, one call per constraint, to read each
// constraint the deterministic parser could not into a check, admits the
// checks that fit the samples, and renders the data context and schemas
// again with them. A constraint the model cannot map (check_type none, an
// unknown column, a reply that stays invalid) is not an error: it stays in
// the prompt as text, and Unapplied says why. Only a model that cannot be
// reached fails the stage.
func (h *Handlers) constraint(ctx context.Context, cmd *messages.StageCommand, in messages.ConstraintInput) (stagework.Output[messages.ConstraintOutput], error) {
	var total stagework.Output[messages.ConstraintOutput]
	if len(in.Render) == 0 {
		return total, badInput(cmd.Stage, "render is empty")
	}
	var rd profile.Rendition
	if err := json.Unmarshal(in.Render, &rd); err != nil {
		return total, badInput(cmd.Stage, "decode render: %v", err)
	}
	var (
		checks    []profile.Check
		read      []messages.ConstraintCheck
		unapplied []string
		textOnly  []string
		n         notes
	)
	keep := func(text, why string) {
		textOnly = append(textOnly, text)
		unapplied = append(unapplied, text+": "+why)
	}
	for i, text := range in.Constraints {
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		if i >= maxModelConstraints {
			keep(text, fmt.Sprintf("more than %d constraints for the model; kept as text", maxModelConstraints))
			continue
		}
		out, err := call[messages.Constraint](ctx, h, cmd, llm.ConstraintSchema, prompts.Constraint(text, in.Columns))
		reply := out.Value
		total.Usage = total.Usage.Add(out.Usage)
		total.Messages = append(total.Messages, out.Messages...)
		if errors.Is(err, llm.ErrInvalidReply) {
			n.add("constraint %q: the model's reply was unusable (%v); kept as text", text, err)
			keep(text, "the model's reply was unusable")
			continue
		}
		if err != nil {
			return total, err
		}
		c, why := checkFromReply(text, reply)
		if why != "" {
			keep(text, why)
			continue
		}
		admitted, why := rd.Admit(c)
		if why != "" {
			// WithChecks keeps it as text with the reason, as Profile
			// does with the parser's checks that do not fit.
			unapplied = append(unapplied, text+": "+why)
			checks = append(checks, c)
			continue
		}
		c = admitted
		checks = append(checks, c)
		read = append(read, messages.ConstraintCheck{Constraint: text, Check: c.String(), Explanation: strings.TrimSpace(reply.Explanation)})
	}
	rd = rd.WithChecks(checks, textOnly)
	total.Notes = n
	total.Value = messages.ConstraintOutput{Checks: read, Unapplied: unapplied, DataContext: rd.DataContext(), GeneratedSchemas: rd.PanderaSchemas()}
	return total, nil
}

// checkFromReply turns a `constraint` reply into a check, or says why it
// cannot be one. greater_than and less_than are strict; between includes
// both ends (docs/contracts.md's Contract 3 reading, as Pandera's gt, lt and in_range).
func checkFromReply(text string, r messages.Constraint) (profile.Check, string) {
	c := profile.Check{Text: text}
	explain := strings.TrimSpace(r.Explanation)
	if r.CheckType == "none" || r.CheckType == "" {
		why := "not a check on one column"
		if explain != "" {
			why += " (" + trim.Middle(explain, 300) + ")"
		}
		return c, why
	}
	if r.ColumnName == nil || strings.TrimSpace(*r.ColumnName) == "" {
		return c, "the model named no column"
	}
	c.Column = strings.TrimSpace(*r.ColumnName)
	p := r.Parameters
	need := func(v *float64, name string) (float64, string) {
		if v == nil {
			return 0, "parameters." + name + " is missing"
		}
		return *v, ""
	}
	var why string
	switch r.CheckType {
	case "greater_than":
		c.Type = profile.CheckGreaterThan
		c.Value, why = need(p.Value, "value")
	case "less_than":
		c.Type = profile.CheckLessThan
		c.Value, why = need(p.Value, "value")
	case "between":
		c.Type, c.Inclusive = profile.CheckBetween, true
		if c.Min, why = need(p.Min, "min"); why == "" {
			c.Max, why = need(p.Max, "max")
		}
	case "regex":
		c.Type = profile.CheckRegex
		if p.Pattern == nil {
			why = "parameters.pattern is missing"
		} else {
			c.Pattern = *p.Pattern
		}
	case "isin":
		c.Type = profile.CheckIsin
		for _, v := range p.Values {
			switch x := v.(type) {
			case string:
				c.Values = append(c.Values, x)
			case float64:
				c.Values = append(c.Values, strconv.FormatFloat(x, 'g', -1, 64))
			case json.Number:
				c.Values = append(c.Values, x.String())
			}
		}
	case "not_null":
		c.Type = profile.CheckNotNull
	default:
		why = fmt.Sprintf("unknown check type %q", r.CheckType)
	}
	return c, why
}
