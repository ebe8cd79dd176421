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

// Load reads the files and folders of a job's context into a bundle: each
// file's text (HTML stripped) under its path relative to the entry's
// parent folder. Folders are walked in name order, skipping hidden names.
// It fails on a missing path, a file that is not documentation or not
// UTF-8, and past messages.MaxContextFiles, MaxContextFile or
// MaxContextBytes, naming the file and the bound.
func Load(paths []string) (messages.ContextBundle, error) {
	var b messages.ContextBundle
	total := 0
	add := func(path, name string) error {
		if len(b.Files) >= messages.MaxContextFiles {
			return fmt.Errorf("context: more than %d documentation files (messages.MaxContextFiles)", messages.MaxContextFiles)
		}
		text, err := readDoc(path)
		if err != nil {
			return err
		}
		total += len(text)
		if total > messages.MaxContextBytes {
			return fmt.Errorf("context: more than %s of text at %s (messages.MaxContextBytes)", messages.FormatBytes(messages.MaxContextBytes), path)
		}
		b.Files = append(b.Files, messages.ContextFile{Path: filepath.ToSlash(name), Text: text})
		return nil
	}
	for _, p := range paths {
		if err := loadEntry(p, add); err != nil {
			return messages.ContextBundle{}, err
		}
	}
	if len(b.Files) == 0 {
		return b, fmt.Errorf("context: %w: no .md, .txt or .html file in %s", ErrNotDocs, strings.Join(paths, ", "))
	}
	return b, nil
}

// loadEntry adds one context path: a documentation file, or every one in a folder.
func loadEntry(p string, add func(path, name string) error) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("context: %w", err)
	}
	if !fi.IsDir() {
		if !docExts[strings.ToLower(filepath.Ext(p))] {
			return fmt.Errorf("context %s: %w (want .md, .markdown, .txt, .rst, .html or .htm)", p, ErrNotDocs)
		}
		return add(p, filepath.Base(p))
	}
	root := filepath.Clean(p)
	var files []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && docExts[strings.ToLower(filepath.Ext(path))] {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("context %s: %w", p, err)
	}
	sort.Strings(files)
	for _, f := range files {
		rel, err := filepath.Rel(filepath.Dir(root), f)
		if err != nil {
			rel = f
		}
		if err := add(f, rel); err != nil {
			return err
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
