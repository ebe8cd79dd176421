package jobfile

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/autocoder/autocoder/internal/docsearch"
	"github.com/autocoder/autocoder/pkg/messages"
)

// LocalFiles is where a job's local files (sample files and context
// documents) may come from. A job file is data a user may have been sent:
// its samples are uploaded, profiled and shown to the model, so by default
// they must lie inside Dir, without symbolic links, absolute paths or ..
// (a sample pointing at /etc/shadow would otherwise reach the model and
// the stored result). Resolution goes through an os.Root on Dir, so no
// component can lead outside it.
type LocalFiles struct {
	// Dir is the folder the paths are relative to and must stay inside:
	// the job file's folder, or the current folder for --sample and
	// --context flags.
	Dir string
	// AllowOutside lets paths be absolute, climb out with .., or be (or
	// pass through) symbolic links, which are then resolved to their
	// targets. It is the CLI's --allow-outside.
	AllowOutside bool
}

// ErrOutside is the reason a path is refused under LocalFiles (Sample and
// Context wrap it; Resolve's FieldError says it in words).
var ErrOutside = errors.New("refused")

// Resolve checks spec's local sample and context paths and rewrites them
// to the files they name (object references are left as they are). A
// sample must be a readable regular file; a context entry a file or a
// folder, with no symbolic link where docsearch reads it (Context).
func (lf LocalFiles) Resolve(spec *messages.JobSpec) error {
	for _, name := range slices.Sorted(maps.Keys(spec.Samples)) {
		p := spec.Samples[name]
		if _, isRef := messages.ParseObjectRef(p); isRef {
			continue
		}
		resolved, err := lf.Sample(p)
		if err != nil {
			return &messages.FieldError{Field: "samples." + name, Msg: err.Error()}
		}
		spec.Samples[name] = resolved
	}
	for i, p := range spec.Context {
		if _, isRef := messages.ParseObjectRef(p); isRef {
			continue
		}
		resolved, err := lf.Context(p)
		if err != nil {
			return &messages.FieldError{Field: fmt.Sprintf("context[%d]", i), Msg: err.Error()}
		}
		spec.Context[i] = resolved
	}
	return nil
}

// Sample resolves one sample path: a readable regular file.
func (lf LocalFiles) Sample(p string) (string, error) {
	full, fi, err := lf.resolve("sample file", p)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%s)", p, fileKind(fi.Mode()))
	}
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0) // never blocks, even if it became a FIFO
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", p, unwrapPath(err))
	}
	f.Close()
	return full, nil
}

// Context resolves one context path: a file, or a folder. In a folder,
// the files docsearch reads are those docsearch.FolderFiles lists (one
// rule for both): without AllowOutside, none of them may be or lie behind
// a symbolic link (hidden folders and files that are not documentation
// are not read, so their links do not matter); with it, links are
// followed, as Load follows them.
func (lf LocalFiles) Context(p string) (string, error) {
	full, fi, err := lf.resolve("context path", p)
	if err != nil || !fi.IsDir() || lf.AllowOutside {
		return full, err
	}
	files, err := docsearch.FolderFiles(full, false)
	if err != nil {
		return "", fmt.Errorf("context path %s: %w", p, unwrapPath(err))
	}
	for _, f := range files {
		if f.Link != "" {
			rel, _ := filepath.Rel(full, f.Link)
			return "", fmt.Errorf("%s is a symbolic link, %w (pass --allow-outside to follow it)", filepath.Join(p, rel), ErrOutside)
		}
	}
	return full, nil
}

// Folder resolves a folder path (a Dir input of submit run), uploaded as
// a tar archive of its files and folders. Its own path follows the rule
// of samples: without AllowOutside it lies inside Dir with no link on the
// way; with it, it is resolved to its target. Inside it, a symbolic link
// is refused either way: the archive holds regular files and folders only
// (client.Run), and the whole tree goes to the script, so nothing in it
// may point elsewhere.
func (lf LocalFiles) Folder(p string) (string, error) {
	full, fi, err := lf.resolve("folder", p)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory (%s)", p, fileKind(fi.Mode()))
	}
	err = filepath.WalkDir(full, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(full, path)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link: a folder is uploaded with its regular files and folders only, never through links", filepath.Join(p, rel))
		case !d.IsDir() && !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file or folder (%s): a folder is uploaded with its files and folders only", filepath.Join(p, rel), fileKind(d.Type()))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return full, nil
}

// resolve finds p under the policy and returns its full path and its
// (not followed) file info.
func (lf LocalFiles) resolve(what, p string) (string, fs.FileInfo, error) {
	dir, err := filepath.Abs(lf.Dir)
	if err != nil {
		return "", nil, err
	}
	if lf.AllowOutside {
		full := p
		if !filepath.IsAbs(p) {
			full = filepath.Join(dir, p)
		}
		real, err := filepath.EvalSymlinks(full)
		if err != nil {
			return "", nil, notFound(what, p, err)
		}
		fi, err := os.Lstat(real)
		if err != nil {
			return "", nil, notFound(what, p, err)
		}
		return real, fi, nil
	}
	if !filepath.IsLocal(p) {
		return "", nil, fmt.Errorf("%s is not inside %s: absolute paths and .. are %w (pass --allow-outside to allow them)", p, dir, ErrOutside)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", nil, err
	}
	defer root.Close()
	fi, err := lstatNoLinks(root, what, p)
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(dir, p), fi, nil
}

// lstatNoLinks looks at every component of p under root and refuses a
// symbolic link anywhere on the way, even one that stays inside.
func lstatNoLinks(root *os.Root, what, p string) (fs.FileInfo, error) {
	parts := strings.Split(filepath.Clean(p), string(filepath.Separator))
	var fi fs.FileInfo
	for i := range parts {
		prefix := filepath.Join(parts[:i+1]...)
		var err error
		if fi, err = root.Lstat(prefix); err != nil {
			return nil, notFound(what, p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symbolic link, %w (pass --allow-outside to follow it)", prefix, ErrOutside)
		}
	}
	return fi, nil
}

func notFound(what, p string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %s not found", what, p)
	}
	return fmt.Errorf("%s: %w", p, unwrapPath(err))
}

// unwrapPath drops the *fs.PathError's own copy of the path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
