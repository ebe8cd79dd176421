package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const python3 = "/usr/bin/python3"

// schemaCheckScript reads {"schemas": {name: source}, "tables": {name:
// {"source", "path", "sep"}}} on stdin and prints {name: problem} for each
// schema that is not valid Python with a module-level
// `schema = pa.DataFrameSchema(...)`, and for each table whose datetime
// columns the schema's to_datetime arguments do not parse with this
// machine's pandas (what pandera does when it coerces them). Pandera is
// not imported: it is not installed here, and a stand-in would prove
// nothing.
const schemaCheckScript = `
import ast, json, re, sys

req = json.load(sys.stdin)
problems = {}


def schema_call(tree):
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "schema" for t in node.targets)
                and isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "pa.DataFrameSchema"):
            return node.value
    return None


for name, src in req["schemas"].items():
    try:
        tree = ast.parse(src, filename=name)
    except SyntaxError as e:
        problems[name] = "line %s: %s" % (e.lineno, e.msg)
        continue
    call = schema_call(tree)
    if call is None or not call.args or not isinstance(call.args[0], ast.Dict):
        problems[name] = "no module-level schema = pa.DataFrameSchema({...})"
        continue
    # Every pattern must compile with Python's re (pandera's str_matches).
    for node in ast.walk(call):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "pa.Check.str_matches":
            try:
                re.compile(ast.literal_eval(node.args[0]))
            except Exception as e:
                problems[name + ": " + ast.unparse(node)] = "pattern: %s" % e

import pandas as pd

for name, t in req["tables"].items():
    tree = ast.parse(t["source"], filename=name)
    env = {"pd": pd}
    # Run the schema's own module-level constants (MIXED_DATES), nothing else.
    consts = [n for n in tree.body if isinstance(n, ast.Assign) and all(isinstance(x, ast.Name) and x.id.isupper() for x in n.targets)]
    exec(compile(ast.Module(body=consts, type_ignores=[]), name, "exec"), env)
    df = pd.read_csv(t["path"], sep=t["sep"], dtype=str)
    checked = 0
    for key, col in zip(schema_call(tree).args[0].keys, schema_call(tree).args[0].values):
        column = ast.literal_eval(key)
        dtype = col.args[0] if col.args else None
        if isinstance(dtype, ast.Constant) and dtype.value == "datetime64[ns]":
            kwargs = {}
        elif isinstance(dtype, ast.Call) and ast.unparse(dtype.func) == "pandas_engine.DateTime":
            kw = {k.arg: k.value for k in dtype.keywords}
            kwargs = eval(compile(ast.Expression(kw["to_datetime_kwargs"]), name, "eval"), env) if "to_datetime_kwargs" in kw else {}
        else:
            continue
        checked += 1
        try:
            got = pd.to_datetime(df[column], **kwargs)
        except Exception as e:
            problems["%s: %s" % (name, column)] = "pandas %s: to_datetime(%r): %s" % (pd.__version__, kwargs, e)
            continue
        if got.isna().sum() != df[column].isna().sum():
            problems["%s: %s" % (name, column)] = "pandas %s: to_datetime(%r) lost values" % (pd.__version__, kwargs)
    if checked == 0:
        problems[name] = "no datetime column checked"

print(json.dumps(problems))
`

// TestSchemasArePython parses every golden schema, and schemas of samples
// built to stress the quoting (column names and patterns with quotes,
// backslashes, newlines and unicode), with Python's ast in one process;
// and coerces the datetime columns of the CSV and TSV goldens with the
// schema's own to_datetime arguments on this machine's pandas (Debian's
// 1.5.3 in CI, where format="mixed" does not exist).
func TestSchemasArePython(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command(python3, "-c", "import pandas").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import pandas (%v: %s): run scripts/setup.sh", python3, err, out)
	}
	schemas := map[string]string{}
	goldens, err := filepath.Glob("testdata/golden/*.golden")
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	const marker = "\n=== pandera schema ===\n"
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		if _, src, ok := strings.Cut(string(b), marker); ok {
			schemas[filepath.Base(g)] = src
		}
	}
	if len(schemas) < 10 {
		t.Fatalf("only %d goldens have a schema", len(schemas))
	}

	// Hostile names and constraints.
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "odd.csv")
	header := "\"a\"\"b\",c\\d,\"e\nf\",größe ✓,\"x'''y\",end\\\n"
	if err := os.WriteFile(csvPath, []byte(header+"1,p,q,1.5,z,w\n2,r,s,2.5,z,w\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Profile(context.Background(), []Sample{{Name: `odd"name\`, FileName: "odd.csv", Path: csvPath}}, Options{
		Seed: 1,
		Constraints: []string{
			`c\d matches /^[a-z"\\]+\\$/`,
			`größe ✓ between 0 and 10`,
			`a"b must be one of 1, 2, "three"`,
			`x''' y must match /'''"""/`,
			`end\ matches /\/`,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Checks) < 2 {
		t.Errorf("only %d of the hostile constraints were read into checks: %+v, unparsed %q", len(rep.Checks), rep.Checks, rep.Unparsed)
	}
	// A pattern Python cannot compile is kept as text, not put in the schema.
	if len(rep.Kept) != 1 || rep.Kept[0].Check.Pattern != `\` {
		t.Errorf("kept %+v, want the lone-backslash pattern", rep.Kept)
	}
	for name, src := range rep.PanderaSchemas() {
		schemas["generated "+name] = src
	}

	tables := map[string]map[string]string{}
	for _, name := range []string{"dates.csv", "sales.tsv"} {
		sep := ","
		if strings.HasSuffix(name, ".tsv") {
			sep = "\t"
		}
		src, ok := schemas[name+".golden"]
		if !ok {
			t.Fatalf("%s.golden has no schema", name)
		}
		tables[name] = map[string]string{"source": src, "path": filepath.Join("testdata/samples", name), "sep": sep}
	}

	req, err := json.Marshal(map[string]any{"schemas": schemas, "tables": tables})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python3, "-c", schemaCheckScript)
	cmd.Stdin = bytes.NewReader(req)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	var problems map[string]string
	if err := json.Unmarshal(out, &problems); err != nil {
		t.Fatalf("python's answer %q: %v", out, err)
	}
	names := make([]string, 0, len(problems))
	for n := range problems {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Errorf("%s: %s\n%s", n, problems[n], schemas[n])
	}
}
