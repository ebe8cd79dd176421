package bus

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/pkg/messages"
)

// The object stores' bounds are reserved by the server when the stores
// are made, so default bounds larger than the server's JetStream storage
// would stop the coordinator from starting at all (9 GiB of defaults on a
// laptop with 5 GB free). A bound that is not set is therefore fitted to
// the storage the server has: the smaller of its default and its share
// (4:4:1, as the defaults) of half that storage; the other half is left
// to the streams and buckets that hold the jobs. A bound that is set is
// used exactly, and one the server cannot reserve is refused (explain).
//
// A server whose account has no JetStream limits reports none, though it
// has one: its max_file_store, by default three quarters of the disk that
// was free when it started (a compose deployment on a small disk, a NATS
// server shared with other programs). It says how much it can still
// reserve only by refusing, so then the coordinator asks: it reserves a
// throwaway stream of twice the defaults and, refused,
// bisects to what the server accepts (probeStorage), and fits the bounds
// to that as to a reported limit. A cluster places a store only on peers
// whose last reported usage (every few seconds) leaves room for its bound,
// with the configured replicas; the probe asks the same, and the stores
// made just after it are judged on the same report.

// minStoreBound is the smallest bound of an object store.
const minStoreBound = 1 << 20

// storesShare is the part of the server's storage the three fitted
// bounds may take together: one half.
const storesShare = 2

// fitBounds fills the bounds that are not set: each is the smaller of its
// default and its share of the server's storage (storageLimit), in whole
// MiB, at least minStoreBound.
func (p *provisioner) fitBounds(ctx context.Context) error {
	div := int64(1)
	if p.cfg.MemoryStorage {
		div = 16 // tests and throwaway runs: the server reserves the bounds in memory
	}
	stores := []struct {
		bucket string
		def    int64
	}{{ObjectStoreSamples, DefaultSamplesMaxBytes / div}, {ObjectStoreOutputs, DefaultOutputsMaxBytes / div}, {ObjectStoreClaims, DefaultClaimsMaxBytes / div}}
	p.fitted = map[string]bool{}
	var total int64
	for _, s := range stores {
		p.fitted[s.bucket] = *p.cfg.bound(s.bucket) == 0
		total += s.def
	}
	if !p.fitted[ObjectStoreSamples] && !p.fitted[ObjectStoreOutputs] && !p.fitted[ObjectStoreClaims] {
		return nil
	}
	limit, err := p.storageLimit(ctx)
	if err != nil {
		return err
	}
	if limit == 0 {
		p.deleteLeftProbes(ctx)
		kept, err := p.keepMadeBounds(ctx)
		if err != nil || kept {
			return err
		}
		p.probeID = p.markProbing(ctx)
		if p.awaitOlderProbes(ctx) { // the other coordinator may have made them
			if kept, err := p.keepMadeBounds(ctx); err != nil || kept {
				return err
			}
		}
		limit = p.probeStorage(ctx, storesShare*total)
	}
	share := limit / storesShare
	for _, s := range stores {
		if !p.fitted[s.bucket] {
			continue
		}
		b := s.def
		if limit > 0 && share < total {
			b = max(int64(float64(s.def)/float64(total)*float64(share)), minStoreBound) &^ (minStoreBound - 1)
			p.cfg.Logger.Info("object store bound fitted to the server's JetStream storage (set it to choose)",
				"store", s.bucket, "bound", messages.FormatBytes(b), "default", messages.FormatBytes(s.def), "server_storage", messages.FormatBytes(limit))
		}
		*p.cfg.bound(s.bucket) = b
	}
	return nil
}

// storageLimit is the JetStream storage the server has for one copy of a
// store (memory with MemoryStorage): ProvisionConfig.StorageLimit, else
// the account's limit, of the tier of the configured replicas where the
// account has tiers (an account without tiers counts every replica); 0
// when neither says.
func (p *provisioner) storageLimit(ctx context.Context) (int64, error) {
	if p.cfg.StorageLimit > 0 {
		return p.cfg.StorageLimit, nil
	}
	info, err := p.js.AccountInfo(ctx)
	if err != nil {
		return 0, fmt.Errorf("bus: provision: the account's JetStream limits, to fit the object store bounds: %w", err)
	}
	limits, perCopy := info.Limits, int64(p.cfg.Replicas)
	if t, ok := info.Tiers[fmt.Sprintf("R%d", p.cfg.Replicas)]; ok && limits == (jetstream.AccountLimits{}) {
		limits, perCopy = t.Limits, 1
	}
	limit := limits.MaxStore
	if p.cfg.MemoryStorage {
		limit = limits.MaxMemory
	}
	if limit <= 0 {
		return 0, nil // no limit (-1), or none said: the defaults
	}
	return limit / perCopy, nil
}

// keepMadeBounds gives every fitted store that the server already has its
// bound, and reports whether each had one: then there is nothing to fit,
// and no probe to make (a fitted bound never lowers a store's bound,
// maxBytes, and a probe only to raise it would cost every start a few
// reservations). A store made without a bound (MaxBytes -1) is fitted.
func (p *provisioner) keepMadeBounds(ctx context.Context) (bool, error) {
	bounds := map[string]int64{}
	for bucket, fitted := range p.fitted {
		if !fitted {
			continue
		}
		cur, err := p.current(ctx, objStream(bucket))
		if err != nil || cur == nil || cur.MaxBytes <= 0 {
			return false, err
		}
		bounds[bucket] = cur.MaxBytes
	}
	for bucket, b := range bounds {
		*p.cfg.bound(bucket) = b
	}
	p.cfg.Logger.Info("object stores made already: their bounds kept, no storage probe (set a bound to change it)")
	return true, nil
}

// maxBytes is the bound object store bucket gets, its stream's
// configuration being cur (nil: not made yet). A fitted bound never
// lowers the bound a store already has: the server holds its reservation
// already, and a disk that filled since must not shrink a store under
// its objects.
func (p provisioner) maxBytes(bucket string, cur *jetstream.StreamConfig) int64 {
	b := *p.cfg.bound(bucket)
	if p.fitted[bucket] && cur != nil && cur.MaxBytes > b {
		return cur.MaxBytes
	}
	return b
}

// The probe streams: each coordinator's own (several may start at once on
// one server). A coordinator that fits its bounds by probing first makes
// a marker, AUTOCODER_STORAGE_PROBE_<id> (no bound: it reserves nothing),
// kept until its object stores are made (releaseProbing); its
// reservations are AUTOCODER_STORAGE_PROBE_<id>_R, each made empty and
// deleted at once. A coordinator that finds an older marker of another
// waits for it (awaitOlderProbes), then finds the stores made and keeps
// their bounds: two probing at once would each see the other's
// reservations and fit about half of what is free, for good
// (keepMadeBounds). One left behind by a coordinator that died holds its
// reservation, so a start first deletes those older than probeLeftAfter.
const (
	probeStreamPrefix  = "AUTOCODER_STORAGE_PROBE_"
	probeSubjectPrefix = "autocoder.storage-probe."
	probeLeftAfter     = time.Minute
	// probeAwait bounds the wait for another coordinator's probe: past
	// it, this one probes too (a refused store is then tried again while
	// the other's probe is live, mayPlaceLater).
	probeAwait = 5 * time.Second
	// probeCleanup bounds deleting a probe stream, which is done even
	// when the attempt's context has ended: a probe left behind holds its
	// reservation.
	probeCleanup = 5 * time.Second
)

// markProbing makes this coordinator's probe marker and returns its id.
// Without a marker (the server refused it) the probe goes on, unmarked:
// another coordinator does not wait for it, as before markers.
func (p provisioner) markProbing(ctx context.Context) string {
	id := rand.Text()
	_, err := p.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: probeStreamPrefix + id, Subjects: []string{probeSubjectPrefix + id}, Storage: p.storage(),
		Description: "autocoder: a coordinator fitting its object store bounds, deleted once they are made (storefit.go)",
	})
	if err != nil {
		p.cfg.Logger.Warn("storage probe not marked: a coordinator starting at the same time will not wait for it", "err", err)
	}
	return id // deleted by releaseProbing in any case: it may be made though the answer was lost
}

// releaseProbing deletes this coordinator's probe marker, if it made one.
func (p provisioner) releaseProbing(ctx context.Context) {
	if p.probeID != "" {
		p.deleteProbe(ctx, probeStreamPrefix+p.probeID)
	}
}

// awaitOlderProbes waits, up to probeAwait, while another coordinator's
// marker older than this one's is live: that coordinator probes and makes
// the stores first. It reports whether it waited.
func (p provisioner) awaitOlderProbes(ctx context.Context) (waited bool) {
	mine := probeStreamPrefix + p.probeID
	for deadline := time.Now().Add(probeAwait); time.Now().Before(deadline); waited = true {
		probes, err := p.probes(ctx)
		var self *jetstream.StreamInfo
		for _, info := range probes {
			if info.Config.Name == mine {
				self = info
			}
		}
		older := false
		for _, info := range probes {
			if self != nil && !p.own(info) && time.Since(info.Created) <= probeLeftAfter &&
				(info.Created.Before(self.Created) || info.Created.Equal(self.Created) && info.Config.Name < mine) {
				older = true
			}
		}
		if err != nil || !older {
			return waited
		}
		if !waited {
			p.cfg.Logger.Info("another coordinator is fitting the object store bounds: waiting for it", "up_to", probeAwait)
		}
		select {
		case <-ctx.Done():
			return true
		case <-time.After(100 * time.Millisecond):
		}
	}
	return waited
}

// probeStorage is how much storage the server can still reserve, found by
// reserving a throwaway stream: 0 when it reserves want (the defaults fit,
// or the server does not check reservations, as a cluster does at
// placement), else the largest bound it accepts, to within 1/32. Any
// error but a refusal to reserve ends the probe with 0: the defaults are
// then used, and a refusal of one of them is explained (explain).
func (p provisioner) probeStorage(ctx context.Context, want int64) int64 {
	name, subject := probeStreamPrefix+p.probeID+"_R", probeSubjectPrefix+p.probeID+".r"
	reserves := func(n int64) (bool, error) {
		_, err := p.js.CreateStream(ctx, jetstream.StreamConfig{
			Name: name, Subjects: []string{subject}, Storage: p.storage(), MaxBytes: n, Replicas: p.cfg.Replicas,
			Description: "autocoder: a coordinator's reservation probe, deleted at once (storefit.go)",
		})
		if boundRefusal(err) != notRefused { // stores.go
			return false, nil
		}
		if derr := p.deleteProbe(ctx, name); err == nil { // made, or perhaps made though the answer was lost
			err = derr
		}
		return err == nil, err
	}
	failed := func(err error) int64 {
		p.cfg.Logger.Warn("storage probe failed: the object stores get their default bounds", "err", err)
		return 0
	}
	ok, err := reserves(want)
	switch {
	case err != nil:
		return failed(err)
	case ok:
		return 0
	}
	lo, hi := int64(0), want // lo is reserved (0 trivially), hi refused
	for hi-lo > max(minStoreBound, hi/32) {
		mid := lo + (hi-lo)/2
		ok, err := reserves(mid)
		switch {
		case err != nil && lo > 0:
			p.cfg.Logger.Warn("storage probe stopped early: the bounds fit what it found", "err", err, "reservable", messages.FormatBytes(lo))
			return lo
		case err != nil:
			return failed(err)
		case ok:
			lo = mid
		default:
			hi = mid
		}
	}
	p.cfg.Logger.Info("the server reports no JetStream storage limit: found by reserving a probe", "reservable", messages.FormatBytes(lo))
	return max(lo, 1)
}

// deleteProbe deletes probe stream name (gone already is done), tried
// three times and, past ctx's end, for up to probeCleanup.
func (p provisioner) deleteProbe(ctx context.Context, name string) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeCleanup)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := p.js.DeleteStream(dctx, name)
		if err == nil || errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		if attempt == 3 || dctx.Err() != nil {
			p.cfg.Logger.Warn("storage probe not deleted: a start after a minute deletes it", "stream", name, "err", err)
			return err
		}
		select {
		case <-dctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// probing reports whether another coordinator's storage probe is live
// (younger than probeLeftAfter), or may be (the streams could not be
// listed): its reservation may be what a store was refused for.
func (p provisioner) probing(ctx context.Context) bool {
	probes, err := p.probes(ctx)
	if err != nil {
		return true
	}
	for _, info := range probes {
		if !p.own(info) && time.Since(info.Created) <= probeLeftAfter {
			return true
		}
	}
	return false
}

// own reports whether probe stream info is this coordinator's.
func (p provisioner) own(info *jetstream.StreamInfo) bool {
	return p.probeID != "" && strings.HasPrefix(info.Config.Name, probeStreamPrefix+p.probeID)
}

// deleteLeftProbes deletes the probe streams older than probeLeftAfter:
// left by coordinators that died mid-probe (a younger one may be another
// coordinator's, probing now).
func (p provisioner) deleteLeftProbes(ctx context.Context) {
	probes, _ := p.probes(ctx) // none listed: none deleted, the next start tries again
	for _, info := range probes {
		if time.Since(info.Created) > probeLeftAfter {
			if err := p.js.DeleteStream(ctx, info.Config.Name); err == nil {
				p.cfg.Logger.Info("deleted a storage probe left by a coordinator that stopped mid-probe", "stream", info.Config.Name)
			}
		}
	}
}

// probes are the storage probe streams on the server.
func (p provisioner) probes(ctx context.Context) ([]*jetstream.StreamInfo, error) {
	var out []*jetstream.StreamInfo
	list := p.js.ListStreams(ctx, jetstream.WithStreamListSubject(probeSubjectPrefix+">"))
	for info := range list.Info() {
		if strings.HasPrefix(info.Config.Name, probeStreamPrefix) {
			out = append(out, info)
		}
	}
	return out, list.Err()
}
