// Command sandbox-worker is one of autocoder's server processes; see docs/operations.md.
package main
