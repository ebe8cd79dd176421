package prompts

import (
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Personalize applies a job's system prompt settings to a stage's
// conversation (options.system_prompt and system_prompt_prefix): the
// system message's first paragraph, the project's persona ("You are a
// senior Python engineer inside autocoder..."), is replaced by
// systemPrompt, and prefix goes before the whole system message. The rest
// stays: the rules that keep data from giving instructions, the stage's
// instructions and its reply fields, which the structured reply and the
// defence against instructions hidden in samples depend on. Empty
// settings change nothing; msgs is not modified.
func Personalize(msgs []messages.ChatMessage, systemPrompt, prefix string) []messages.ChatMessage {
	if systemPrompt == "" && prefix == "" {
		return msgs
	}
	out := append([]messages.ChatMessage(nil), msgs...)
	for i, m := range out {
		if m.Role != "system" {
			continue
		}
		text := m.Content
		if systemPrompt != "" {
			if _, rest, ok := strings.Cut(text, "\n\n"); ok {
				text = strings.TrimSpace(systemPrompt) + "\n\n" + rest
			} else {
				text = strings.TrimSpace(systemPrompt)
			}
		}
		if prefix != "" {
			text = strings.TrimSpace(prefix) + "\n\n" + text
		}
		out[i].Content = text
		return out
	}
	// No system message (none of the project's stages): the settings make one.
	sys := strings.TrimSpace(strings.Join([]string{strings.TrimSpace(prefix), strings.TrimSpace(systemPrompt)}, "\n\n"))
	return append([]messages.ChatMessage{{Role: "system", Content: sys}}, out...)
}

// DefaultPython is the Python version the prompt texts name: the one a job
// without options.python runs on (Debian 12's).
const DefaultPython = "3.11"

// ForPython names the job's Python version (options.python) where the
// system messages name DefaultPython: the model writes for the interpreter
// the code will run on, its syntax and its standard library. An empty
// version, or the default, changes nothing; msgs is not modified.
func ForPython(msgs []messages.ChatMessage, version string) []messages.ChatMessage {
	if version == "" || version == DefaultPython {
		return msgs
	}
	out := append([]messages.ChatMessage(nil), msgs...)
	for i, m := range out {
		if m.Role == "system" {
			out[i].Content = strings.ReplaceAll(m.Content, "Python "+DefaultPython, "Python "+version)
		}
	}
	return out
}
