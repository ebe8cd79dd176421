package jsonhead

import (
	"bytes"
	"encoding/json"
)

// Fields decodes the members of the object held by the document's first
// key, which must be in, whose names are keys of want, each into want's
// pointer, and stops reading once it has them all. It reports false when
// the document is not laid out so (another first key, a member missing,
// a value that does not decode): the caller then decodes the document
// whole, which is always right, only slower.
func Fields(b []byte, in string, want map[string]any) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if !delim(dec, '{') {
		return false
	}
	if k, err := dec.Token(); err != nil || k != in || !delim(dec, '{') {
		return false
	}
	left := len(want)
	for left > 0 && dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		name, _ := k.(string)
		if v, ok := want[name]; ok {
			err = dec.Decode(v)
			left--
		} else {
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return false
		}
	}
	return left == 0
}

// delim reads the next token and reports whether it is d.
func delim(dec *json.Decoder, d json.Delim) bool {
	t, err := dec.Token()
	return err == nil && t == d
}
