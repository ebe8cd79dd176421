// Command codemode is the code-mode example: a mode: codemode job over two
// tools, both NATS services. stock_level runs in a separate process (this
// program started again as the tool server, stocktool.go); price is served
// by this process. The job runs through the whole system (coordinator,
// llm-worker, sandbox-worker) on an embedded NATS that listens on
// loopback so that the tool process can join it.
//
// Without OPENAI_API_KEY the model's replies are replayed from
// transcript.json, a scripted transcript labelled as such; with it, a real
// model writes the programs.
//
//	go run ./examples/codemode
package main
