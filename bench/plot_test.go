package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// writePlots draws the throughput run (gonum.org/v1/plot): jobs per
// minute against the jobs in flight, one line per setting with bare
// pytest's figure of the same run as the baseline (throughput.png), and
// the orchestration gap before a stage, p50 and p99 (hop-latency.png).
func writePlots(dir string, points []tpPoint) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := func(p tpPoint) int { return p.passed / max(p.runs, 1) }
	series := map[string][]tpPoint{}
	var names []string
	for _, p := range points {
		name := fmt.Sprintf("%d sandbox worker(s), %s", p.workers, p.firstPass)
		if p.warm != "" {
			name += ", warm runner " + p.warm
		}
		if _, ok := series[name]; !ok {
			names = append(names, name)
		}
		series[name] = append(series[name], p)
	}

	tp := plot.New()
	tp.Title.Text = "HumanEval throughput (separate processes, auth on)"
	tp.X.Label.Text = "jobs in flight"
	tp.Y.Label.Text = "jobs per minute"
	hop := plot.New()
	hop.Title.Text = "Orchestration gap before a stage"
	hop.X.Label.Text = "jobs in flight"
	hop.Y.Label.Text = "milliseconds"
	hop.Y.Scale = plot.LogScale{}
	hop.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var tpLines, hopLines []any
	bareSum, bareN := map[int]float64{}, map[int]int{}
	for _, name := range names {
		ps := series[name]
		slices.SortFunc(ps, func(a, b tpPoint) int { return a.concurrency - b.concurrency })
		var jobs, p50, p99 plotter.XYs
		for _, p := range ps {
			x := float64(p.concurrency)
			jobs = append(jobs, plotter.XY{X: x, Y: p.jobsPerMin(n(p))})
			bareSum[p.concurrency] += p.bareJobsPerMin(n(p))
			bareN[p.concurrency]++
			p50 = append(p50, plotter.XY{X: x, Y: max(ms(percentile(p.hops, 50)), 0.1)})
			p99 = append(p99, plotter.XY{X: x, Y: max(ms(percentile(p.hops, 99)), 0.1)})
		}
		tpLines = append(tpLines, name, jobs)
		hopLines = append(hopLines, name+" p50", p50, name+" p99", p99)
	}
	var bare plotter.XYs
	for _, c := range slices.Sorted(maps.Keys(bareSum)) {
		bare = append(bare, plotter.XY{X: float64(c), Y: bareSum[c] / float64(bareN[c])})
	}
	tpLines = append(tpLines, "bare pytest, one after another (mean of the runs beside each point)", bare)
	if err := plotutil.AddLinePoints(tp, tpLines...); err != nil {
		return err
	}
	if err := plotutil.AddLinePoints(hop, hopLines...); err != nil {
		return err
	}
	tp.Y.Min = 0
	tp.Y.Max *= 1.35 // room for the legend
	hop.Y.Max *= 30
	for file, p := range map[string]*plot.Plot{"throughput.png": tp, "hop-latency.png": hop} {
		p.Legend.Top = true
		p.Legend.Left = true
		if err := p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, file)); err != nil {
			return fmt.Errorf("plot %s: %w", file, err)
		}
	}
	return nil
}

// savedPoint is a tpPoint as -throughput.plot saves it (throughput.json),
// so plots can be drawn again (-throughput.replot) without the run.
type savedPoint struct {
	Warm        string          `json:"warm,omitempty"`
	Workers     int             `json:"workers"`
	FirstPass   string          `json:"first_pass"`
	Concurrency int             `json:"concurrency"`
	Runs        int             `json:"runs"`
	WallNS      time.Duration   `json:"wall_ns"`
	BareNS      time.Duration   `json:"bare_ns"`
	Passed      int             `json:"passed"`
	HopsNS      []time.Duration `json:"hops_ns"`
}

func savePoints(dir string, points []tpPoint) error {
	var out []savedPoint
	for _, p := range points {
		out = append(out, savedPoint{p.warm, p.workers, p.firstPass, p.concurrency, p.runs, p.wall, p.bare, p.passed, p.hops})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "throughput.json"), b, 0o644)
}

func loadPoints(dir string) ([]tpPoint, error) {
	b, err := os.ReadFile(filepath.Join(dir, "throughput.json"))
	if err != nil {
		return nil, err
	}
	var in []savedPoint
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	var out []tpPoint
	for _, p := range in {
		out = append(out, tpPoint{p.Warm, p.Workers, p.FirstPass, p.Concurrency, p.Runs, p.WallNS, p.BareNS, p.Passed, p.HopsNS})
	}
	return out, nil
}
