package coordinator

import (
	"errors"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

func TestCheckOffered(t *testing.T) {
	t.Parallel()
	c := &Coordinator{cfg: Config{Offered: Offered{Models: []string{"big", "small"}, Pythons: []string{"3.11", "3.12"}}}}
	tests := []struct {
		opts  messages.Options
		field string
	}{
		{messages.Options{Model: "big", Python: "3.12"}, ""},
		{messages.Options{}, ""},
		{messages.Options{Model: "huge"}, "options.model"},
		{messages.Options{Python: "3.9"}, "options.python"},
	}
	for _, tt := range tests {
		err := c.checkOffered(&messages.JobSpec{Options: tt.opts})
		var fe *messages.FieldError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%+v refused: %v", tt.opts, err)
		case tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Msg, "3.11") && !strings.Contains(fe.Msg, "big")):
			t.Errorf("%+v: %v, want a refusal of %s listing what is offered", tt.opts, err, tt.field)
		}
	}
	open := &Coordinator{}
	if err := open.checkOffered(&messages.JobSpec{Options: messages.Options{Model: "any", Python: "3.13"}}); err != nil {
		t.Errorf("with nothing configured: %v", err)
	}
}
