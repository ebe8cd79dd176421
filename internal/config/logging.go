package config

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Log formats of AUTOCODER_LOG_FORMAT.
const (
	LogFormatText = "text" // slog's TextHandler: key=value lines (the default)
	LogFormatJSON = "json" // slog's JSONHandler: one JSON object a line, for log shippers
)

// NewLogger is the configuration's logger on w: slog's JSONHandler with
// AUTOCODER_LOG_FORMAT=json, its TextHandler otherwise, at
// AUTOCODER_LOG_LEVEL but never below floor (the CLI logs only trouble).
// An invalid level or format is Validate's to report; here it means info
// and text.
func (c Config) NewLogger(w io.Writer, floor slog.Level) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: max(lvl, floor)}
	if strings.EqualFold(c.LogFormat, LogFormatJSON) {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func (c *Config) checkLogFormat() error {
	switch strings.ToLower(c.LogFormat) {
	case "", LogFormatText, LogFormatJSON:
		return nil
	}
	return fmt.Errorf("AUTOCODER_LOG_FORMAT: %q is not text or json", c.LogFormat)
}
