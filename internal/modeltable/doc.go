// Package modeltable is the operator's model table: the models a job may
// name (options.model), each with its OpenAI-compatible endpoint, the file
// or variable holding its key, its prices per million input and output
// tokens and its context size, and the default model. A job names a model,
// never a key or an endpoint; the llm-worker holds one client per model
// and prices every call from the table.
//
// The file (AUTOCODER_MODELS_FILE), YAML or JSON:
//
//	default: gpt-4.1
//	currency: USD
//	models:
//	  - name: gpt-4.1
//	    api_key_file: /run/secrets/openai
//	    input_price: 2.00      # per million input tokens
//	    output_price: 8.00     # per million output tokens
//	    context_tokens: 1047576
//	  - name: local-qwen
//	    remote: qwen2.5-coder:7b
//	    base_url: http://127.0.0.1:11434/v1
//
// Without a file, the table is one model: AUTOCODER_MODEL at
// OPENAI_BASE_URL with OPENAI_API_KEY, unpriced (Single).
//
//	t, err := modeltable.Load(path)
//	m, ok := t.Lookup(spec.Options.Model) // "" is the default
//	cost := m.Cost(usage)
package modeltable
