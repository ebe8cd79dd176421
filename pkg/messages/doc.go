// Package messages is autocoder's wire contract: the job spec (Contract 1 (docs/contracts.md)),
// stage commands and results exchanged over NATS JetStream, progress events
// and the result object (Contract 5 (docs/contracts.md)). Plain structs with snake_case JSON tags,
// a wire version in every message, and the standard library only, so any
// program can import it to submit jobs or read results.
//
//	spec, err := messages.DecodeJobSpecJSON(data) // strict: errors name the field
//	if err != nil { ... }
//	spec.Normalize("")                            // fill in defaults
package messages
