// Package objects moves the files of jobs (samples, File and Dir inputs,
// documentation bundles) between the submitter and the workers through
// the NATS Object Store, named by sha256 (messages.ObjectRef), with a local
// content-addressed download cache on each worker.
//
//	st, _ := objects.New(objectStore, filepath.Join(stateDir, "samples"))
//	ref, _ := st.Put(ctx, "sales", "examples/sales/sales.csv") // sha256:<hex>.csv
//	inputs, _ := st.FetchAll(ctx, []messages.SampleRef{ref})   // sales.csv -> local path
package objects
