package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPythonTable(t *testing.T) {
	t.Parallel()
	c := JobSettingsConfig{Pythons: " 3.11=/usr/bin/python3.11, 3.12=registry.local/autocoder-base:py3.12"}
	got, err := c.PythonTable()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"3.11": "/usr/bin/python3.11", "3.12": "registry.local/autocoder-base:py3.12"}, got); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"3.11", "3.12"}, c.PythonVersions()); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"3.11", "2.7=/usr/bin/python2", "3.x=/p", "3.11=", "3.11=/a,3.11=/b", "python3.12=/p"} {
		c := JobSettingsConfig{Pythons: bad}
		if _, err := c.PythonTable(); err == nil || !strings.Contains(err.Error(), "AUTOCODER_PYTHONS") {
			t.Errorf("PythonTable(%q) = %v, want an error naming AUTOCODER_PYTHONS", bad, err)
		}
	}
	if v := (&JobSettingsConfig{}).PythonVersions(); v != nil {
		t.Errorf("unset: %v", v)
	}
}

func TestModelNames(t *testing.T) {
	t.Parallel()
	c := Config{Model: "gpt-4.1-mini"}
	names, def, err := c.ModelNames()
	if err != nil || def != "gpt-4.1-mini" || names != nil {
		t.Errorf("without a file: %v %q %v", names, def, err)
	}
	p := filepath.Join(t.TempDir(), "models.yaml")
	// The names are read without the keys: a coordinator need not hold them.
	os.WriteFile(p, []byte("default: b\nmodels: [{name: b, api_key_file: /nonexistent}, {name: a}]\n"), 0o600)
	c.ModelsFile = p
	names, def, err = c.ModelNames()
	if err != nil || def != "b" || strings.Join(names, ",") != "a,b" {
		t.Errorf("from the file: %v %q %v", names, def, err)
	}
	if _, err := c.ModelTable(); err == nil || !strings.Contains(err.Error(), "api_key_file") {
		t.Errorf("ModelTable with a missing key file: %v", err)
	}
}
