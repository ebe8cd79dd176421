// Command eval measures a model on a problem set (HumanEval by default):
// pass@1 on hidden tests, false success and failure, cost, test strength.
// See docs/evaluation.md.
package main
