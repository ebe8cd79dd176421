package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Errors Resolve and Edit wrap; the wrapped message names the path and says what to do.
var (
	ErrAbsolute  = errors.New("workspace: absolute path")
	ErrParent    = errors.New("workspace: path leaves the workspace with ..")
	ErrNUL       = errors.New("workspace: path contains a NUL byte")
	ErrEscape    = errors.New("workspace: path leads outside the workspace through a symbolic link")
	ErrNotFound  = errors.New("workspace: old text not found")
	ErrNotUnique = errors.New("workspace: old text is not unique")
	ErrEmptyOld  = errors.New("workspace: old text is empty")
)

// Resolve returns the absolute path of p inside the workspace root, with the
// root's own symbolic links resolved. p must be relative and free of ".."; an
// empty p is the root itself. The longest part of the path that exists is
// looked up through an os.Root, which follows symbolic links only while they
// stay under the root and never touches a path outside it, so a link in the
// workspace cannot carry a write outside it; a dangling link is refused, since
// writing through it would create its target wherever it points.
//
// Errors name p and nothing of the host: a link that leads out is refused
// with the same words whether its target exists, dangles, is a file or a
// directory, so the model cannot probe the worker's file system through it.
// The check and the caller's I/O are not atomic: the sandbox, not this
// function, is the boundary against a process racing to swap a directory.
func Resolve(root, p string) (string, error) {
	switch {
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("%w: %q", ErrNUL, p)
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`):
		return "", fmt.Errorf("%w: %q: give a path relative to the workspace", ErrAbsolute, p)
	}
	parts := strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == filepath.Separator })
	if slices.Contains(parts, "..") {
		return "", fmt.Errorf("%w: %q: give a path inside the workspace", ErrParent, p)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", errors.New("workspace: the workspace is gone")
	}
	r, err := os.OpenRoot(realRoot)
	if err != nil {
		return "", errors.New("workspace: the workspace is gone")
	}
	defer r.Close()
	existing, rest, err := longestExisting(r, parts)
	if err != nil {
		return "", fmt.Errorf("%w: %q", err, p)
	}
	if _, err := r.Stat(existing); err != nil { // a link at the end: it must lead to something inside
		return "", fmt.Errorf("%w: %q", ErrEscape, p)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(realRoot, existing)) // every link on the way stays inside: os.Root checked
	if err != nil || !within(realRoot, real) {
		return "", fmt.Errorf("%w: %q", ErrEscape, p)
	}
	return filepath.Join(real, rest), nil
}

// ErrNotDir is a path through a file, as if it were a directory.
var ErrNotDir = errors.New("workspace: a part of the path is a file, not a directory")

// longestExisting splits parts into its longest prefix present under r and
// the rest, which a write would create.
func longestExisting(r *os.Root, parts []string) (existing, rest string, err error) {
	for n := len(parts); n > 0; n-- {
		_, err := r.Lstat(filepath.Join(parts[:n]...))
		switch {
		case err == nil:
			return filepath.Join(parts[:n]...), filepath.Join(parts[n:]...), nil
		case errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, syscall.ENOTDIR):
			return "", "", ErrNotDir
		default: // os.Root's "path escapes from parent", a loop: one answer for all
			return "", "", ErrEscape
		}
	}
	return ".", filepath.Join(parts...), nil
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Edit replaces the one occurrence of old in content with replacement. It
// refuses an empty old, an old that does not occur, and one that occurs more
// than once, saying how many times.
func Edit(content, old, replacement string) (string, error) {
	if old == "" {
		return "", fmt.Errorf("%w: give the exact text to replace", ErrEmptyOld)
	}
	switch n := strings.Count(content, old); n {
	case 0:
		return "", fmt.Errorf("%w in the file: read the file and copy the text exactly, whitespace included", ErrNotFound)
	case 1:
		return strings.Replace(content, old, replacement, 1), nil
	default:
		return "", fmt.Errorf("%w: it occurs %d times; include more of the surrounding lines so that it occurs once", ErrNotUnique, n)
	}
}
