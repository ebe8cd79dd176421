package wiring

import (
	"context"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// What a stage worker does for the operators (issue 25): it announces the
// stages it starts, watches its pool's pause switch and beats its
// capacity into the roster.

// announcer is the executor's Announce: each stage it starts is published
// as a stage_started notice on core NATS.
func (st *Stack) announcer(pool messages.Pool) func(context.Context, messages.StageStarted) {
	return func(_ context.Context, n messages.StageStarted) {
		if err := bus.AnnounceStarted(st.Conn, pool, n); err != nil {
			st.log.Debug("announce a started stage", "job_id", n.JobID, "stage", n.Stage, "err", err)
		}
	}
}

// watchPause keeps a switch in step with pool's pause until Close.
func (st *Stack) watchPause(pool messages.Pool) *bus.Pause {
	p := bus.NewPause()
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		bus.WatchPause(st.parts, st.Resources.Pools, pool, p, st.log.With("component", string(pool)+"-worker"))
	}()
	return p
}

// advertise beats w's capacity into the roster until Close.
func (st *Stack) advertise(pool messages.Pool, w *bus.Worker) {
	instance, started := bus.NewInstance(), time.Now()
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		bus.Advertise(st.parts, st.Resources.Workers, pool, instance, func() messages.WorkerBeat {
			return messages.WorkerBeat{V: messages.WireVersion, Pool: string(pool), Worker: st.opts.Config.WorkerName,
				Instance: instance, Slots: w.Slots(), InFlight: w.InFlight(), Paused: w.Paused(), StartedAt: started, At: time.Now()}
		}, st.log.With("component", string(pool)+"-worker"))
	}()
}
