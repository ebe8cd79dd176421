package codemodestages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"sort"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemode/pyexec"
	"github.com/autocoder/autocoder/pkg/messages"
)

// FileStore keeps the files Python programs write, by content hash;
// sandboxstages.ObjectStoreOutputs (the outputs object store) is one.
type FileStore interface {
	Put(ctx context.Context, sha256Hex string, data []byte) error
}

// run runs the program in the job's interpreter: CPython in the sandbox
// (the default) or Starlark in this process. Its error is a
// *codemode.Error for the program's failures, another for the sandbox's.
func (h *Handlers) run(ctx context.Context, in messages.CodeModeExecInput, reg *codemode.Registry) (codemode.Result, []messages.CodeModeFile, error) {
	if in.Interpreter == messages.InterpreterStarlark {
		res, err := codemode.Run(ctx, in.Code, reg, h.cfg.Limits)
		return res, nil, err
	}
	if h.cfg.Python == nil {
		return codemode.Result{}, nil, bus.Permanent(errors.New("this sandbox-worker has no sandbox for Python programs"))
	}
	res, err := h.cfg.Python.Run(ctx, in.Code, reg)
	var ce *codemode.Error
	if err != nil && !errors.As(err, &ce) {
		return codemode.Result{}, nil, err
	}
	files, serr := h.storeFiles(ctx, res.Files)
	if serr != nil {
		return codemode.Result{}, nil, serr
	}
	return res.Result, files, err
}

// storeFiles stores the program's files and lists them, sorted by name.
func (h *Handlers) storeFiles(ctx context.Context, files map[string][]byte) ([]messages.CodeModeFile, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]messages.CodeModeFile, 0, len(names))
	for _, n := range names {
		data := files[n]
		sum := sha256.Sum256(data)
		digest := hex.EncodeToString(sum[:])
		f := messages.CodeModeFile{Name: n, Size: int64(len(data)), SHA256: digest, ContentType: contentType(n, data), Chart: pyexec.IsImage(n)}
		if h.cfg.Files != nil {
			if err := h.cfg.Files.Put(ctx, digest, data); err != nil {
				return nil, fmt.Errorf("codemode_exec: store %s: %w", n, err)
			}
			f.Object = messages.ObjectRef{SHA256: digest}.String()
		}
		out = append(out, f)
	}
	return out, nil
}

// contentType is the file's media type: by extension, else sniffed.
func contentType(name string, data []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return http.DetectContentType(data)
}
