// Package submit is the submit CLI (Contract 4 (docs/contracts.md)): submit a job from a job file
// or flags, locally on embedded defaults (--local) or to a NATS cluster, show
// live stage progress, print the result object, and exit 0 (success),
// 1 (tests never passed), 2 (bad usage or input) or 3 (infrastructure).
//
// `submit run JOB_ID` runs a finished job's script on new data (new sample
// files, input values checked strictly against their declared types, File
// and Dir inputs as local paths) and prints the typed outputs; `submit task`
// registers, lists, shows, deletes and runs a finished job's script under a
// name. --out DIR downloads File and Dir outputs to DIR/<name>.
//
// Each subcommand is one entry of a table (commands, taskCommands): its
// name, its one-line usage, and one function that parses its own flags.
//
//	os.Exit(submit.Run(ctx, os.Args[1:], config.FromEnv(), submit.IO{Stdout: os.Stdout, Stderr: os.Stderr}))
package submit
