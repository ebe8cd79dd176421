// Command llm-worker is one of autocoder's server processes; see the README.
package main
