package shellpolicy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Python runs only as a workspace .py file or as python -m pytest. The file
// holds code the model wrote with write_file, recorded with the job and run
// in the same sandbox as the tests, so refusing it would only get in the way;
// python -c and python reading its input run code nobody keeps, so they are
// refused with a pointer to write_file.

// pythonFlags change nothing about what code runs.
var pythonFlags = map[string]bool{"-u": true, "-B": true, "-q": true, "-O": true, "-OO": true, "-s": true, "-E": true, "-I": true, "-P": true}

// pythonModules may run with python -m; pytest marks the verdict.
var pythonModules = map[string]bool{"pytest": true, "py_compile": true, "unittest": true, "doctest": true}

func checkPython(c *checker, name string, args []*syntax.Word) {
	for i, w := range args {
		s, ok := literal(w)
		switch {
		case !ok:
			c.refuse("%s arguments before the script must be literal: write python3 FILE.py", name)
			return
		case pythonFlags[s]:
		case s == "-m" || strings.HasPrefix(s, "-m"):
			module := strings.TrimPrefix(s, "-m")
			if module == "" && i+1 < len(args) {
				module, _ = literal(args[i+1])
			}
			c.pythonModule(name, module)
			return
		case strings.HasPrefix(s, "-c"):
			c.refuse("%s -c runs code that is not kept: write it to a .py file with write_file and run python3 FILE.py", name)
			return
		case strings.HasPrefix(s, "-"):
			c.refuse("%s %s is not allowed here: run python3 FILE.py or python3 -m pytest", name, s)
			return
		default:
			c.pythonFile(name, s)
			return
		}
	}
	c.refuse("%s without a file reads code from its input, which is not kept: write the code to a .py file with write_file and run python3 FILE.py", name)
}

func (c *checker) pythonModule(name, module string) {
	switch {
	case module == "pip" || module == "ensurepip" || module == "venv":
		c.refuse(packageReason, name+" -m "+module)
	case !pythonModules[module]:
		c.refuse("%s -m %s is not allowed: use %s -m pytest, or run a workspace file with %s FILE.py", name, module, name, name)
	case module == "pytest":
		c.pytest = true
	}
}

func (c *checker) pythonFile(name, file string) {
	if reason := outsideWorkspace(file, false); reason != "" {
		c.refuse("%s runs only .py files in the workspace: %s", name, reason)
		return
	}
	if !strings.HasSuffix(file, ".py") {
		c.refuse("%s runs only .py files in the workspace, not %s", name, file)
	}
}

func checkPytest(c *checker, _ string, _ []*syntax.Word) {
	c.pytest = true
}
