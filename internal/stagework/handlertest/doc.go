// Package handlertest is the conformance suite of stage handler packages:
// every package that registers stages on a stagework.Mux runs it against
// its registrations, as Watermill runs one suite against every Pub/Sub. It
// checks what the stage executor relies on: a stage with no handler and
// input that does not decode fail permanently (a failed result is
// published at once, never retried and never a panic); every stage it
// serves is registered, with a version; it returns promptly when its
// context is cancelled; its outputs encode as JSON; and it is safe for
// concurrent use. Each case is also run through a real stagework.Executor,
// so the result the coordinator would get is checked, not only the error.
//
//	func TestConformance(t *testing.T) {
//		handlertest.Run(t, func(t *testing.T) *stagework.Mux {
//			mux := stagework.NewMux(messages.DefaultStages())
//			newHandlers(t).Register(mux)
//			return mux
//		}, handlertest.Config{
//			Stages: []messages.Stage{messages.StageBuild},
//			Inputs: map[messages.Stage]any{messages.StageBuild: messages.BuildInput{Packages: []string{"numpy"}}},
//		})
//	}
package handlertest
