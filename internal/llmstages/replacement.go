package llmstages

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

var aptNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]{1,62}$`)

// packageReplacement asks for a package in place of one the build could
// not find. A reply that is not a valid name of the right kind, repeats the
// missing name or one already tried, or is null, means "go without".
func (h *Handlers) packageReplacement(ctx context.Context, cmd *messages.StageCommand, in messages.PackageReplacementInput) (stagework.Output[messages.PackageReplacement], error) {
	in.Package = strings.TrimSpace(in.Package)
	if in.Package == "" {
		return stagework.Output[messages.PackageReplacement]{}, badInput(cmd.Stage, "package is empty")
	}
	if in.Kind != "pip" && in.Kind != "apt" {
		return stagework.Output[messages.PackageReplacement]{}, badInput(cmd.Stage, "kind %q is not pip or apt", in.Kind)
	}
	out, err := call[messages.PackageReplacement](ctx, h, cmd, llm.PackageReplacementSchema, prompts.PackageReplacement(in))
	if err != nil {
		return out, err
	}
	var n notes
	out.Value.Replacement = usableReplacement(out.Value.Replacement, in, &n)
	out.Notes = n
	return out, nil
}

// usableReplacement is the reply's replacement, trimmed, or nil when it is
// not a valid name of the kind asked for, or is the missing name or one
// already tried; n says why it was dropped.
func usableReplacement(r *string, in messages.PackageReplacementInput, n *notes) *string {
	if r == nil {
		return nil
	}
	name := strings.TrimSpace(*r)
	valid := messages.PackageNameRe.MatchString(name)
	if in.Kind == "apt" {
		valid = aptNameRe.MatchString(name)
	}
	seen := strings.EqualFold(name, in.Package) || slices.ContainsFunc(in.Tried, func(t string) bool { return strings.EqualFold(name, t) })
	switch {
	case !valid:
		n.add("dropped replacement %q: not a %s package name", name, in.Kind)
		return nil
	case seen:
		n.add("dropped replacement %q: already tried", name)
		return nil
	}
	return &name
}
