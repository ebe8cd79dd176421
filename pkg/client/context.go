package client

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/autocoder/autocoder/pkg/messages"
)

// uploadContext reads the context's files and folders into one bundle
// (Config.LoadContext), uploads it beside the samples and returns the
// wire form: object references, those given already kept.
func (c *Client) uploadContext(ctx context.Context, entries []string) ([]string, error) {
	var refs, paths []string
	for _, e := range entries {
		if _, isRef := messages.ParseObjectRef(e); isRef {
			refs = append(refs, e)
		} else {
			paths = append(paths, e)
		}
	}
	if len(paths) == 0 {
		return refs, nil
	}
	if c.cfg.LoadContext == nil {
		return nil, &messages.FieldError{Field: "context", Msg: "paths need Config.LoadContext; give object references of uploaded ContextBundles"}
	}
	bundle, err := c.cfg.LoadContext(paths)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp("", "autocoder-context-*.json")
	if err != nil {
		return nil, fmt.Errorf("context bundle: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := json.NewEncoder(tmp).Encode(bundle); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("context bundle: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("context bundle: %w", err)
	}
	ref, err := c.PutSampleFile(ctx, "context", tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("upload context: %w", err)
	}
	return append(refs, ref.Object), nil
}
