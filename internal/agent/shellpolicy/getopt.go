package shellpolicy

import (
	"strings"
)

// GNU tools read their arguments with getopt_long, and the checks must read
// them the same way or a spelling the tool accepts slips past: short options
// cluster (-uo FILE is -u -o FILE), a long option may be abbreviated to any
// unambiguous prefix (--expr is --expression, --compress is
// --compress-program), and a value follows = or comes in the next argument.
// getoptSpec is one tool's options, and parse reads arguments into the
// canonical form the checks match: "-o" or "--output", with its value.

// argKind says whether an option takes a value.
type argKind int

const (
	noArg argKind = iota
	required
	optional // only when attached: -i.bak, --in-place=.bak
)

type getoptSpec struct {
	short map[byte]argKind
	long  map[string]argKind
	// stopAtOperand: the first operand ends the options (env, xargs,
	// timeout: what follows is the command they run, with its own options).
	stopAtOperand bool
}

// opt is one option as the tool reads it: name is "-x" or "--full-name".
type opt struct {
	name, value string
	hasValue    bool
}

// parsed is a command line as the tool reads it. rest holds the operands;
// with stopAtOperand, the first of them and everything after it.
type parsed struct {
	opts []opt
	rest []string
}

func (p parsed) has(names ...string) (opt, bool) {
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n {
				return o, true
			}
		}
	}
	return opt{}, false
}

// shorts builds the short options from getopt's optstring syntax: a letter,
// then ":" for a value or "::" for an optional attached one.
func shorts(optstring string) map[byte]argKind {
	m := map[byte]argKind{}
	for i := 0; i < len(optstring); i++ {
		c, kind := optstring[i], noArg
		if i+1 < len(optstring) && optstring[i+1] == ':' {
			kind, i = required, i+1
			if i+1 < len(optstring) && optstring[i+1] == ':' {
				kind, i = optional, i+1
			}
		}
		m[c] = kind
	}
	return m
}

// longs builds the long options from names, each ending in "=" when it
// takes a value and in "[=]" when the value is optional.
func longs(names ...string) map[string]argKind {
	m := map[string]argKind{}
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, "[=]"):
			m[strings.TrimSuffix(n, "[=]")] = optional
		case strings.HasSuffix(n, "="):
			m[strings.TrimSuffix(n, "=")] = required
		default:
			m[n] = noArg
		}
	}
	return m
}

// parse reads args as getopt_long would. refusal is non-empty when an
// abbreviation is ambiguous (the tool itself would stop, but the policy
// does not guess which option was meant). Unknown options are kept as they
// are: the tool refuses them.
func (g getoptSpec) parse(args []string) (p parsed, refusal string) {
	for i := 0; i < len(args); i++ {
		s := args[i]
		switch {
		case s == "--":
			p.rest = append(p.rest, args[i+1:]...)
			return p, ""
		case strings.HasPrefix(s, "--"):
			o, takesNext, refusal := g.longOpt(s[2:])
			if refusal != "" {
				return p, refusal
			}
			if takesNext && i+1 < len(args) {
				i++
				o.value, o.hasValue = args[i], true
			}
			p.opts = append(p.opts, o)
		case strings.HasPrefix(s, "-") && s != "-":
			var takesNext bool
			p.opts, takesNext = g.shortCluster(p.opts, s[1:])
			if takesNext && i+1 < len(args) {
				i++
				p.opts[len(p.opts)-1].value, p.opts[len(p.opts)-1].hasValue = args[i], true
			}
		case g.stopAtOperand:
			p.rest = append(p.rest, args[i:]...)
			return p, ""
		default:
			p.rest = append(p.rest, s)
		}
	}
	return p, ""
}

// longOpt resolves "name[=value]" to a full long option.
func (g getoptSpec) longOpt(s string) (o opt, takesNext bool, refusal string) {
	name, value, hasValue := strings.Cut(s, "=")
	full, ok := g.resolveLong(name)
	switch {
	case !ok && full != "":
		return o, false, "--" + name + " is an ambiguous abbreviation (" + full + "): write the option in full"
	case !ok:
		return opt{name: "--" + name, value: value, hasValue: hasValue}, false, ""
	}
	o = opt{name: "--" + full, value: value, hasValue: hasValue}
	return o, !hasValue && g.long[full] == required, ""
}

// resolveLong finds the option name abbreviates. When it matches several,
// ok is false and full lists them.
func (g getoptSpec) resolveLong(name string) (full string, ok bool) {
	if _, exact := g.long[name]; exact {
		return name, true
	}
	var matches []string
	for n := range g.long {
		if strings.HasPrefix(n, name) {
			matches = append(matches, "--"+n)
		}
	}
	switch len(matches) {
	case 0:
		return "", false
	case 1:
		return matches[0][2:], true
	}
	return strings.Join(sortedStrings(matches), ", "), false
}

// shortCluster reads "uo" of -uo: each letter an option, until one that
// takes a value, which takes the rest of the cluster (or the next argument).
func (g getoptSpec) shortCluster(opts []opt, cluster string) ([]opt, bool) {
	for j := 0; j < len(cluster); j++ {
		o := opt{name: "-" + cluster[j:j+1]}
		switch g.short[cluster[j]] {
		case required:
			if rest := cluster[j+1:]; rest != "" {
				o.value, o.hasValue = rest, true
				return append(opts, o), false
			}
			return append(opts, o), true
		case optional:
			if rest := cluster[j+1:]; rest != "" {
				o.value, o.hasValue = rest, true
			}
			return append(opts, o), false
		}
		opts = append(opts, o)
	}
	return opts, false
}

func sortedStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// The options of the tools whose options can run a program, write a file
// or hide a script, as their GNU versions (coreutils 9, sed 4.9, gawk 5,
// findutils 4.9) define them.
var (
	sedOptions = getoptSpec{
		short: shorts("bE" + "e:f:i::l:nrsuz"),
		long: longs("binary", "debug", "expression=", "file=", "follow-symlinks", "help", "in-place[=]",
			"line-length=", "null-data", "zero-terminated", "posix", "quiet", "silent", "regexp-extended",
			"sandbox", "separate", "unbuffered", "version"),
	}
	sortOptions = getoptSpec{
		short: shorts("bcCdfghik:mMno:rRsS:t:T:uVy:z"),
		long: longs("ignore-leading-blanks", "batch-size=", "check[=]", "compress-program=", "debug",
			"dictionary-order", "ignore-case", "files0-from=", "general-numeric-sort", "ignore-nonprinting",
			"key=", "merge", "month-sort", "numeric-sort", "human-numeric-sort", "output=", "random-sort",
			"random-source=", "reverse", "sort=", "stable", "buffer-size=", "field-separator=",
			"temporary-directory=", "unique", "version-sort", "zero-terminated", "parallel=", "help", "version"),
	}
	envOptions = getoptSpec{
		short: shorts("C:iS:u:v0"),
		long: longs("ignore-environment", "null", "unset=", "chdir=", "split-string=", "block-signal[=]",
			"default-signal[=]", "ignore-signal[=]", "list-signal-handling", "debug", "help", "version"),
		stopAtOperand: true,
	}
	cpOptions = getoptSpec{
		short: shorts("abdfHilLnprst:uvxPRS:TZ"),
		long: longs("archive", "attributes-only", "backup[=]", "copy-contents", "debug", "dereference", "force",
			"interactive", "keep-directory-symlink", "link", "no-clobber", "no-dereference", "no-preserve=",
			"no-target-directory", "one-file-system", "parents", "preserve[=]", "recursive", "reflink[=]",
			"remove-destination", "sparse=", "strip-trailing-slashes", "suffix=", "symbolic-link",
			"target-directory=", "update[=]", "verbose", "context[=]", "help", "version"),
	}
	mvOptions = getoptSpec{
		short: shorts("bfint:uvS:TZ"),
		long: longs("backup[=]", "context", "debug", "exchange", "force", "interactive", "no-clobber", "no-copy",
			"no-target-directory", "strip-trailing-slashes", "suffix=", "target-directory=", "update[=]",
			"verbose", "help", "version"),
	}
	awkOptions = getoptSpec{ // gawk's; mawk and busybox awk know a subset
		short: shorts("F:f:v:bcCd::D::e:E:ghi:l:L::nNo::Op::MPrSstVY"),
		long: longs("assign=", "bignum", "characters-as-bytes", "copyright", "debug[=]", "dump-variables[=]",
			"exec=", "field-separator=", "file=", "gen-pot", "help", "include=", "lint[=]", "lint-old", "load=",
			"no-optimize", "non-decimal-data", "optimize", "posix", "pretty-print[=]", "profile[=]",
			"re-interval", "sandbox", "source=", "traditional", "use-lc-numeric", "version", "csv", "persist[=]"),
		stopAtOperand: true, // the program text ends gawk's options
	}
	xargsOptions = getoptSpec{
		short: shorts("0a:d:E:e::I:i::L:l::n:oP:prs:tx"),
		long: longs("null", "arg-file=", "delimiter=", "eof[=]", "replace[=]", "max-lines[=]", "max-args=",
			"open-tty", "interactive", "max-procs=", "process-slot-var=", "no-run-if-empty", "max-chars=",
			"show-limits", "verbose", "exit", "help", "version"),
		stopAtOperand: true,
	}
	timeoutOptions = getoptSpec{
		short:         shorts("k:s:fpv"),
		long:          longs("kill-after=", "signal=", "foreground", "preserve-status", "verbose", "help", "version"),
		stopAtOperand: true,
	}
	niceOptions = getoptSpec{
		short: shorts("n:"), long: longs("adjustment=", "help", "version"), stopAtOperand: true,
	}
	stdbufOptions = getoptSpec{
		short: shorts("i:o:e:"), long: longs("input=", "output=", "error=", "help", "version"), stopAtOperand: true,
	}
	timeOptions = getoptSpec{ // GNU time, reached as env time or command time
		short: shorts("f:o:aqvpV"), long: longs("format=", "output=", "append", "quiet", "verbose", "portability", "help", "version"),
		stopAtOperand: true,
	}
)
