package bus

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// A job's record in BucketJobState is JSON compressed with S2 (the
// Snappy-compatible format nats-server uses for its own compression).
// The record is written by every step of the job and read by every stage
// command's admission check, and it is mostly text that compresses about
// threefold: the job's conversations (their system prompts), its code,
// tests and reports. A first-pass job's record is 13–28 KiB of JSON; the
// step's compare-and-set, the slowest part of a stage hop, writes and
// flushes it, and nats-server's file store rewrites the blocks its
// superseded revisions leave behind, so bytes not written come off the
// hop's tail (BENCHMARKS.md, "the hop's floor"). S2 rather than zstd:
// zstd's fastest level stores a 13 KiB record in 4.0 KiB where S2 takes
// 5.6 KiB, but takes 42 µs to S2's 9 µs, on the hop's path, and 17 µs to
// 7.5 µs to read it back.
//
// A stored record begins with stateRecordPrefix, which no JSON begins
// with; a value without it is read as plain JSON, as every record was
// before, so records stored by an older coordinator still read. (An older
// reader cannot read a compressed record: upgrade the workers before the
// coordinators.)

// stateRecordPrefix marks a compressed record: a NUL, then the format.
var stateRecordPrefix = []byte("\x00s2")

// maxStateRecord bounds a decompressed record: far above any state the
// coordinator stores (its bound is MaxValueBytes of JSON), so that a
// corrupt or forged value cannot make a reader allocate without end.
const maxStateRecord = 64 << 20

// EncodeStateRecord is the value stored in BucketJobState for a record
// marshalled as JSON.
func EncodeStateRecord(jsonRecord []byte) []byte {
	out := make([]byte, len(stateRecordPrefix), len(stateRecordPrefix)+s2.MaxEncodedLen(len(jsonRecord)))
	copy(out, stateRecordPrefix)
	return append(out, s2.Encode(out[len(out):cap(out)], jsonRecord)...)
}

// DecodeStateRecord is the JSON of a value stored in BucketJobState,
// compressed (EncodeStateRecord) or, as an older coordinator stored it,
// not.
func DecodeStateRecord(value []byte) ([]byte, error) {
	block, ok := bytes.CutPrefix(value, stateRecordPrefix)
	if !ok {
		return value, nil
	}
	n, err := s2.DecodedLen(block)
	if err == nil && n > maxStateRecord {
		err = errors.New("decoded size over the bound")
	}
	if err == nil {
		var b []byte
		if b, err = s2.Decode(nil, block); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("decompress job state: %w", err)
}
