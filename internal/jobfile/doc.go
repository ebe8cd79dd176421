// Package jobfile reads job specs from YAML or JSON files and from the
// submit CLI's flags, strictly: every error names the field at fault. A
// job file must be a regular file of at most MaxSpecBytes: ReadRegular
// refuses devices, FIFOs and directories before reading a byte.
//
//	spec, err := jobfile.Load("examples/sales/job.yaml", jobfile.LoadOptions{})
package jobfile
