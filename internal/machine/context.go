package machine

import (
	"encoding/json"

	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The context record (one entry per model stage that had the job's
// context in its prompt) is bounded like the rest of the state: the most
// recent records, the best chunks of each, names cut short.
const (
	maxContextRecords = 40
	maxContextChunks  = 20
	contextNameBudget = 160
)

// ContextLog is which chunks of the job's context each model stage was
// given (ContextUsed on the result).
type ContextLog struct {
	ContextUsed []messages.StageContext `json:"context_used,omitempty"`
}

// recordContext keeps which chunks of the job's context a model stage's
// prompt held (the stage's output says, beside its own fields).
func (m *Stepper) recordContext(p Pending, r *messages.StageResult) {
	if r.Error != "" || messages.DefaultStages().Pool(r.Stage) != messages.PoolLLM || len(m.s.Task.Context) == 0 {
		return
	}
	var use messages.ContextUse
	if json.Unmarshal(r.Output, &use) != nil || use.Context == nil {
		return
	}
	c := *use.Context
	c.Stage, c.Seq, c.Iteration = r.Stage, r.Seq, p.Iteration
	if len(c.Chunks) > maxContextChunks {
		c.Chunks = c.Chunks[:maxContextChunks] // retrieved chunks come best first
	}
	for i := range c.Chunks {
		c.Chunks[i].File = trim.Middle(c.Chunks[i].File, contextNameBudget)
		c.Chunks[i].Heading = trim.Middle(c.Chunks[i].Heading, contextNameBudget)
	}
	s := m.s
	s.ContextUsed = append(s.ContextUsed, c)
	if len(s.ContextUsed) > maxContextRecords {
		s.ContextUsed = append([]messages.StageContext(nil), s.ContextUsed[len(s.ContextUsed)-maxContextRecords:]...)
	}
}
