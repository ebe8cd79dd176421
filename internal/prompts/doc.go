// Package prompts builds the conversation for each LLM stage of the loop:
// one function per stage, from the stage's input (pkg/messages) to a system
// and a user message. The system message states the rules (docs/contracts.md's Contract 2
// script protocol with the task's exact option names, sample paths and
// output formats; the test protocol; the reply fields of Contract 3 (docs/contracts.md)); the
// user message carries the task and its data.
//
//	msgs := prompts.Code(messages.CodeInput{Task: task, Plan: plan})
//	reply, err := client.Structured(ctx, llm.StructuredRequest{Model: m, Messages: msgs, Schema: llm.SolutionSchema})
//
// Everything a user, a data file, the model or a test run wrote is untrusted:
// it goes inside a labelled Markdown fence (DataLabel) that is longer than any
// backtick run in it, so nothing inside can close the block, and the system
// message says that fenced content is data, never instructions.
//
// Version is part of every LLM stage's cache key: bump it when any text here
// changes.
package prompts
