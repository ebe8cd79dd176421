// Package problemset reads problem sets for evaluation: JSONL in
// HumanEval's format (task_id, prompt, entry_point, test defining
// check(candidate), and optionally canonical_solution), and writes the
// hidden tests of a problem as a pytest file for the sandbox.
//
//	ps, err := problemset.Load(problemset.DefaultPath(cwd)) // ../shared/datasets/HumanEval.jsonl
//	for _, p := range ps {
//		rep, _ := sandbox.RunTests(ctx, b, sandbox.TestRun{Env: env, Code: p.Canonical(), Tests: p.HiddenTests()})
//	}
package problemset
