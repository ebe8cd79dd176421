#!/usr/bin/env bash
# Runs each fuzz target of the job spec parsers and the message decoders
# briefly (FUZZTIME each, default 200000 inputs: a few seconds a target). The
# seed corpus is checked in under each package's testdata/fuzz; an input
# that fails is written there too: check it in with its fix.
#
# The budget is a count, not a duration: Go 1.26's fuzz coordinator can
# report "context deadline exceeded" at the end of a -fuzztime duration on a
# loaded machine with no failing input (golang/go#75804, fixed in Go 1.27);
# a count has no deadline to race.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-200000x}"
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
