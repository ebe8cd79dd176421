package codemode

// PythonRules is the text for the prompt that tells the model how its
// Python runs (internal/codemode/pyexec): what the tools are and how they
// fail, how to call them at once, where files go, and the limits. It says
// nothing about which Python to write: the program runs as CPython runs it.
func PythonRules() string { return pythonRules }

const pythonRules = `Write the program in Python 3 (CPython 3.11, the standard library; no network).
- Each tool is a function you call by name, with its parameters as
  keywords or in order: get_weather(city="Paris"). It returns the tool's
  answer (dicts, lists, strings, numbers).
- A tool that fails raises ToolError; e.message says what went wrong.
  Catch it with try/except where a failure is expected.
- Independent calls can run at once: parallel_map(get_weather, [{"city": "Paris"},
  {"city": "Oslo"}]) returns the results in order (a failed call's slot holds
  its ToolError), or inside async code
  results = await asyncio.gather(get_weather("Paris"), get_weather("Oslo")).
- The value of the program's last line, if it is an expression, is the
  result (the observation you will see), together with what print() wrote.
  End with the value you want to see, for example a dict.
- Files written to the folder OUTPUTS (/var/outputs) come back with the
  result; images there (PNG, SVG) are shown as charts.
- Limits: wall time, memory, the number of tool calls, the size of a call's
  arguments and of its result, printed output and the result's size; a
  program that reaches one stops with an error that names it.
`
