package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
// empty p is the root itself. The longest part of the path that exists on disk
// is resolved through its symbolic links and must stay under the root, so a
// link in the workspace cannot carry a write outside it; a dangling link is
// refused, since writing through it would create its target wherever it points.
// The check and the caller's I/O are not atomic: the sandbox, not this
// function, is the boundary against a process racing to swap a directory.
func Resolve(root, p string) (string, error) {
	switch {
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("%w: %q", ErrNUL, p)
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`):
		return "", fmt.Errorf("%w: %q: give a path relative to the workspace", ErrAbsolute, p)
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if part == ".." {
			return "", fmt.Errorf("%w: %q: give a path inside the workspace", ErrParent, p)
		}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("workspace: resolve root %s: %w", root, err)
	}
	existing, rest, err := longestExisting(filepath.Join(realRoot, filepath.Clean("/"+p)))
	if err != nil {
		return "", fmt.Errorf("workspace: %q: %w", p, err)
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrEscape, p, err)
	}
	if !within(realRoot, real) {
		return "", fmt.Errorf("%w: %q resolves to %s", ErrEscape, p, real)
	}
	return filepath.Join(real, rest), nil
}

// longestExisting splits full into its longest prefix present on disk and the
// rest, which a write would create.
func longestExisting(full string) (existing, rest string, err error) {
	existing = full
	for {
		_, err := os.Lstat(existing)
		if err == nil {
			return existing, rest, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return existing, rest, nil
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
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
