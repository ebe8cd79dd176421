// Command submit submits a job to autocoder and prints its result; see the README.
package main
