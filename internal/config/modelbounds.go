package config

import (
	"cmp"
	"flag"
	"fmt"
	"os"

	"github.com/autocoder/autocoder/pkg/messages"
)

// ModelBounds are an llm-worker's caps on one model call: the reply's HTTP
// body (llm.OpenAIConfig.MaxReplyBytes) and the prompt sent
// (llmstages.Config.MaxPromptBytes). Zero means the worker's default.
type ModelBounds struct {
	ReplyBytes   int64
	PromptBytes  int
	ContextBytes int // llmstages.Config.ContextBytes
}

// defaultPromptBytes is the llm-worker's prompt bound when none is set
// (llmstages.DefaultMaxPromptBytes); defaultContextBytes its
// documentation budget (llmstages.DefaultContextBytes).
const (
	defaultPromptBytes  = 256 << 10
	defaultContextBytes = 24 << 10
)

// MinContextBytes is the smallest documentation budget: room for one
// chunk (llmstages.DefaultChunkBytes, 1500 bytes) with its label and fence.
const MinContextBytes = 2 << 10

// readModelBounds reads the bounds' environment variables.
func (c *Config) readModelBounds() {
	c.MaxReplyBytes = os.Getenv("AUTOCODER_MAX_REPLY_BYTES")
	c.MaxPromptBytes = os.Getenv("AUTOCODER_MAX_PROMPT_BYTES")
	c.ContextBytes = os.Getenv("AUTOCODER_CONTEXT_BYTES")
}

// registerModelBounds adds the bounds' flags.
func (c *Config) registerModelBounds(fs *flag.FlagSet) {
	fs.StringVar(&c.MaxReplyBytes, "max-reply-bytes", c.MaxReplyBytes, "llm-worker: the largest model reply read, e.g. 4Mi; default 4Mi (AUTOCODER_MAX_REPLY_BYTES)")
	fs.StringVar(&c.MaxPromptBytes, "max-prompt-bytes", c.MaxPromptBytes, "llm-worker: the largest prompt sent, e.g. 256Ki; default 256Ki (AUTOCODER_MAX_PROMPT_BYTES)")
	fs.StringVar(&c.ContextBytes, "context-bytes", c.ContextBytes, "llm-worker: the job documentation one prompt holds before chunks are retrieved, e.g. 24Ki; default 24Ki, or half the prompt bound when that is less (AUTOCODER_CONTEXT_BYTES)")
}

// Bounds parses MaxReplyBytes, MaxPromptBytes and ContextBytes
// (quantities such as 4Mi). The error names the setting.
//
// The documentation one prompt holds must leave the task, code and
// errors half of the prompt bound, whichever of the two is set: a
// ContextBytes over half the effective prompt bound is an error, and
// with ContextBytes unset and a prompt bound under twice the default
// context (48Ki), ContextBytes becomes half the prompt bound, so that
// documentation never pushes a plan or fix call over the bound.
func (c *Config) Bounds() (ModelBounds, error) {
	var b ModelBounds
	if c.MaxReplyBytes != "" {
		n, err := messages.ParseQuantity(c.MaxReplyBytes)
		if err != nil || n < 4<<10 {
			return b, fmt.Errorf("AUTOCODER_MAX_REPLY_BYTES: %q is not a quantity of at least 4Ki, such as 4Mi", c.MaxReplyBytes)
		}
		b.ReplyBytes = n
	}
	if c.MaxPromptBytes != "" {
		n, err := messages.ParseQuantity(c.MaxPromptBytes)
		if err != nil || n < 4<<10 || n > 1<<30 {
			return b, fmt.Errorf("AUTOCODER_MAX_PROMPT_BYTES: %q is not a quantity between 4Ki and 1Gi, such as 256Ki", c.MaxPromptBytes)
		}
		b.PromptBytes = int(n)
	}
	prompt := cmp.Or(b.PromptBytes, defaultPromptBytes)
	if c.ContextBytes == "" {
		if defaultContextBytes > prompt/2 {
			b.ContextBytes = prompt / 2 // at least MinContextBytes: prompts are at least 4Ki
		}
		return b, nil
	}
	n, err := messages.ParseQuantity(c.ContextBytes)
	if err != nil || n < MinContextBytes || n > 1<<30 {
		return b, fmt.Errorf("AUTOCODER_CONTEXT_BYTES: %q is not a quantity between 2Ki and 1Gi, such as 24Ki (it must hold one documentation chunk, up to 1500 bytes and its label)", c.ContextBytes)
	}
	b.ContextBytes = int(n)
	if b.ContextBytes > prompt/2 {
		return b, fmt.Errorf("AUTOCODER_CONTEXT_BYTES: %s is more than half of the prompt bound (%s, AUTOCODER_MAX_PROMPT_BYTES): the task, code and error need the rest",
			messages.FormatBytes(int64(b.ContextBytes)), messages.FormatBytes(int64(prompt)))
	}
	return b, nil
}
