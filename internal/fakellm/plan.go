package fakellm

import (
	"bytes"
	"encoding/json"
	"strings"
)

// AsksForPlan reports whether req is a one-round code call: a solution
// request whose schema has a plan property (internal/llm's
// PlannedSolutionSchema), sent as json_schema or, in the fallback
// formats, written into a system message.
func AsksForPlan(req Request) bool {
	if req.SchemaName != "solution" {
		return false
	}
	if len(req.Schema) > 0 {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(req.Schema, &s) == nil {
			_, ok := s.Properties["plan"]
			return ok
		}
	}
	for _, m := range req.Messages {
		if m.Role == "system" && strings.Contains(m.Content, `"plan"`) {
			return true
		}
	}
	return false
}

// withPlan adds plan (a JSON object) as the plan field of content, a JSON
// object without one; anything else comes back as it is.
func withPlan(content string, plan json.RawMessage) string {
	var obj map[string]json.RawMessage
	if len(plan) == 0 || json.Unmarshal([]byte(content), &obj) != nil {
		return content
	}
	if _, has := obj["plan"]; has {
		return content
	}
	obj["plan"] = plan
	b, err := json.Marshal(obj)
	if err != nil {
		return content
	}
	return string(b)
}

// inlinePlan is what a transcript's model does when it is asked for the
// plan with the code (Play): a scripted solution without a plan gets the
// transcript's first plan reply, as a model that was asked for both
// writes both. Other replies pass unchanged.
func (s *Server) inlinePlan(req Request, r Reply) Reply {
	s.mu.Lock()
	plan := s.transcriptPlan
	s.mu.Unlock()
	if r.kind != kindContent || len(plan) == 0 || !AsksForPlan(req) {
		return r
	}
	r.content = withPlan(r.content, plan)
	return r
}

// firstPlan is a transcript's first plan reply, compacted, if it is an
// object.
func firstPlan(t *Transcript) json.RawMessage {
	rs := t.Replies["plan"]
	if len(rs) == 0 || firstByte(rs[0]) != '{' {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, rs[0]) != nil {
		return nil
	}
	return buf.Bytes()
}
