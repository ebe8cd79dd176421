package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/pkg/messages"
)

// MaxListedTools bounds the tools one CodeModeTools call describes.
const MaxListedTools = 64

// CodeModeTools describes tools as a code-mode job's model sees them (the
// JSON its system prompt shows): each entry a served name or
// alias=served_name, discovered over NATS.
func (c *Client) CodeModeTools(ctx context.Context, entries []string) (json.RawMessage, error) {
	if len(entries) == 0 || len(entries) > MaxListedTools {
		return nil, fmt.Errorf("codemode tools: give between 1 and %d tools", MaxListedTools)
	}
	reg, err := codemode.DiscoverToolRefs(ctx, c.js.Conn(), entries)
	if err != nil {
		return nil, err
	}
	return reg.ToolDescriptions()
}

// ErrNoFile is WriteCodeModeFile's error for a name the job's result does
// not list.
var ErrNoFile = errors.New("client: the code-mode job has no such stored file")

// WriteCodeModeFile copies a file a code-mode job's program wrote (one of
// its result's outputs or charts) to w, checking its hash; found is called
// with the file's record before the first byte.
func (c *Client) WriteCodeModeFile(ctx context.Context, res *messages.Result, name string, found func(messages.CodeModeFile), w io.Writer) error {
	if res.CodeMode == nil {
		return ErrNoFile
	}
	for _, f := range res.CodeMode.Outputs {
		if f.Name != name {
			continue
		}
		ref, ok := messages.ParseObjectRef(f.Object)
		if !ok {
			return ErrNoFile // listed, never stored (a worker without an outputs store)
		}
		found(f)
		return c.streamObject(ctx, ref, w)
	}
	return ErrNoFile
}
