package coordinator

import (
	"encoding/json"
	"fmt"

	"github.com/autocoder/autocoder/internal/bus"
)

// The state bucket's values are records compressed (bus.EncodeStateRecord);
// these two are the only ways in and out of it, so no reader forgets to
// decompress and no writer to compress.

// storedRecord is the value stored for a record's JSON.
func storedRecord(jsonRecord []byte) []byte { return bus.EncodeStateRecord(jsonRecord) }

// decodeRecord reads a stored value into v (a record, or the part of one
// v declares).
func decodeRecord(value []byte, v any) error {
	b, err := bus.DecodeStateRecord(value)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode job state: %w", err)
	}
	return nil
}
