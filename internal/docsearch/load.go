package docsearch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/autocoder/autocoder/pkg/messages"
)

// ErrNotDocs means a context path cannot be used as documentation.
var ErrNotDocs = errors.New("docsearch: not documentation")

// docExts are the documentation files Load reads; in a folder, other
// files are skipped, and given by name they are an error.
var docExts = map[string]bool{".md": true, ".markdown": true, ".txt": true, ".rst": true, ".html": true, ".htm": true}

// IsDoc reports whether a file name has a documentation extension.
func IsDoc(name string) bool { return docExts[strings.ToLower(filepath.Ext(name))] }

// Load reads the files and folders of a job's context into a bundle: each
// file's text (HTML stripped) under a name that is unique in the bundle:
// a file's base name, a folder's files under the folder's name, with as
// many more parent folders as it takes to tell two of them apart
// (a/README.md and b/README.md). Folders are read as FolderFiles lists
// them, following symbolic links; a file given twice is read once.
// It fails on a missing path, a file that is not documentation or not
// UTF-8, and past messages.MaxContextFiles, MaxContextFile or
// MaxContextBytes, naming the file and the bound.
func Load(paths []string) (messages.ContextBundle, error) {
	var b messages.ContextBundle
	var files []docFile
	seen := map[string]bool{}
	for _, p := range paths {
		found, err := entryFiles(p)
		if err != nil {
			return b, err
		}
		for _, f := range found {
			if seen[f.abs] {
				continue
			}
			seen[f.abs] = true
			if len(files) >= messages.MaxContextFiles {
				return b, fmt.Errorf("context: more than %d documentation files (messages.MaxContextFiles)", messages.MaxContextFiles)
			}
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return b, fmt.Errorf("context: %w: no .md, .txt or .html file in %s", ErrNotDocs, strings.Join(paths, ", "))
	}
	names := uniqueNames(files)
	total := 0
	for i, f := range files {
		text, err := readDoc(f.path)
		if err != nil {
			return messages.ContextBundle{}, err
		}
		total += len(text)
		if total > messages.MaxContextBytes {
			return messages.ContextBundle{}, fmt.Errorf("context: more than %s of text at %s (messages.MaxContextBytes)", messages.FormatBytes(messages.MaxContextBytes), f.path)
		}
		b.Files = append(b.Files, messages.ContextFile{Path: names[i], Text: text})
	}
	return b, nil
}

// docFile is a file Load reads: its path as walked, that path made
// absolute (links not resolved), and how many of its last components
// name it at least.
type docFile struct {
	path, abs string
	k         int
}

// entryFiles lists the documentation files of one context path: the file,
// or the folder's files.
func entryFiles(p string) ([]docFile, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("context: %w", err)
	}
	mk := func(path string, k int) (docFile, error) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return docFile{}, fmt.Errorf("context: %w", err)
		}
		return docFile{path: path, abs: abs, k: k}, nil
	}
	if !fi.IsDir() {
		if !IsDoc(p) {
			return nil, fmt.Errorf("context %s: %w (want .md, .markdown, .txt, .rst, .html or .htm)", p, ErrNotDocs)
		}
		f, err := mk(p, 1)
		return []docFile{f}, err
	}
	root := filepath.Clean(p)
	found, err := FolderFiles(root, true)
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", p, err)
	}
	var out []docFile
	for _, ff := range found {
		rel, err := filepath.Rel(filepath.Dir(root), ff.Path) // docs/guide.md for docs
		if err != nil {
			return nil, fmt.Errorf("context %s: %w", p, err)
		}
		f, err := mk(ff.Path, len(components(rel)))
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// uniqueNames names every file by the last k components of its absolute
// path (slash-separated), taking more of them for files whose names would
// otherwise be the same.
func uniqueNames(files []docFile) []string {
	parts := make([][]string, len(files))
	k := make([]int, len(files))
	for i, f := range files {
		parts[i] = components(f.abs)
		k[i] = min(max(f.k, 1), len(parts[i]))
	}
	name := func(i int) string { return strings.Join(parts[i][len(parts[i])-k[i]:], "/") }
	for {
		groups := map[string][]int{}
		for i := range files {
			groups[name(i)] = append(groups[name(i)], i)
		}
		grew := false
		for _, g := range groups {
			if len(g) < 2 {
				continue
			}
			for _, i := range g {
				if k[i] < len(parts[i]) {
					k[i]++
					grew = true
				}
			}
		}
		if !grew {
			break
		}
	}
	out := make([]string, len(files))
	for i := range files {
		out[i] = name(i)
	}
	return out
}

// components splits a path into its non-empty names.
func components(p string) []string {
	var out []string
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// FolderFile is a documentation file found in a folder.
type FolderFile struct {
	Path string // root joined with the names that lead to the file
	// Link is "" when no symbolic link leads to the file, else the first
	// one on the way from root (a path like Path).
	Link string
}

// FolderFiles is the one rule for which files of a context folder are
// documentation, shared by Load and the CLI's path checks
// (jobfile.LocalFiles): the files with a documentation extension (IsDoc),
// in folders and under names that do not start with '.' (root itself
// excepted), in path order. Root may be a symbolic link to a folder.
//
// With follow, symbolic links inside root are followed, to files and to
// folders, and a folder reached twice is read once (a link loop ends).
// Without it, a link that would be followed (one to a folder, or one with
// a documentation name) is listed itself, with Link set, and not read;
// links to anything else are skipped as any other file is.
func FolderFiles(root string, follow bool) ([]FolderFile, error) {
	var out []FolderFile
	if err := walkDocs(root, "", follow, map[string]bool{}, &out); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func walkDocs(dir, link string, follow bool, seen map[string]bool, out *[]FolderFile) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	if seen[real] {
		return nil
	}
	seen[real] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		mode, via := e.Type(), link
		if mode&fs.ModeSymlink != 0 {
			fi, err := os.Stat(p)
			if err != nil {
				continue // a dangling link names nothing to read
			}
			mode = fi.Mode().Type()
			if via == "" {
				via = p
			}
			if !follow && (mode.IsDir() || IsDoc(p)) {
				*out = append(*out, FolderFile{Path: p, Link: p})
				continue
			}
		}
		switch {
		case mode.IsDir():
			if err := walkDocs(p, via, follow, seen, out); err != nil {
				return err
			}
		case mode.IsRegular() && IsDoc(p):
			*out = append(*out, FolderFile{Path: p, Link: via})
		}
	}
	return nil
}

// readDoc reads one documentation file as text, within MaxContextFile.
func readDoc(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("context: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("context: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("context %s: %w: not a regular file", path, ErrNotDocs)
	}
	data, err := io.ReadAll(io.LimitReader(f, messages.MaxContextFile+1))
	if err != nil {
		return "", fmt.Errorf("context %s: %w", path, err)
	}
	if len(data) > messages.MaxContextFile {
		return "", fmt.Errorf("context %s: larger than %s (messages.MaxContextFile)", path, messages.FormatBytes(messages.MaxContextFile))
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("context %s: %w: not UTF-8 text", path, ErrNotDocs)
	}
	ext := strings.ToLower(filepath.Ext(path))
	if ext == ".html" || ext == ".htm" {
		return StripHTML(string(data)), nil
	}
	return string(data), nil
}
