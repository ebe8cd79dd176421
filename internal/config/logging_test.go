package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// TestLogFormats: AUTOCODER_LOG_FORMAT=json logs one JSON object a line
// (slog's JSONHandler) with snake_case keys as given; text logs key=value;
// the level and the floor hold in both; anything else is refused by
// Validate with the variable named.
func TestLogFormats(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	c := Config{LogLevel: "info", LogFormat: "json"}
	log := c.NewLogger(&buf, slog.LevelDebug)
	log.Debug("not shown")
	log.Info("stage finished", "job_id", "job-1", "stage", "plan")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("json format wrote %q (%v), want one JSON line", buf.String(), err)
	}
	if line["msg"] != "stage finished" || line["job_id"] != "job-1" || line["level"] != "INFO" {
		t.Errorf("json line %v", line)
	}
	buf.Reset()
	c.LogFormat = "text"
	c.NewLogger(&buf, slog.LevelWarn).Info("below the floor")
	c.NewLogger(&buf, slog.LevelWarn).Warn("shown", "job_id", "job-2")
	if got := buf.String(); strings.Contains(got, "below the floor") || !strings.Contains(got, "level=WARN msg=shown job_id=job-2") {
		t.Errorf("text format wrote %q", got)
	}
	bad := Config{LogLevel: "info", LogFormat: "xml", StateDir: t.TempDir()}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "AUTOCODER_LOG_FORMAT") {
		t.Errorf("Validate with format xml: %v", err)
	}
}
