package submit

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Shell completion, as cobra-made CLIs do it: the script a shell loads
// (`submit completion bash|zsh|fish`) asks the binary itself for the
// words that may come next (`submit __complete WORDS...`), so completion
// never drifts from the commands. The flags of a command are read off its
// own --help, the one list of them.

// completionCmd is `submit completion bash|zsh|fish`: the script to load.
func completionCmd(_ context.Context, in *invocation) (int, error) {
	if len(in.args) != 1 || isHelp(in.args[0]) {
		if len(in.args) == 1 {
			fmt.Fprintln(in.io.Stdout, completionHelp)
			return ExitSuccess, nil
		}
		return 0, in.usageError()
	}
	script, ok := completionScripts[in.args[0]]
	if !ok {
		return 0, usagef("completion %q: want bash, zsh or fish", in.args[0])
	}
	fmt.Fprint(in.io.Stdout, script)
	return ExitSuccess, nil
}

const completionHelp = `usage: submit completion bash|zsh|fish

Load it in the current shell:
  bash:  source <(submit completion bash)
  zsh:   source <(submit completion zsh)
  fish:  submit completion fish | source
or save it where the shell loads completions from (bash:
/etc/bash_completion.d/submit; fish: ~/.config/fish/completions/submit.fish).`

var completionScripts = map[string]string{
	"bash": `# bash completion for submit (submit completion bash)
_submit_complete() {
    local cur=${COMP_WORDS[COMP_CWORD]} IFS=$'\n'
    COMPREPLY=($(compgen -W "$(submit __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _submit_complete submit
`,
	"zsh": `# zsh completion for submit (submit completion zsh)
autoload -U +X bashcompinit && bashcompinit
_submit_complete() {
    local cur=${COMP_WORDS[COMP_CWORD]} IFS=$'\n'
    COMPREPLY=($(compgen -W "$(submit __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _submit_complete submit
`,
	"fish": `# fish completion for submit (submit completion fish)
function __submit_complete
    set -l words (commandline -opc)
    submit __complete $words[2..-1] 2>/dev/null
end
complete -c submit -a '(__submit_complete)'
`,
}

// completeCmd is `submit __complete WORDS...`: the words that may follow
// WORDS, one a line (the shell keeps those that start as the word being
// typed). Nothing printed means "a file name".
func completeCmd(ctx context.Context, in *invocation) (int, error) {
	for _, w := range completions(ctx, in.args, in.cfg) {
		fmt.Fprintln(in.io.Stdout, w)
	}
	return ExitSuccess, nil
}

// flagValues are the values of the flags that take one of a few.
var flagValues = map[string][]string{
	"-o": {"json", "yaml"}, "--status": statuses, "--cache": {"auto", "override", "disable"},
	"--interpreter": {"python", "starlark"},
}

// subcommands are the commands whose first argument is a subcommand.
func subcommands() map[string][]command {
	return map[string][]command{"task": taskCommands(), "dlq": dlqCommands(), "pool": poolCommands(), "profile": profileCommands()}
}

func completions(ctx context.Context, words []string, cfg config.Config) []string {
	if len(words) > 0 {
		prev := words[len(words)-1]
		if vals, ok := flagValues[prev]; ok {
			return vals
		}
	}
	var path []string // the command (and subcommand) the words name
	switch {
	case len(words) == 0:
		flags, _ := flagsOf(ctx, nil, cfg)
		return append(commandNames(), flags...)
	case words[0] == "completion":
		return []string{"bash", "zsh", "fish"}
	case words[0] == "help":
		return commandNames()
	}
	if subs, ok := subcommands()[words[0]]; ok {
		if len(words) == 1 {
			return names(subs)
		}
		path = words[:2]
		if words[0] == "pool" && len(words) == 2 {
			return poolNames()
		}
	} else if _, ok := find(commands(), words[0]); ok {
		path = words[:1]
	}
	flags, takesValue := flagsOf(ctx, path, cfg)
	if takesValue[words[len(words)-1]] {
		return nil // a flag's value: a file name, a number...
	}
	return flags
}

func commandNames() []string { return append(names(commands()), "help") }

func names(cmds []command) []string {
	var out []string
	for _, c := range cmds {
		if c.name != "" && !strings.HasPrefix(c.name, "_") {
			out = append(out, c.name)
		}
	}
	return out
}

func poolNames() []string {
	var out []string
	for _, p := range messages.Pools() {
		out = append(out, string(p))
	}
	return out
}

// helpFlag is a flag's line in --help: "  --name KIND  what it does".
var helpFlag = regexp.MustCompile(`^  (--?[A-Za-z0-9][A-Za-z0-9-]*)( [A-Z_]+)?  `)

// flagsOf lists the flags of the command path names, from its --help,
// and which of them take a value.
func flagsOf(ctx context.Context, path []string, cfg config.Config) ([]string, map[string]bool) {
	var out bytes.Buffer
	args := append(slices.Clone(path), "--help")
	_, _ = dispatch(ctx, args, cfg, IO{Stdout: &out, Stderr: &bytes.Buffer{}})
	var flags []string
	takesValue := map[string]bool{}
	for _, line := range strings.Split(out.String(), "\n") {
		m := helpFlag.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		flags = append(flags, m[1])
		takesValue[m[1]] = m[2] != ""
	}
	return flags, takesValue
}
