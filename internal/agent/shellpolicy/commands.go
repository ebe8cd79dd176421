package shellpolicy

import (
	"fmt"

	"mvdan.cc/sh/v3/syntax"
)

// rule is what the policy does with one command name.
type rule struct {
	// check inspects the arguments and refuses through the checker; nil allows any.
	check func(c *checker, name string, args []*syntax.Word)
	// pure tools only read, whatever their operands: xargs may run them.
	pure bool
}

// pureTools read files and print text; no operand makes them write or run anything.
var pureTools = []string{
	"ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "cut", "tr", "diff",
	"cmp", "comm", "stat", "du", "df", "echo", "pwd", "true", "false", "test", "[",
	"basename", "dirname", "realpath", "readlink", "which", "type", "date", "nl",
	"column", "paste", "join", "fold", "fmt", "rev", "tac", "od", "hexdump", "md5sum",
	"sha1sum", "sha256sum", "sha512sum", "seq", "expr", "sleep", "strings", "base64",
	"jq", ":", "printenv", "whoami", "id", "uname", "nproc",
}

// shellBuiltins change only the shell's own state, none of it protected.
var shellBuiltins = []string{
	"set", "shift", "exit", "return", "break", "continue", "unset", "shopt",
	"popd", "dirs", "umask",
}

// writeTools write to every operand: each must be in the workspace.
var writeTools = []string{"rm", "rmdir", "mkdir", "touch", "truncate", "chmod"}

var (
	networkTools = []string{
		"curl", "wget", "nc", "ncat", "netcat", "ssh", "scp", "sftp", "rsync", "ftp",
		"telnet", "socat", "ping", "dig", "nslookup", "host", "whois", "aria2c", "lynx",
		"links", "w3m", "http", "openssl",
	}
	packageManagers = []string{
		"pip", "pip3", "pipx", "apt", "apt-get", "aptitude", "dpkg", "snap", "npm", "npx",
		"yarn", "pnpm", "conda", "mamba", "micromamba", "uv", "uvx", "poetry", "pdm",
		"gem", "cargo", "brew", "easy_install",
	}
	evaluators = []string{
		"eval", "exec", "source", ".", "alias", "trap", "enable", "hash", "bind", "fc",
		"complete", "compgen",
	}
	privilegeTools = []string{
		"sudo", "su", "doas", "chroot", "unshare", "nsenter", "setpriv", "capsh", "runuser", "pkexec",
	}
	otherLanguages = []string{
		"perl", "ruby", "irb", "node", "nodejs", "deno", "bun", "php", "lua", "tclsh",
		"Rscript", "java", "javac", "gcc", "cc", "g++", "clang", "make", "go",
	}
)

// Reasons for refused families, written for the model: what is wrong and what to do instead.
const (
	networkReason  = "%s is a network tool: the sandbox has no network; write code instead, using the files in the workspace"
	packageReason  = "%s is a package manager: nothing is installed at run time and the sandbox has no network; import the package in your script and the job's build stage installs it"
	evalReason     = "%s runs text as a command, which the policy cannot check: write the commands out directly"
	rootReason     = "%s changes privileges: the sandbox runs as one unprivileged user; run the command directly"
	languageReason = "%s is not available: write Python and run it with python3 FILE.py"
)

func notAllowed(name string) string {
	return fmt.Sprintf("%s is not an allowed command: use file and text tools (ls, cat, head, grep, sed, awk, find, sort, diff, ...), "+
		"writes inside the workspace (tee, cp, mv, rm, mkdir, touch), python3 FILE.py or pytest", name)
}

var rules = buildRules()

func buildRules() map[string]rule {
	r := map[string]rule{}
	for _, n := range pureTools {
		r[n] = rule{pure: true}
	}
	for _, n := range shellBuiltins {
		r[n] = rule{}
	}
	for _, n := range writeTools {
		r[n] = rule{check: writeAll(false)}
	}
	for reason, names := range map[string][]string{
		networkReason: networkTools, packageReason: packageManagers, evalReason: evaluators,
		rootReason: privilegeTools, languageReason: otherLanguages,
	} {
		for _, n := range names {
			r[n] = rule{check: deny(reason)}
		}
	}
	for n, check := range specialTools {
		r[n] = rule{check: check}
	}
	for _, n := range []string{"test", "["} {
		r[n] = rule{check: checkTest, pure: true}
	}
	return r
}

// specialTools need a look at their arguments.
var specialTools = map[string]func(c *checker, name string, args []*syntax.Word){
	"tee": writeAll(true), "cp": checkCp, "mv": checkMv, "sort": checkSort, "uniq": checkUniq,
	"sed": checkSed, "awk": checkAwk, "gawk": checkAwk, "mawk": checkAwk, "nawk": checkAwk,
	"find": checkFind, "cd": checkCd, "pushd": checkCd,
	"env": checkEnv, "command": checkCommand,
	"builtin": wrapper(getoptSpec{stopAtOperand: true}, 0), "nohup": wrapper(getoptSpec{stopAtOperand: true}, 0),
	"timeout": wrapper(timeoutOptions, 1),
	"nice":    wrapper(niceOptions, 0),
	"stdbuf":  wrapper(stdbufOptions, 0),
	"time":    wrapper(timeOptions, 0, "-o", "--output"),
	"xargs":   checkXargs,
	"wait":    checkAssigning, // wait -p NAME assigns
	"bash":    checkShell, "sh": checkShell, "dash": checkShell, "zsh": checkShell, "ksh": checkShell,
	"python": checkPython, "python3": checkPython, "pytest": checkPytest, "py.test": checkPytest,
	"git":  checkGit,
	"read": checkAssigning, "mapfile": checkAssigning, "readarray": checkAssigning,
	"getopts": checkAssigning, "printf": checkPrintf,
	"ln": deny("%s is not allowed: a link can point outside the workspace; copy the file with cp instead"),
}

func deny(reason string) func(c *checker, name string, args []*syntax.Word) {
	return func(c *checker, name string, _ []*syntax.Word) { c.refuse(reason, name) }
}
