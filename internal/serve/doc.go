// Package serve is the common main of the server binaries (coordinator,
// llm-worker, sandbox-worker): it starts the binary's role of the stack
// (stack.Role) with its HTTP endpoint and serves until the context ends, so
// each main is one line.
//
//	func main() { os.Exit(serve.Main(stack.RoleCoordinator)) }
//
//	err := serve.Serve(ctx, stack.RoleCoordinator, serve.Options{Config: cfg, Logger: log, Embedded: true})
package serve
