package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/autocoder/autocoder/internal/codemode"
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
	reg, err := codemode.DiscoverToolRefs(ctx, c.JetStream().Conn(), entries)
	if err != nil {
		return nil, err
	}
	return reg.ToolDescriptions()
}
