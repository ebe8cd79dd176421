package bus

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// A job's record in BucketJobState is JSON compressed with zstd. The
// record is written by every step of the job and read by every stage
// command's admission check, and it is mostly text that compresses five-
// to sixfold: the job's conversations (their system prompts), its code,
// tests and reports. A first-pass job's record is 13–28 KiB of JSON; the
// step's compare-and-set, the slowest part of a stage hop, writes and
// flushes it, and nats-server's file store rewrites the blocks its
// superseded revisions leave behind, so bytes not written come off the
// hop's tail (BENCHMARKS.md, "the hop's state written compressed").
//
// A zstd frame is recognised by its magic number; a record that is not
// one is read as plain JSON, as every record was before, so records
// stored by an older coordinator still read. (An older reader cannot read
// a compressed record: upgrade the workers before the coordinators.)

// zstdMagic begins every zstd frame; a JSON record begins with '{'.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// maxStateRecord bounds a decompressed record: far above any state the
// coordinator stores (its bound is MaxValueBytes of JSON), so that a
// corrupt or forged value cannot make a reader allocate without end.
const maxStateRecord = 64 << 20

var (
	// EncodeAll and DecodeAll may be called at once by many goroutines,
	// each on one; the encoder is the fastest level (about 0.1 ms for a
	// 28 KiB record, against a flushed write of about 0.3 ms).
	stateEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithZeroFrames(true))
	stateDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxStateRecord))
)

// EncodeStateRecord is the value stored in BucketJobState for a record
// marshalled as JSON.
func EncodeStateRecord(jsonRecord []byte) []byte {
	return stateEncoder.EncodeAll(jsonRecord, make([]byte, 0, len(jsonRecord)/4+64))
}

// DecodeStateRecord is the JSON of a value stored in BucketJobState,
// compressed (EncodeStateRecord) or, as an older coordinator stored it,
// not.
func DecodeStateRecord(value []byte) ([]byte, error) {
	if !bytes.HasPrefix(value, zstdMagic) {
		return value, nil
	}
	b, err := stateDecoder.DecodeAll(value, nil)
	if err != nil {
		return nil, fmt.Errorf("decompress job state: %w", err)
	}
	return b, nil
}
