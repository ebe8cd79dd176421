package codemode

import "fmt"

// DialectRules is the text for the prompt that tells the model which
// language its code is written in and how tools behave. It matches what
// Run enforces.
func DialectRules() string {
	return fmt.Sprintf(dialectRules, DefaultMaxParallel)
}

const dialectRules = `Write the program in Starlark, a small dialect of Python:
- No classes, no imports (no import statement, no load), no try/except, no
  while loops and no recursion (a function may not call itself, directly or
  not). Loop with "for x in <list or range(n)>"; every loop must be bounded.
- Names starting with __ are reserved. There is no ** operator: write
  1000000, not 10**6.
- Builtins: Starlark's own (len, range, str, int, float, bool, list, dict,
  tuple, set, sorted, reversed, enumerate, zip, min, max, abs, any, all,
  hasattr, getattr, type, repr, print, fail) plus:
  - is_error(x): True when x is the error value a failed tool call returned.
  - parallel_map(tool, calls): calls tool (the tool itself or its name as a
    string) once per dict of keyword arguments in the list calls, up to %d
    at a time, and returns the results in the same order. Use it for
    independent calls.
- Call tools with keyword arguments: get_weather(city="Paris").
- A tool that fails does not stop the program: it returns an error value.
  Test it with is_error(result); result.message says what went wrong. An
  error value is falsy; indexing it stops the program with its message.
- The value of the program's last line, if it is an expression, is the
  result (the observation you will see), together with what print() wrote.
  End with the value you want to see, for example a dict.
- Build text by appending to a list and joining it ("\n".join(lines)), not
  with s += line in a loop: every copy counts against the memory budget.
- Limits: a step budget, a wall-time limit and a memory budget stop long or
  large programs with an error that names the limit; print output is capped.
`
