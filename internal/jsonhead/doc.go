// Package jsonhead reads a few fields near the head of a large JSON
// document without decoding the rest of it.
//
// A job's record is mostly text (code, tests, reports, conversations)
// after a few small fields that workers and the coordinator's deadline
// watch read on every hop: the phase, the pending stages, the options.
// encoding/json would scan the whole record before decoding any of it;
// Fields stops at the last field it needs.
package jsonhead
