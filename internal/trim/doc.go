// Package trim keeps long texts to a budget, cutting on UTF-8 boundaries
// and marking the cut: Middle for prompts and stored reports (head and
// tail kept: a pytest run puts the first failure at the top and the
// summary at the bottom), HeadTail, Tail (a traceback ends with the error)
// and Head, and Buffer, an io.Writer that keeps a stream's head and tail
// in fixed memory (a sandbox's stdout and stderr). No I/O; the state
// machine, the prompts, the stages and the sandbox all share it.
//
//	out := trim.NewBuffer(64 << 10) // cmd.Stdout = out
//	report := trim.Middle(string(out.Bytes()), 8<<10)
package trim
