package client

import (
	"context"
	"errors"
	"io"

	"github.com/autocoder/autocoder/pkg/messages"
)

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
