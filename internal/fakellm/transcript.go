package fakellm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"time"

	"github.com/autocoder/autocoder/internal/jobfile"
)

// Transcript is a scripted model: replies per schema name, loaded from JSON.
// It is how the demos run offline (submit --local, and an llm-worker given
// AUTOCODER_TRANSCRIPT), so it carries a label saying so.
//
//	{
//	  "label": "scripted demo: summarize-sales",
//	  "delay_ms": 200,
//	  "replies": {
//	    "plan":     [{"description": "...", "approach": "..."}],
//	    "solution": [{"language": "python", "code": "...", "packages": [], "system_packages": []}],
//	    "tests":    ["```json\n{\"code\": \"...\"}\n```"]
//	  }
//	}
//
// Each reply is a JSON object, sent as the message content, or a string,
// sent verbatim (for fenced or broken replies). As with Server.On, the last
// reply for a name repeats once the others are used up.
type Transcript struct {
	Label string `json:"label"`
	// DelayMS is a latency added to every reply, in milliseconds.
	DelayMS int                          `json:"delay_ms,omitempty"`
	Replies map[string][]json.RawMessage `json:"replies"`
}

// LoadTranscript reads a transcript, rejecting unknown fields, a missing
// label and replies that are neither objects nor strings.
func LoadTranscript(r io.Reader) (*Transcript, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var t Transcript
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("fakellm: transcript: %w", err)
	}
	if t.Label == "" {
		return nil, errors.New("fakellm: transcript: label is required (say that the replies are scripted)")
	}
	if t.DelayMS < 0 {
		return nil, errors.New("fakellm: transcript: delay_ms is negative")
	}
	if len(t.Replies) == 0 {
		return nil, errors.New("fakellm: transcript: replies is empty")
	}
	for name, rs := range t.Replies {
		if len(rs) == 0 {
			return nil, fmt.Errorf("fakellm: transcript: replies.%s is empty", name)
		}
		for i, raw := range rs {
			if c := firstByte(raw); c != '{' && c != '"' {
				return nil, fmt.Errorf("fakellm: transcript: replies.%s[%d]: want an object or a string", name, i)
			}
		}
	}
	return &t, nil
}

// MaxTranscriptBytes bounds a transcript file (64 MiB): a script of model
// replies, read whole before anything starts.
const MaxTranscriptBytes = 64 << 20

// ReplayFile starts a Server playing the transcript at path, a regular file
// of at most MaxTranscriptBytes, and returns it with the transcript's label,
// which the caller shows wherever the replies are seen. A missing file is
// the *fs.PathError itself. The caller closes the server.
func ReplayFile(path string) (*Server, string, error) {
	data, err := jobfile.ReadRegular(path, MaxTranscriptBytes)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return nil, "", err
	case err != nil:
		return nil, "", fmt.Errorf("transcript %s: %w", path, err)
	}
	t, err := LoadTranscript(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("transcript %s: %w", path, err)
	}
	s := New()
	s.Play(t)
	return s, t.Label, nil
}

// Play queues the transcript's replies on the server, as On does.
func (s *Server) Play(t *Transcript) {
	names := make([]string, 0, len(t.Replies))
	for name := range t.Replies {
		names = append(names, name)
	}
	slices.Sort(names)
	delay := time.Duration(t.DelayMS) * time.Millisecond
	for _, name := range names {
		replies := make([]Reply, 0, len(t.Replies[name]))
		for _, raw := range t.Replies[name] {
			var r Reply
			var text string
			if json.Unmarshal(raw, &text) == nil {
				r = Text(text)
			} else {
				var buf bytes.Buffer
				if err := json.Compact(&buf, raw); err != nil {
					r = Text(string(raw))
				} else {
					r = Text(buf.String())
				}
			}
			replies = append(replies, r.Delay(delay))
		}
		s.On(name, replies...)
	}
}

func firstByte(raw json.RawMessage) byte {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}
