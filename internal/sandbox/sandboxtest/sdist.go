package sandboxtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// WriteSdist writes name-1.0.tar.gz into dir: a source distribution whose
// setup.py runs setupCode first, so pip runs it when it builds the
// package (the build's hostile code, for the backends' build caps).
func WriteSdist(t *testing.T, dir, name, setupCode string) {
	t.Helper()
	files := map[string]string{
		"setup.py": setupCode + "\nfrom setuptools import setup\nsetup(name='" + name + "', version='1.0', py_modules=[])\n",
		"PKG-INFO": "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n",
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for file, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name + "-1.0/" + file, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+"-1.0.tar.gz"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
