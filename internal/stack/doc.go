// Package stack wires autocoder's parts together on one NATS: the embedded
// server or a remote cluster, provisioning, then the roles asked for: the
// coordinator, an llm-worker and a sandbox-worker, each with its own start
// function. submit --local runs all three in one process (RoleLocal); each
// server binary runs one (internal/serve); with no role, a stack is only a
// connection and a Client.
//
//	st, err := stack.Start(ctx, stack.Options{Config: cfg, Roles: []stack.Role{stack.RoleLocal}})
//	defer st.Close()
//	_ = st.Client.Submit(ctx, id, spec)
package stack
