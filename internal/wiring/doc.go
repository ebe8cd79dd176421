// Package stack wires autocoder's parts together on one NATS: the embedded
// server or a remote cluster, provisioning, then the roles asked for: the
// coordinator, an llm-worker and a sandbox-worker, each with its own start
// function. submit --local runs all three in one process (RoleLocal); each
// server binary runs one (internal/serve); with no role, a stack is only a
// connection and a Client.
//
// On a remote NATS, a process authenticates with the configured credentials
// as the NATS role its stack roles need (a producer without roles); only a
// coordinator, or the process hosting the embedded server, provisions: the
// others wait until what they bind to exists. An embedded listener takes
// the users of AUTOCODER_NATS_USERS_FILE, or none with AUTOCODER_NATS_AUTH=none.
//
//	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}})
//	defer st.Close()
//	_ = st.Client.Submit(ctx, id, spec)
package wiring
