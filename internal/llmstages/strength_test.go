package llmstages

import (
	"context"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The strengthening call shows the survivors and takes the tests reply as
// the tests stage does: fences stripped, empty tests refused.
func TestStrengthenTests(t *testing.T) {
	t.Parallel()
	in := messages.StrengthenTestsInput{Task: task, Code: "def total(xs):\n    return sum(xs)\n", Tests: "def test_total():\n    pass\n", Round: 1,
		Strength: messages.TestStrength{Mutants: 3, Killed: 1, Survived: 2, Score: 1.0 / 3, Survivors: []messages.SurvivingMutant{
			{Line: 2, Description: "return sum(xs) -> return None", Operator: "return", Diff: "-    return sum(xs)\n+    return None\n", Witness: "total([1, 2])", Near: false}}}}
	fc := &fakeClient{replies: map[string]string{"tests": `{"code":"` + "```python\\nfrom solution import total\\n\\ndef test_total():\\n    assert total([1, 2]) == 3\\n```" + `"}`}}
	out, err := newHandlers(t, fc, Config{}).Handle(context.Background(), command(t, messages.StageStrengthenTests, in))
	if err != nil {
		t.Fatal(err)
	}
	want := messages.Tests{Code: "from solution import total\n\ndef test_total():\n    assert total([1, 2]) == 3\n"}
	if diff := diffValue(t, want, out); diff != "" {
		t.Errorf("tests (-want +got):\n%s", diff)
	}
	user := fc.calls()[0].Messages[1].Content
	for _, s := range []string{prompts.SurvivorsHeading, "+    return None", "total([1, 2])", "do not check the result closely enough"} {
		if !strings.Contains(user, s) {
			t.Errorf("the prompt lacks %q", s)
		}
	}
	fc = &fakeClient{replies: map[string]string{"tests": `{"code":"   "}`}}
	if _, err := newHandlers(t, fc, Config{}).Handle(context.Background(), command(t, messages.StageStrengthenTests, in)); err == nil {
		t.Error("empty tests were accepted")
	}
}
