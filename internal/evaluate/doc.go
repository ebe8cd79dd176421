// Package evaluate measures a model on a problem set: every problem
// (HumanEval by default) runs as a job on the configured stack, then the
// problem's hidden tests run on the job's final script in the sandbox. The
// result is pass@1 on the hidden tests, the false-success rate (the job
// said success, the hidden tests fail), the false-failure rate, and per
// problem the iterations, model calls, tokens, cost, wall time and test
// strength; docs/evaluation.md explains each column.
//
// Rows are appended to results.jsonl as problems finish, so a run that
// crashed resumes where it stopped (a problem whose job was running is
// watched again if the deployment still has it). At the end results.csv and
// results.md hold the table. cmd/eval is the command.
//
//	cfg, err := evaluate.ParseArgs(os.Args[1:], config.FromEnv(), os.Stderr, terminal)
//	summary, err := evaluate.Run(ctx, cfg, logger, os.Stdout, os.Stderr)
package evaluate
