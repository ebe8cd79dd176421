// Command coordinator is one of autocoder's server processes; see docs/operations.md.
package main
