package llmstages

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

func TestPackageReplacement(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    messages.PackageReplacementInput
		reply string
		want  string // "" = null
	}{
		{"a pip name", messages.PackageReplacementInput{Package: "opencv", Kind: "pip"}, `{"replacement":" opencv-python "}`, "opencv-python"},
		{"null", messages.PackageReplacementInput{Package: "ghost", Kind: "pip"}, `{"replacement":null}`, ""},
		{"the same name again", messages.PackageReplacementInput{Package: "ghost", Kind: "pip"}, `{"replacement":"Ghost"}`, ""},
		{"a name already tried", messages.PackageReplacementInput{Package: "b", Kind: "pip", Tried: []string{"a", "b"}}, `{"replacement":"a"}`, ""},
		{"shell in a pip name", messages.PackageReplacementInput{Package: "x", Kind: "pip"}, `{"replacement":"x; rm -rf /"}`, ""},
		{"a URL", messages.PackageReplacementInput{Package: "x", Kind: "pip"}, `{"replacement":"https://evil/x.whl"}`, ""},
		{"an apt name", messages.PackageReplacementInput{Package: "libfoo", Kind: "apt"}, `{"replacement":"libfoo2"}`, "libfoo2"},
		{"an apt name in upper case", messages.PackageReplacementInput{Package: "libfoo", Kind: "apt"}, `{"replacement":"LibFoo2"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fc := &fakeClient{replies: map[string]string{"package_replacement": tc.reply}}
			out, err := newHandlers(t, fc, Config{}).Handle(context.Background(), command(t, messages.StagePackageReplacement, tc.in))
			if err != nil {
				t.Fatal(err)
			}
			got := value[messages.PackageReplacement](t, out)
			if (got.Replacement == nil) != (tc.want == "") || (got.Replacement != nil && *got.Replacement != tc.want) {
				t.Errorf("replacement = %v, want %q", got.Replacement, tc.want)
			}
			if last := fc.calls()[0].Messages; !strings.Contains(last[len(last)-1].Content, tc.in.Package) {
				t.Error("the prompt does not name the missing package")
			}
		})
	}
	for _, bad := range []messages.PackageReplacementInput{{Package: "", Kind: "pip"}, {Package: "x", Kind: "brew"}} {
		_, err := newHandlers(t, &fakeClient{}, Config{}).Handle(context.Background(), command(t, messages.StagePackageReplacement, bad))
		if !errors.Is(err, ErrBadInput) {
			t.Errorf("input %+v: err = %v, want ErrBadInput", bad, err)
		}
	}
}
