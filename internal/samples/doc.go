// Package samples moves job sample files between the submitter and the
// sandbox-workers through the NATS Object Store, named by sha256, with a
// local content-addressed download cache on each worker.
//
//	st, _ := samples.New(objectStore, filepath.Join(stateDir, "samples"))
//	ref, _ := st.Put(ctx, "sales", "examples/sales/sales.csv") // sha256:<hex>.csv
//	inputs, _ := st.FetchAll(ctx, []messages.SampleRef{ref})   // sales.csv -> local path
package samples
