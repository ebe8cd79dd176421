package client

import (
	"crypto/sha256"
	"io"
)

// HashedExactly is PutFile's upload body over r, for the tests.
func HashedExactly(r io.Reader, size int64, want, path string) io.Reader {
	return &hashedExactly{r: io.LimitReader(r, size+1), h: sha256.New(), size: size, want: want, path: path}
}
