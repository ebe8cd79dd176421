package pyexec

import (
	"encoding/json"

	"github.com/autocoder/autocoder/internal/codemode"
)

// bindArgs decodes a call's arguments and checks them against the tool's
// parameters, as the prelude did before sending them: the worker trusts
// nothing the program sends. Numbers come out as int64 or float64, the
// types a ToolFunc is promised (codemode.BindJSONArgs, which a served
// tool's arguments go through too).
func bindArgs(t codemode.Tool, raw json.RawMessage) (map[string]any, error) {
	return codemode.BindJSONArgs(t, raw)
}
