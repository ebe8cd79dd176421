package pyexec_test

import (
	"context"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemode/pyexec"
)

func TestRunBasics(t *testing.T) {
	t.Parallel()
	r := &pyexec.Runner{Backend: processBackend(t)}
	res, err := r.Run(context.Background(), `import asyncio
cities = []
page = 0
while page is not None:
    r = search("c", page=page)
    cities += r["items"]
    page = r["next_page"]
try:
    get_weather("Atlantis")
except ToolError as e:
    print("caught:", e.message)
temps = {c: get_weather(c)["temp_c"] for c in cities}
both = await asyncio.gather(get_weather("Paris"), get_weather(city="Oslo"))
print(f"{sum(temps.values()) / len(temps):.2f}")
{"temps": temps, "both": [w["temp_c"] for w in both], "pm": [w["temp_c"] for w in parallel_map(get_weather, [{"city": "Lima"}, {"city": "x"}]) if not isinstance(w, ToolError)]}
`, weatherTools())
	if err != nil {
		t.Fatalf("Run: %v (%s)", err, codemode.ErrorText(err))
	}
	t.Logf("value %v output %q calls %d in %s", res.Value, res.Output, res.ToolCalls, res.Duration)
	if !strings.Contains(res.Output, "caught: unknown city Atlantis") || !strings.Contains(res.Output, "20.75") {
		t.Fatalf("output %q", res.Output)
	}
}
