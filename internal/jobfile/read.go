package jobfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/autocoder/autocoder/pkg/messages"
)

// ReadRegular reads the file at path, which must be a regular file (a
// symbolic link to one is fine) of at most limit bytes. Anything else is
// refused before a byte is read: a FIFO would block the open, and a device
// such as /dev/zero never ends. The file is opened non-blocking in case it
// was swapped for a FIFO after the check, and the limit is enforced on the
// bytes read, not only on the size the file claims.
func ReadRegular(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(fi, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := checkRegular(fi, limit); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(limit)
	}
	return data, nil
}

// ErrNotRegular and ErrTooLarge are the reasons ReadRegular refuses a file.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("file too large")
)

func checkRegular(fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w (%s)", ErrNotRegular, fileKind(fi.Mode()))
	}
	if fi.Size() > limit {
		return tooLarge(limit)
	}
	return nil
}

func tooLarge(limit int64) error {
	return fmt.Errorf("%w: larger than %s", ErrTooLarge, messages.FormatBytes(limit))
}

// fileKind names what a non-regular file is, for the error message.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "file mode " + m.String()
}
