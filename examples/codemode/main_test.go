package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain makes the test binary the tool server when the example starts
// it as one, as main does.
func TestMain(m *testing.M) {
	if url := os.Getenv(toolServerEnv); url != "" {
		os.Exit(serveStockTool(url, os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// TestExampleScripted runs the example offline, on its transcript: three
// turns, a tool in another process and one in this one, and the answer.
func TestExampleScripted(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var log strings.Builder
	res, err := run(ctx, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !res.Success || res.CodeMode == nil {
		t.Fatalf("job %s: %s", res.Status, res.Error)
	}
	var cost map[string]float64
	if err := json.Unmarshal(res.CodeMode.Value, &cost); err != nil {
		t.Fatal(err)
	}
	if res.CodeMode.Turns != 3 || cost["A-100"] != 95 || cost["C-300"] < 37.59 || cost["C-300"] > 37.61 {
		t.Fatalf("codemode result: turns %d, value %s", res.CodeMode.Turns, res.CodeMode.Value)
	}
	if !strings.Contains(log.String(), "SCRIPTED MODEL") {
		t.Fatalf("the scripted run does not say so: %q", log.String())
	}
}
