// Package e2e holds autocoder's end-to-end tests: the whole system on
// embedded defaults (embedded NATS, the bubblewrap sandbox, real pytest) and
// as separate server processes, driven by the fake model over real HTTP.
// It has no non-test code.
package e2e
