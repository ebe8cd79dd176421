package evaluate

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Hidden-test verdicts of a Row.
const (
	HiddenPassed = "passed" // the hidden tests pass on the job's final script
	HiddenFailed = "failed" // they fail on it
	HiddenError  = "error"  // they could not be run (the sandbox failed)
	HiddenNone   = "none"   // the job left no script to test
)

// Row is one problem's outcome: a line of the results file.
type Row struct {
	TaskID string `json:"task_id"`
	JobID  string `json:"job_id"`
	// Pending marks a problem whose job was submitted and has not
	// finished: after a crash, the job is watched again rather than run
	// again (if the deployment still knows it).
	Pending bool               `json:"pending,omitempty"`
	Status  messages.JobStatus `json:"status,omitempty"`
	// Success is what the job said: its own tests pass.
	Success      bool   `json:"success"`
	Hidden       string `json:"hidden,omitempty"`
	HiddenDetail string `json:"hidden_detail,omitempty"`
	Iterations   int    `json:"iterations"`
	LLMCalls     int    `json:"llm_calls"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
	CacheHits    int    `json:"cache_hits"`
	// CostUSD is the tokens at Config's prices (zero without prices).
	CostUSD     float64 `json:"cost_usd"`
	WallSeconds float64 `json:"wall_seconds"`
	// Strength is the test strength of the job's final tests, when it was
	// measured (the job's result has test_strength).
	Strength *StrengthCols `json:"strength,omitempty"`
	Error    string        `json:"error,omitempty"`
	Finished time.Time     `json:"finished,omitempty"`
}

// StrengthCols is a row's test strength: the score and counts of the last
// measurement, the first score, and the model calls and tokens spent on
// stronger tests.
type StrengthCols struct {
	Score      float64 `json:"score"`
	Initial    float64 `json:"initial"`
	Mutants    int     `json:"mutants"`
	Killed     int     `json:"killed"`
	Survived   int     `json:"survived"`
	Equivalent int     `json:"equivalent"`
	Rounds     int     `json:"rounds"`
	Calls      int     `json:"calls"`
	Tokens     int     `json:"tokens"`
}

// FalseSuccess reports a job that said success while the hidden tests fail
// (or there was no script to run them on). One whose hidden tests could not
// be run (HiddenError: eval's own sandbox failed) is not judged: it is
// counted apart (Summary.HiddenErrors).
func (r Row) FalseSuccess() bool {
	return r.Success && r.Hidden != HiddenPassed && r.Hidden != HiddenError
}

// FalseFailure reports a job that gave up on a script the hidden tests pass.
func (r Row) FalseFailure() bool { return !r.Success && r.Hidden == HiddenPassed }

// maxResultLine bounds one line of a results file.
const maxResultLine = 1 << 20

// resultsFile is the append-only results file: a JSON row per line, the
// last row of a task winning. Appends are serialised and synced, so a
// crash loses at most the line being written, which reading skips.
type resultsFile struct {
	mu sync.Mutex
	f  *os.File
}

// openResults reads the rows already in path (by task ID, the last one of
// each) and opens it for appending.
func openResults(path string) (*resultsFile, map[string]Row, error) {
	rows := map[string]Row{}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("results file: %w", err)
	}
	if err := readRows(f, rows); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("results file %s: %w", path, err)
	}
	if err := endLine(f); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("results file %s: %w", path, err)
	}
	return &resultsFile{f: f}, rows, nil
}

func readRows(r io.Reader, rows map[string]Row) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxResultLine)
	for sc.Scan() {
		var row Row
		if json.Unmarshal(sc.Bytes(), &row) != nil || row.TaskID == "" {
			continue // a line torn by a crash: that problem runs again
		}
		rows[row.TaskID] = row
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("a line is over %d bytes: not a results file", maxResultLine)
	}
	return sc.Err()
}

// endLine makes sure the next append starts on a line of its own (a crash
// may have left half a line).
func endLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	if last[0] != '\n' {
		_, err = f.Write([]byte("\n"))
	}
	return err
}

// append writes a row and syncs it.
func (r *resultsFile) append(row Row) error {
	b, err := json.Marshal(row)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("results file: %w", err)
	}
	return r.f.Sync()
}

func (r *resultsFile) Close() error { return r.f.Close() }
