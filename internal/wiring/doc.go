// Package wiring is where autocoder's processes are put together: the one
// package that knows every part. Start connects to NATS (the embedded
// server or a remote cluster), provisions, and starts the roles asked for:
// the coordinator (roles.go), an llm-worker and a sandbox-worker, each a
// stage executor over a stagework.Mux on which the stage packages
// register their stages; submit --local runs all three in one process
// (RoleLocal), and with no role a Stack is only a connection and a
// Client. Serve and Main (serve.go) are the whole of a server binary: a
// main is one line. Metrics are attached by one metrics.Builder
// (Options.Metrics); the sandbox backend and the stage cache are opened
// here from the configuration (backend.go, cache.go).
//
// On a remote NATS, a process authenticates with the configured credentials
// as the NATS role its roles need (a producer without roles); only a
// coordinator, or the process hosting the embedded server, provisions: the
// others wait until what they bind to exists. An embedded listener takes
// the users of AUTOCODER_NATS_USERS_FILE, or none with AUTOCODER_NATS_AUTH=none.
//
//	func main() { os.Exit(wiring.Main(wiring.RoleLLMWorker)) }
//
//	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}})
//	defer st.Close()
//	_ = st.Client.Submit(ctx, id, spec)
package wiring
