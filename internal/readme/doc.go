// Package readme tests what the README promises a newcomer, so it cannot
// drift from what the code does. It has no code of its own, only tests:
//
//   - every shell block of README.md carries a marker saying how it is
//     tested (readme-test: fresh-machine, run, or skip with the reason),
//     in an HTML comment on the line before it;
//   - the fresh-machine block (the first command) runs in a container of
//     the offline Debian base image with nothing but Go and the checkout
//     copied in: no bubblewrap, no Redis, no pytest, so it must install
//     what it needs, as a newcomer's machine would;
//   - each run block runs as written, in a copy of the checkout, with a
//     clean environment and, as root, in a network namespace of its own
//     (the quickstart's fixed ports are then its own); the distributed
//     quickstart's separate processes, authentication and scripted model
//     are checked afterwards from the files it leaves;
//   - every relative link and #anchor in the repository's Markdown files
//     resolves.
//
// The fresh-machine test needs a Docker Engine API (Podman's, as
// scripts/test.sh sets DOCKER_HOST) and the autocoder-base:bookworm image
// (scripts/setup-docker.sh), and reaches Debian's package mirror and the
// Go module proxy; its first build compiles every dependency, so it takes
// minutes.
//
//	go test ./internal/readme -run 'TestReadmeBlocks|TestLinks'
//	go test ./internal/readme -run TestFreshMachine -v
package readme
