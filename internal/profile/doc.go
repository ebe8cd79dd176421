// Package profile describes a job's sample files so that the model writes
// code for the data it will really get: the profile stage (step 1 of the
// loop) turns each sample into column types, nullability, statistics and
// representative rows (the prompt's data context), a Pandera schema per
// table, and checks parsed from the job's natural-language constraints.
//
//	rep, err := profile.Profile(ctx, []profile.Sample{
//		{Name: "sales", FileName: "sales.csv", Path: localPath},
//	}, profile.Options{MaxSampleRows: in.MaxSampleRows, Constraints: in.Constraints})
//	if err != nil {
//		return err // a *profile.SampleError; errors.Is(err, profile.ErrNotText) for a binary file
//	}
//	// rep.Unparsed: constraints to send to the `constraint` LLM call or to
//	// leave in the prompt as text. rep.Kept: checks that do not fit their
//	// column (Rendition.Admit, the test the model's checks pass too), kept
//	// as text the code must enforce.
//	out := messages.ProfileOutput{
//		DataContext:      rep.DataContext(),
//		GeneratedSchemas: rep.PanderaSchemas(),
//	}
//	// Elsewhere, without the samples: render again with the model's checks.
//	rd := rep.Rendition() // JSON-safe
//	rd = rd.WithChecks(modelChecks, stillText)
//	ctxText, schemas := rd.DataContext(), rd.PanderaSchemas()
//
// Formats come from the file name and its first bytes: CSV (delimiter
// sniffed among , ; | and tab), TSV, JSON (an array of records), JSON Lines,
// Parquet (github.com/parquet-go/parquet-go), Excel .xlsx
// (github.com/xuri/excelize/v2, first sheet), any of the text ones
// gzip-compressed, and a plain-text fallback (line count, first lines).
// Text is UTF-8 (a BOM is skipped), UTF-16 with a BOM, or else decoded as
// Latin-1, and the report says which. A binary file given as text is an
// error (ErrNotText); an empty file is an "empty" profile.
//
// Files are streamed and memory is bounded: the scan stops at
// Options.MaxScanRows (the report says the statistics cover the first N
// rows); exact distinct counts give way to HyperLogLog past 16384 values
// per column, exact medians to a seeded uniform sample past a column's
// share of 8M stored numbers (both budgets are shared by a sample's
// columns, so wide files stay bounded too); one CSV record may not exceed
// 32 MiB. Min, max and mean are exact over every scanned row (compensated
// sums) and printed at full precision; with every value kept, the standard
// deviation is two-pass, as pandas computes it. CSV rows are parsed on one
// goroutine and their columns profiled on others.
// The same file and seed always give the same text: representative rows
// come from a seeded reservoir sample, and nothing depends on map order,
// timing or goroutine scheduling.
package profile
