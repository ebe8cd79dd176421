// Package pyscan reads Python source without running it: which modules it
// imports, which of those are the standard library or the job's own files,
// and which distributions (pip packages) provide the rest. The loop's package
// detection runs this first and asks the model only about what it cannot map.
//
//	mods := pyscan.Modules(code + "\n" + tests)         // "google.protobuf", "yaml", "os", ...
//	dists, unknown := pyscan.Distributions(mods, nil)   // ["protobuf", "PyYAML"], []
//	// ask the model (packages stage) only about unknown
//
// The scanner is a careful line tokenizer, not a parser: it understands
// comments, string literals (so docstrings never count), brackets,
// continuations, one-line compound statements ("try: import x") and literal
// dynamic imports (__import__("x"), importlib.import_module("x")). It does not
// evaluate anything, so imports built from variables are not seen.
//
// LineKinds exposes the same tokenizer line by line, for callers that edit
// Python source textually (splicing a test function into a file).
package pyscan
