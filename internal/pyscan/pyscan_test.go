package pyscan

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestModules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"plain", "import os\nimport numpy as np\n", []string{"numpy", "os"}},
		{"dotted alias list", "import a.b as c, d\n", []string{"a.b", "d"}},
		{"from", "from x.y import z\n", []string{"x.y"}},
		{"from star", "from pandas import *\n", []string{"pandas"}},
		{"relative", "from . import sibling\nfrom .pkg import thing\nfrom ..up import x\n", nil},
		{"parenthesised multi-line from", "from sklearn.linear_model import (\n    LinearRegression,  # comment with import os\n    Ridge,\n)\n", []string{"sklearn.linear_model"}},
		{"backslash continuation", "import os, \\\n    yaml\n", []string{"os", "yaml"}},
		{"inside function and try", "def f():\n    import json\n    try:\n        import ujson as json\n    except ImportError:\n        pass\n", []string{"json", "ujson"}},
		{"one-line compound", "try: import cv2\nexcept ImportError: cv2 = None\nif True: from PIL import Image\n", []string{"PIL", "cv2"}},
		{"semicolons", "import os; import sys; x = 1; from bs4 import BeautifulSoup\n", []string{"bs4", "os", "sys"}},
		{"comment", "# import notreal\nx = 1  # from fake import thing\n", nil},
		{"docstring", "\"\"\"Module doc.\n\nimport notreal\nfrom fake import x\n\"\"\"\nimport real\n", []string{"real"}},
		{"single-quoted triple", "def f():\n    '''\n    import hidden\n    '''\n    return 1\n", nil},
		{"string literal", "s = 'import os'\nt = \"from x import y\"\n", nil},
		{"escaped quote in string", "s = \"a \\\" import fake\"\nimport real\n", []string{"real"}},
		{"raw and byte prefixes", "p = r'\\d+ import x'\nb = rb\"from y import z\"\nimport re\n", []string{"re"}},
		{"f-string", "s = f\"{x} import fake\"\nimport math\n", []string{"math"}},
		{"dynamic imports", "m = __import__(\"yaml\")\nimport importlib\nn = importlib.import_module('dateutil.parser')\nimportlib.import_module(name)\nimportlib.import_module('.rel', 'pkg')\n", []string{"dateutil.parser", "importlib", "yaml"}},
		{"importorskip", "import pytest\nnp = pytest.importorskip(\"numpy\")\n", []string{"numpy", "pytest"}},
		{"f-string dynamic import ignored", "__import__(f\"mod{n}\")\n", nil},
		{"identifier containing import", "x = my_import_thing\nimportant = 1\nfrom_x = 2\n", nil},
		{"from keyword elsewhere", "raise ValueError() from err\nyield_from = 1\n", nil},
		{"future", "from __future__ import annotations\n", []string{"__future__"}},
		{"spaces around dots", "import a . b\nfrom c . d import e\n", []string{"a.b", "c.d"}},
		{"crlf", "import os\r\nfrom yaml import safe_load\r\n", []string{"os", "yaml"}},
		{"tabs", "if x:\n\timport numpy\n", []string{"numpy"}},
		{"unterminated string", "s = 'oops\nimport real\n", []string{"real"}},
		{"unterminated triple", "import a\ns = \"\"\"never closed\nimport b\n", []string{"a"}},
		{"unicode identifier", "café = 1\nimport müdul\n", []string{"müdul"}},
		{"class body", "class A:\n    import collections\n", []string{"collections"}},
		{"with colon in brackets", "with open(p[1:2]) as f: import csv\n", []string{"csv"}},
		{"def annotations", "def f(x: int) -> str: import textwrap\n", []string{"textwrap"}},
		{"walrus not a body", "if (n := 3): import heapq\n", []string{"heapq"}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Modules(tc.src)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Modules(%q) mismatch (-want +got):\n%s", tc.src, diff)
			}
		})
	}
}

func TestImportsTopLevel(t *testing.T) {
	t.Parallel()
	src := "import a.b as c, d\nfrom x.y import z\nimport google.protobuf.message\nimport os.path\n"
	want := []string{"a", "d", "google", "os", "x"}
	if diff := cmp.Diff(want, Imports(src)); diff != "" {
		t.Errorf("Imports mismatch (-want +got):\n%s", diff)
	}
}

func TestDistributions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		imports     []string
		local       []string
		wantDists   []string
		wantUnknown []string
	}{
		{
			name:      "renames",
			imports:   []string{"sklearn.model_selection", "yaml", "cv2", "PIL", "bs4", "dateutil.parser", "skimage", "Crypto.Cipher", "dotenv", "jwt", "attr"},
			wantDists: []string{"attrs", "beautifulsoup4", "opencv-python", "Pillow", "pycryptodome", "PyJWT", "python-dateutil", "python-dotenv", "PyYAML", "scikit-image", "scikit-learn"},
		},
		{
			name:      "identical names",
			imports:   []string{"numpy", "pandas", "scipy.stats", "requests", "pyarrow.parquet", "matplotlib.pyplot"},
			wantDists: []string{"matplotlib", "numpy", "pandas", "pyarrow", "requests", "scipy"},
		},
		{
			name:      "stdlib and local excluded",
			imports:   []string{"os", "os.path", "collections.abc", "__future__", "solution", "test_solution", "conftest", "helpers", "tomllib", "json"},
			local:     []string{"helpers.py"},
			wantDists: nil,
		},
		{
			name:        "namespace packages by full path",
			imports:     []string{"google.protobuf.json_format", "google.cloud.storage", "google.cloud.spanner", "google"},
			wantDists:   []string{"google-cloud-storage", "protobuf"},
			wantUnknown: []string{"google", "google.cloud.spanner"},
		},
		{
			name:        "unknown reported by top-level name",
			imports:     []string{"frobnicate.sub", "frobnicate", "zzlib"},
			wantUnknown: []string{"frobnicate", "zzlib"},
		},
		{
			// pytest is provided by the sandbox but still reported (see identical).
			name:      "pytest kept",
			imports:   []string{"pytest", "_pytest.monkeypatch"},
			wantDists: []string{"pytest"},
		},
		{
			name:    "relative and blank ignored",
			imports: []string{".local", "", "  "},
		},
		{
			name:      "mpl_toolkits and pkg_resources",
			imports:   []string{"mpl_toolkits.mplot3d", "pkg_resources"},
			wantDists: []string{"matplotlib", "setuptools"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dists, unknown := Distributions(tc.imports, tc.local)
			if diff := cmp.Diff(tc.wantDists, dists, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("dists mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUnknown, unknown, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("unknown mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolverCustomStdlib(t *testing.T) {
	t.Parallel()
	// An interpreter whose stdlib lacks tomllib (3.10) needs it from elsewhere.
	r := Resolver{Stdlib: NewSet("os", "sys")}
	dists, unknown := r.Distributions([]string{"os", "tomllib", "numpy"})
	if diff := cmp.Diff([]string{"numpy"}, dists); diff != "" {
		t.Errorf("dists (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tomllib"}, unknown); diff != "" {
		t.Errorf("unknown (-want +got):\n%s", diff)
	}
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	src := `"""Summarise sales.

import this_is_not_real
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import (
    LinearRegression,
)
try:
    import yaml
except ImportError:  # pragma: no cover
    yaml = None
from google.protobuf import json_format
from solution import main
from .sibling import x


def load(path):
    import openpyxl  # lazy
    return pd.read_excel(path)
`
	dists, unknown := Distributions(Modules(src), nil)
	want := []string{"numpy", "openpyxl", "pandas", "protobuf", "PyYAML", "scikit-learn"}
	if diff := cmp.Diff(want, dists); diff != "" {
		t.Errorf("dists (-want +got):\n%s", diff)
	}
	if len(unknown) != 0 {
		t.Errorf("unknown = %v, want none", unknown)
	}
}

func TestTablesWellFormed(t *testing.T) {
	t.Parallel()
	std := Stdlib()
	if len(renamed) < 30 {
		t.Errorf("renamed has %d entries, want 30+", len(renamed))
	}
	lower := map[string]string{}
	for name := range identical {
		if prev, ok := lower[strings.ToLower(name)]; ok {
			t.Errorf("identical has %q and %q, which differ only by case", prev, name)
		}
		lower[strings.ToLower(name)] = name
		if std.Has(name) {
			t.Errorf("identical %q is a stdlib module", name)
		}
		if _, ok := renamed[name]; ok {
			t.Errorf("%q is in both tables", name)
		}
	}
	for mod, dist := range renamed {
		if std.Has(mod) {
			t.Errorf("renamed %q is a stdlib module", mod)
		}
		if dist == "" || strings.ContainsAny(dist, " /") {
			t.Errorf("renamed %q -> %q is not a distribution name", mod, dist)
		}
	}
	for _, n := range []string{"os", "sys", "tomllib", "asyncio", "__future__", "zoneinfo", "distutils"} {
		if !std.Has(n) {
			t.Errorf("Stdlib() lacks %q", n)
		}
	}
}

func TestDistribution(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"sklearn", "scikit-learn", true},
		{"google.protobuf.message", "protobuf", true},
		{"google.cloud.storage.blob", "google-cloud-storage", true},
		{"Flask", "flask", true},
		{"numpy", "numpy", true},
		{"google", "", false},
		{"nonesuch", "", false},
	}
	for _, tc := range tests {
		got, ok := Distribution(tc.in)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("Distribution(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestLineKinds(t *testing.T) {
	t.Parallel()
	src := "import os\n" + // 0
		"\n" + // 1
		"# comment\n" + // 2
		"x = (1,\n" + // 3
		"     2)\n" + // 4
		"s = \"\"\"\n" + // 5
		"def fake():\n" + // 6
		"\"\"\"\n" + // 7
		"y = 1 + \\\n" + // 8
		"    2\n" + // 9
		"    # indented comment\n" + // 10
		"def real():\n" + // 11
		"    pass" // 12
	want := []LineKind{Statement, Blank, Blank, Statement, Continuation, Statement, Continuation, Continuation,
		Statement, Continuation, Blank, Statement, Statement}
	if diff := cmp.Diff(want, LineKinds(src)); diff != "" {
		t.Errorf("LineKinds mismatch (-want +got):\n%s", diff)
	}
}

// fakePython writes an executable that prints out, standing in for an interpreter.
func fakePython(t *testing.T, out string, code int) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell script stand-in needs a POSIX shell")
	}
	p := filepath.Join(t.TempDir(), "python")
	script := "#!/bin/sh\ncat <<'EOF'\n" + out + "\nEOF\nexit " + string(rune('0'+code)) + "\n"
	if err := writeExecutable(p, []byte(script)); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStdlibFromFake(t *testing.T) {
	t.Parallel()
	names := append([]string(nil), stdlib311[:100]...)
	names = append(names, "tomllib")
	set, err := StdlibFrom(context.Background(), fakePython(t, strings.Join(names, "\n"), 0))
	if err != nil {
		t.Fatal(err)
	}
	if !set.Has("tomllib") || set.Has("numpy") {
		t.Errorf("set = %v", set)
	}

	if _, err := StdlibFrom(context.Background(), fakePython(t, "boom", 1)); err == nil {
		t.Error("failing interpreter: want error")
	}
	if _, err := StdlibFrom(context.Background(), fakePython(t, "os\nsys", 0)); err == nil {
		t.Error("two names: want error")
	}
	if _, err := StdlibFrom(context.Background(), filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("missing interpreter: want error")
	}
}

// TestStdlibFromReal checks the shipped table against a real CPython 3.11
// when one is installed. Skipping is loud, and fails in CI.
func TestStdlibFromReal(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 not found (required in CI)")
		}
		t.Skip("python3 not found")
	}
	set, err := StdlibFrom(context.Background(), py)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := exec.Command(py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(ver)) != "3.11" {
		t.Logf("python3 is %s, not 3.11: checking only that the answer is plausible", strings.TrimSpace(string(ver)))
		if !set.Has("os") || !set.Has("json") {
			t.Errorf("stdlib from %s lacks os or json", py)
		}
		return
	}
	got := make([]string, 0, len(set))
	for n := range set {
		got = append(got, n)
	}
	sort.Strings(got)
	if diff := cmp.Diff(stdlib311[:], got); diff != "" {
		t.Errorf("shipped stdlib311 differs from %s (-shipped +interpreter):\n%s", py, diff)
	}
}

func FuzzModules(f *testing.F) {
	for _, s := range []string{"import a\n", "from x import (\n y)\n", "s='''\n", "\\\n", "__import__(\"", "if x: import y; import z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		mods := Modules(src)
		for _, m := range mods {
			if !moduleNameRe.MatchString(m) && !strings.ContainsFunc(m, func(r rune) bool { return r >= 0x80 }) {
				t.Errorf("Modules returned %q", m)
			}
		}
		if got, want := len(LineKinds(src)), strings.Count(src, "\n")+1; got != want {
			t.Errorf("LineKinds: %d kinds for %d lines", got, want)
		}
	})
}

func TestParseStdlib(t *testing.T) {
	t.Parallel()
	names := append([]string(nil), stdlib311[:]...)
	// A newer interpreter: imghdr and distutils are gone from its stdlib.
	var target []string
	for _, n := range names {
		if n != "imghdr" && n != "distutils" {
			target = append(target, n)
		}
	}
	got, err := ParseStdlib([]byte(strings.Join(target, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(target, got); diff != "" {
		t.Errorf("ParseStdlib (-want +got):\n%s", diff)
	}
	// The target's own list decides: imghdr is a third-party import there.
	if _, unknown := (Resolver{Stdlib: NewSet(got...)}).Distributions([]string{"imghdr", "os", "json"}); cmp.Diff([]string{"imghdr"}, unknown) != "" {
		t.Errorf("with the target's list, unknown = %v, want [imghdr]", unknown)
	}
	if _, unknown := (Resolver{}).Distributions([]string{"imghdr"}); len(unknown) != 0 {
		t.Errorf("with the 3.11 fallback, imghdr is stdlib; unknown = %v", unknown)
	}
	for _, bad := range []string{"", "os\nsys", strings.Join(names[:60], "\n") + "\nnot a name!"} {
		if _, err := ParseStdlib([]byte(bad)); err == nil {
			t.Errorf("ParseStdlib(%.30q): want error", bad)
		}
	}
}
