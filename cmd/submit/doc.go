// Command submit submits a job to autocoder and prints its result; see docs/usage.md.
package main
