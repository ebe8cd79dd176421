package protocol

import (
	"github.com/autocoder/autocoder/pkg/messages"
	"strings"
)

// The generated files, in the sandbox's working directory.
const (
	SolutionModule = "solution"
	TestModule     = "test_solution"
	SolutionFile   = SolutionModule + ".py"
	TestFile       = TestModule + ".py"
)

// The directories of a run: samples and File/Dir inputs read-only under
// InputsDir, declared outputs written under OutputsDir.
const (
	InputsDir  = "/var/inputs"
	OutputsDir = "/var/outputs"
)

// InputPath is where a sample or a File/Dir input with file name file is
// mounted: a sample named sales from orders.csv is "/var/inputs/sales.csv".
// A name that already is such a path is returned as it is.
func InputPath(file string) string {
	return InputsDir + "/" + strings.TrimPrefix(file, InputsDir+"/")
}

// OutputPath is where the script writes the declared output name.
func OutputPath(name string) string { return OutputsDir + "/" + name }

// Option is the command-line option of an input or a sample: "--name".
func Option(name string) string { return "--" + name }

// FileArgs are the options that name every sample and File/Dir input of a
// run: --name /var/inputs/<file name>. The harness passes them on every run
// of the script (the acceptance run and every later run), so a script whose
// sample options are required (argparse's required=True) works as well as
// one that falls back to the default paths.
func FileArgs(refs []messages.SampleRef) map[string]string {
	if len(refs) == 0 {
		return nil
	}
	args := make(map[string]string, len(refs))
	for _, r := range refs {
		args[r.Name] = InputPath(r.FileName)
	}
	return args
}
