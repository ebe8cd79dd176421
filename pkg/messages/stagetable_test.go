package messages

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDefaultStages(t *testing.T) {
	t.Parallel()
	st := DefaultStages()
	if st.Len() != 20 {
		t.Errorf("%d stages", st.Len())
	}
	for _, r := range st.Rows() {
		if r.Version < 1 || r.Pool == "" || r.Deadline == "" {
			t.Errorf("row %+v", r)
		}
	}
	if st.Pool(StagePlan) != PoolLLM || st.Pool(StageBuild) != PoolSandbox || st.Pool("dance") != "" {
		t.Error("pools")
	}
	if r, _ := st.Row(StageRunTests); r.Deadline != DeadlineRun {
		t.Errorf("run_tests: %+v", r)
	}
	// The LLM stages first, as the table lists them.
	if s := st.Stages(); s[0] != StagePlan || s[len(s)-1] != StageCodeModeExec {
		t.Errorf("order %v", s)
	}
}

// TestStageTableWith: a test extends the table with a stage of its own;
// the table it extends is unchanged, and bad rows are refused by name.
func TestStageTableWith(t *testing.T) {
	t.Parallel()
	echo := StageRow{Stage: "echo", Pool: PoolSandbox, Deadline: DeadlineStep, Cached: false, Version: 1}
	ext, err := DefaultStages().With(echo)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := ext.Row("echo"); !ok || r != echo || ext.Len() != DefaultStages().Len()+1 {
		t.Errorf("extended table: %+v %v", r, ok)
	}
	if _, ok := DefaultStages().Row("echo"); ok {
		t.Error("With changed the table it extends")
	}
	for name, bad := range map[string]StageRow{
		"two rows":      {Stage: StagePlan, Pool: PoolLLM, Deadline: DeadlineStep, Version: 1},
		"no pool":       {Stage: "x", Deadline: DeadlineStep, Version: 1},
		"unknown pool":  {Stage: "x", Pool: "gpu", Deadline: DeadlineStep, Version: 1},
		"no deadline":   {Stage: "x", Pool: PoolLLM, Version: 1},
		"version 0":     {Stage: "x", Pool: PoolLLM, Deadline: DeadlineStep},
		"not a token":   {Stage: "x.y", Pool: PoolLLM, Deadline: DeadlineStep, Version: 1},
		"no name":       {Pool: PoolLLM, Deadline: DeadlineStep, Version: 1},
		"upper case":    {Stage: "Plan", Pool: PoolLLM, Deadline: DeadlineStep, Version: 1},
		"subject chars": {Stage: "a>b", Pool: PoolLLM, Deadline: DeadlineStep, Version: 1},
	} {
		if _, err := DefaultStages().With(bad); err == nil {
			t.Errorf("%s: %+v accepted", name, bad)
		} else if bad.Stage != "" && !strings.Contains(err.Error(), string(bad.Stage)) {
			t.Errorf("%s: %v does not name the stage", name, err)
		}
	}
	var zero StageTable
	if zero.Len() != 0 || zero.Pool(StagePlan) != "" {
		t.Error("the zero table has stages")
	}
}

// pendingSwitches are the switches over stage names that remain in the
// state machine, by file and function: what a stage's output says in its
// stage_finished event (its note and outcome) is still decided by stage
// name there, not by a row of the job kinds' result tables. The test
// fails when one of them is gone, so the list only shrinks.
var pendingSwitches = []string{
	"internal/machine/budget.go:outcomeOf",
	"internal/machine/eventnote.go:stageNote",
	"internal/machine/repair_test.go:TestPipelineShape",
}

// TestNoSwitchOverStageNames: the stage table is where a stage's facts
// live, so no code (tests included) switches over stage names: a new
// stage would need a branch in every such switch. Each fact is a row's
// column, a registration on the stage mux, or a row of a job kind's
// result table, all of them lookups.
func TestNoSwitchOverStageNames(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	stages := stageConstants(t)
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		found = append(found, stageSwitches(t, path, filepath.ToSlash(rel), stages)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if !slices.Contains(pendingSwitches, f) {
			t.Errorf("%s switches over stage names: look the stage up in the stage table, register it on the mux, or give it a row in its job kind's result table", f)
		}
	}
	for _, p := range pendingSwitches {
		if !slices.Contains(found, p) {
			t.Errorf("%s no longer switches over stage names: remove it from pendingSwitches", p)
		}
	}
}

// stageConstants are the names of this package's Stage constants.
func stageConstants(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]bool{}
	matches, _ := filepath.Glob("*.go")
	for _, path := range matches {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Stage" {
					for _, n := range vs.Names {
						out[n.Name] = true
					}
				}
			}
		}
	}
	if !out["StagePlan"] || !out["StageAgentTurn"] || !out["StageCodeModeExec"] {
		t.Fatalf("found the Stage constants %v", out)
	}
	return out
}

// stageSwitches lists, as file:function, the functions of the file at
// path whose switch statements have a case naming a stage constant.
func stageSwitches(t *testing.T, path, rel string, stages map[string]bool) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			sw, ok := n.(*ast.SwitchStmt)
			if !ok || !casesNameAStage(sw, stages) {
				return true
			}
			if where := rel + ":" + fn.Name.Name; !slices.Contains(out, where) {
				out = append(out, where)
			}
			return true
		})
	}
	return out
}

func casesNameAStage(sw *ast.SwitchStmt, stages map[string]bool) bool {
	for _, stmt := range sw.Body.List {
		for _, e := range stmt.(*ast.CaseClause).List {
			name := ""
			switch x := e.(type) {
			case *ast.SelectorExpr:
				name = x.Sel.Name
			case *ast.Ident:
				name = x.Name
			}
			if stages[name] {
				return true
			}
		}
	}
	return false
}
