package protocol

import "strings"

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
