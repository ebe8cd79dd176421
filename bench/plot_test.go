package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

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
	var tpLines, hopLines []any
	var bare plotter.XYs
	for _, name := range names {
		ps := series[name]
		slices.SortFunc(ps, func(a, b tpPoint) int { return a.concurrency - b.concurrency })
		var jobs, p50, p99 plotter.XYs
		for _, p := range ps {
			x := float64(p.concurrency)
			jobs = append(jobs, plotter.XY{X: x, Y: p.jobsPerMin(n(p))})
			bare = append(bare, plotter.XY{X: x, Y: p.bareJobsPerMin(n(p))})
			p50 = append(p50, plotter.XY{X: x, Y: ms(percentile(p.hops, 50))})
			p99 = append(p99, plotter.XY{X: x, Y: ms(percentile(p.hops, 99))})
		}
		tpLines = append(tpLines, name, jobs)
		hopLines = append(hopLines, name+" p50", p50, name+" p99", p99)
	}
	slices.SortFunc(bare, func(a, b plotter.XY) int { return int(a.X - b.X) })
	tpLines = append(tpLines, "bare pytest, one after another (beside each point)", bare)
	if err := plotutil.AddLinePoints(tp, tpLines...); err != nil {
		return err
	}
	if err := plotutil.AddLinePoints(hop, hopLines...); err != nil {
		return err
	}
	for file, p := range map[string]*plot.Plot{"throughput.png": tp, "hop-latency.png": hop} {
		p.Legend.Top = true
		p.Legend.Left = true
		if err := p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, file)); err != nil {
			return fmt.Errorf("plot %s: %w", file, err)
		}
	}
	return nil
}
