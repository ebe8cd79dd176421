package llmstages

import (
	"cmp"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/pkg/messages"
)

// A job's model settings (options.temperature, max_tokens, top_p, seed,
// system_prompt, system_prompt_prefix, python) come with each of its model stage
// commands (messages.StageSettings) and go with every call the stage
// makes; they are part of the stage's cache key (stagework.Executor.Key).

// settingsOf is the command's settings; the zero value when it has none.
func settingsOf(cmd *messages.StageCommand) messages.StageSettings {
	if cmd.Settings == nil {
		return messages.StageSettings{}
	}
	return *cmd.Settings
}

// personalize applies the job's system prompt settings and its Python
// version to a conversation.
func personalize(cmd *messages.StageCommand, msgs []messages.ChatMessage) []messages.ChatMessage {
	s := settingsOf(cmd)
	return prompts.Personalize(prompts.ForPython(msgs, s.Python), s.SystemPrompt, s.SystemPromptPrefix)
}

// sampling is the job's sampling settings and reply cap (the job's
// max_tokens, else the worker's).
func (h *Handlers) sampling(cmd *messages.StageCommand) (llm.Sampling, int) {
	s := settingsOf(cmd)
	return llm.Sampling{Temperature: s.Temperature, TopP: s.TopP, Seed: s.Seed}, cmp.Or(s.MaxTokens, h.cfg.MaxTokens)
}
