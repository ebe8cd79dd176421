#!/usr/bin/env bash
# Runs each fuzz target of the job spec parsers and the message decoders
# briefly (FUZZTIME each, default 5s; about a minute in all). The seed
# corpus is checked in under each package's testdata/fuzz; an input that
# fails is written there too: check it in with its fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-5s}"
targets=(
	"./pkg/messages FuzzDecodeJobSpecJSON"
	"./pkg/messages FuzzDecodeAPIRequest"
	"./pkg/messages FuzzDecodeTaskRunRequest"
	"./pkg/messages FuzzWireMessages"
	"./pkg/messages FuzzParseObjectRef"
	"./pkg/messages FuzzParseInputValue"
	"./internal/jobfile FuzzDecode"
	"./internal/jobfile FuzzDecodeRoundTrip"
)
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "fuzz $pkg $name ($fuzztime)"
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
done
