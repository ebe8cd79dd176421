package llm

import (
	"errors"
	"fmt"
	"io"

	"github.com/autocoder/autocoder/pkg/messages"
)

// defaultMaxReplyBytes is OpenAIConfig.MaxReplyBytes's default: far above
// any completion a max_tokens budget allows, far below what hurts a worker.
const defaultMaxReplyBytes = 4 << 20

// ErrReplyTooLarge is a model reply whose HTTP body went past
// OpenAIConfig.MaxReplyBytes. It is permanent: the same call would send the
// same flood again.
var ErrReplyTooLarge = errors.New("llm: model reply too large")

// replyTooLargeError says which cap the reply went past.
type replyTooLargeError struct{ limit int64 }

func (e replyTooLargeError) Error() string {
	return fmt.Sprintf("model reply larger than %s (OpenAIConfig.MaxReplyBytes)", messages.FormatBytes(e.limit))
}

func (e replyTooLargeError) Is(target error) bool { return target == ErrReplyTooLarge }

// cappedBody is a response body that fails, instead of growing the caller's
// buffer, once more than limit bytes have been read. It records the overrun
// in the attempt so the retry logic sees it whatever go-openai wraps it in.
type cappedBody struct {
	io.ReadCloser
	left  int64 // bytes still allowed
	limit int64
	a     *attempt
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly limit bytes from a longer one.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		if b.a != nil {
			b.a.tooLarge = true
		}
		return 0, replyTooLargeError{b.limit}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
