// Package jobfile reads job specs from YAML or JSON files and from the
// submit CLI's flags, strictly: every error names the field at fault.
//
//	spec, err := jobfile.Load("examples/sales/job.yaml")
package jobfile
