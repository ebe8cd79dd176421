package wiring

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/autocoder/autocoder/internal/fakellm"
)

// scriptModel makes so's model the transcript of so.Config.Transcript,
// replayed by a fakellm server on loopback, as submit --local does with no
// model configured; the stage cache becomes the scripted one
// (OpenScriptedCache). It says so loudly: a worker that answers from
// a script must never pass for one that calls a model. stop closes the
// server and the cache.
func scriptModel(ctx context.Context, so *Options, log *slog.Logger) (stop func(), err error) {
	path := so.Config.Transcript
	srv, label, err := fakellm.ReplayFile(path)
	if err != nil {
		return nil, fmt.Errorf("AUTOCODER_TRANSCRIPT: %w", err)
	}
	c, err := OpenScriptedCache(ctx, so.Config, log.With("component", "cache"), so.Metrics)
	if err != nil {
		srv.Close()
		return nil, err
	}
	attrs := []any{"transcript", path, "label", label}
	if so.Config.OpenAIAPIKey != "" || so.Config.OpenAIBaseURL != "" {
		attrs = append(attrs, "ignored", "OPENAI_API_KEY, OPENAI_BASE_URL")
	}
	log.Warn("SCRIPTED MODEL: this llm-worker replays a transcript and calls no model; every answer it gives is scripted", attrs...)
	so.Config.OpenAIBaseURL, so.Config.OpenAIAPIKey = srv.URL(), "scripted"
	so.Cache = c
	return func() { _ = c.Close(); srv.Close() }, nil
}
