// Package handlertest is the conformance suite of stage handlers
// (stagework.Handler): every handler package runs it against its handler,
// as Watermill runs one suite against every Pub/Sub. It checks what the
// stage executor relies on: a stage the handler does not serve and input
// it cannot decode fail permanently (a failed result is published at once,
// never retried and never a panic); every stage it serves has a cache
// Version; it returns promptly when its context is cancelled; its outputs
// encode as JSON; and it is safe for concurrent use. Each case is also run
// through a real stagework.Executor, so the result the coordinator would
// get is checked, not only the error.
//
//	func TestConformance(t *testing.T) {
//		handlertest.Run(t, func(t *testing.T) stagework.Handler { return newHandler(t) }, handlertest.Config{
//			Stages: []messages.Stage{messages.StageBuild},
//			Inputs: map[messages.Stage]any{messages.StageBuild: messages.BuildInput{Packages: []string{"numpy"}}},
//		})
//	}
package handlertest
