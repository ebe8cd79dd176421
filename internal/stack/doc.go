// Package stack wires autocoder's parts together on one NATS: the embedded
// server or a remote cluster, provisioning, the coordinator, an llm-worker
// and a sandbox-worker, each optional. submit --local runs all of them in one
// process; each binary runs one; tests and benchmarks run any mix.
//
//	st, err := stack.Start(ctx, stack.Options{Config: cfg, Roles: []stack.Role{stack.RoleLocal}})
//	defer st.Close()
//	_ = st.Client.Submit(ctx, id, spec)
package stack
