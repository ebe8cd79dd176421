package llm

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want Verdict
	}{
		{"nil", nil, Verdict{}},
		{"invalid reply", fmt.Errorf("plan: %w: decode", ErrInvalidReply), Verdict{Permanent: true}},
		{"refused (401)", &CallError{StatusCode: 401, Attempts: 1}, Verdict{Permanent: true}},
		{"bad request, wrapped", fmt.Errorf("code: %w", &CallError{StatusCode: 400, Attempts: 1}), Verdict{Permanent: true}},
		{"server error", &CallError{StatusCode: 503, Attempts: 3, temporary: true}, Verdict{}},
		{"rate limited with Retry-After", &CallError{StatusCode: 429, RetryAfter: 2 * time.Minute, temporary: true},
			Verdict{RetryAfter: 2 * time.Minute}},
		{"cancelled", context.Canceled, Verdict{}},
		{"unknown", errors.New("connection reset"), Verdict{}},
	}
	for _, tc := range tests {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify = %+v, want %+v", tc.name, got, tc.want)
		}
		if IsPermanent(tc.err) != tc.want.Permanent {
			t.Errorf("%s: IsPermanent = %v", tc.name, !tc.want.Permanent)
		}
	}
}
