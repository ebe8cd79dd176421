package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Book is a fake model that knows the answers to a set of problems, each
// found by a key that its task's prompt holds (a HumanEval task id, say):
// it answers the plan, solution and tests calls of any job whose prompt
// holds a key, as a model that solves it would. With Quirks it answers
// as real models do: some one-round solutions without their plan, some
// replies wrapped in prose and a fence. Serve it with Server.Handle:
//
//	book := fakellm.NewBook(fakellm.Quirks{OmitPlanEvery: 5, ProseEvery: 3})
//	book.Add(fakellm.Problem{Key: "HumanEval/0", Plan: p, Code: code, Tests: tests})
//	s.Handle(book.Reply)
type Book struct {
	quirks   Quirks
	problems []Problem

	mu      sync.Mutex
	planned int // one-round solution replies so far
	replies int // every reply so far
}

// Problem is one problem the book can answer.
type Problem struct {
	// Key is a string this problem's task prompt holds (the longest key
	// a prompt holds names its problem).
	Key   string
	Plan  messages.Plan
	Code  string
	Tests string
}

// Quirks are the ways real models stray from the reply asked for.
type Quirks struct {
	// OmitPlanEvery n: every n-th one-round solution leaves the plan
	// out. Zero: never.
	OmitPlanEvery int
	// ProseEvery n: every n-th reply comes as prose around a fenced JSON
	// object. Zero: never.
	ProseEvery int
	// Delay is the model latency of every reply.
	Delay time.Duration
}

// NewBook returns an empty book answering with quirks.
func NewBook(q Quirks) *Book { return &Book{quirks: q} }

// Add puts problems in the book. Call it before the book serves.
func (b *Book) Add(ps ...Problem) { b.problems = append(b.problems, ps...) }

// Reply answers req from the book (a Server.Handle func). A request whose
// task is in no problem, or of a schema the book does not write, gets a
// 400 naming it, as a misrouted call should fail loudly.
func (b *Book) Reply(req Request) Reply {
	p, ok := b.find(req)
	if !ok {
		return Status(http.StatusBadRequest, "").ErrorMessage("fakellm: the book has no problem for this task")
	}
	var v any
	switch req.SchemaName {
	case "plan":
		v = p.Plan
	case "solution":
		v = b.solution(req, p)
	case "tests":
		v = messages.Tests{Code: p.Tests}
	case "packages":
		v = messages.Packages{Packages: []string{}}
	default:
		return Status(http.StatusBadRequest, "").ErrorMessage(fmt.Sprintf("fakellm: the book writes no %q replies", req.SchemaName))
	}
	body, err := json.Marshal(v)
	if err != nil {
		return Status(http.StatusInternalServerError, "").ErrorMessage(err.Error())
	}
	content := string(body)
	if b.count(&b.replies, b.quirks.ProseEvery) {
		content = "Here is the " + req.SchemaName + ":\n\n```json\n" + content + "\n```\n\nLet me know if you need anything else."
	}
	return Text(content).Delay(b.quirks.Delay)
}

// solution is the solution reply; a one-round call gets the plan in it,
// unless this is a reply that leaves it out.
func (b *Book) solution(req Request, p Problem) any {
	sol := messages.Solution{Language: "python", Code: p.Code, Packages: []string{}, SystemPackages: []string{}}
	if !AsksForPlan(req) || b.count(&b.planned, b.quirks.OmitPlanEvery) {
		return sol
	}
	return messages.CodeOutput{Solution: sol, Plan: &p.Plan}
}

// count bumps *n and reports whether this is an every-th one.
func (b *Book) count(n *int, every int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	*n++
	return every > 0 && *n%every == 0
}

// find is the problem whose key the request's user messages hold; of
// keys that are prefixes of one another ("HumanEval/1", "HumanEval/10")
// the longest held.
func (b *Book) find(req Request) (Problem, bool) {
	best := -1
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for i, p := range b.problems {
			if (best < 0 || len(p.Key) > len(b.problems[best].Key)) && strings.Contains(m.Content, p.Key) {
				best = i
			}
		}
	}
	if best < 0 {
		return Problem{}, false
	}
	return b.problems[best], true
}
