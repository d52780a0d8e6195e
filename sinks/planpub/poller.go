package planpub

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/skewlens/skewlens/skew/plans"
)

// OverrideReader reads the operators' active overrides; the ClickHouse
// store's plan reader is one.
type OverrideReader interface {
	Overrides(ctx context.Context) ([]plans.Override, error)
}

// OverrideSetter takes a new set of overrides; *PlanObserver is one.
type OverrideSetter interface {
	SetOverrides(ctx context.Context, ovs []plans.Override) error
}

// OverridePoller reads the overrides every interval and hands them to an
// OverrideSetter when they changed, so that overrides made through the
// API (another process) reach the plan manager. Create it with
// NewOverridePoller and call Run once.
type OverridePoller struct {
	every time.Duration
	src   OverrideReader
	dst   OverrideSetter
	log   *slog.Logger
	// last is the set the setter has, by identity.
	last map[overrideID]time.Time
}

// overrideID identifies an override: its job, task, action and key. A
// change of one override has a later At (the store keeps the latest), so
// identity and At tell two sets apart.
type overrideID struct{ job, task, action, key string }

// OverrideDiff counts how a set of overrides differs from the previous
// one, by identity: new ones, ones with another At (changed), and ones
// gone (deleted).
type OverrideDiff struct {
	Added, Changed, Removed int
}

// Empty reports whether the sets are the same.
func (d OverrideDiff) Empty() bool { return d == OverrideDiff{} }

// NewOverridePoller returns a poller reading src every interval (it
// must be positive; Config.OverridePoll is the usual one) and handing
// changes to dst. initial is the set dst
// has already (read at start-up). log may be nil.
func NewOverridePoller(every time.Duration, src OverrideReader, dst OverrideSetter, initial []plans.Override, log *slog.Logger) (*OverridePoller, error) {
	if every <= 0 {
		return nil, errors.New("planpub: override poll interval must be positive")
	}
	if src == nil || dst == nil {
		return nil, errors.New("planpub: nil override reader or setter")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &OverridePoller{every: every, src: src, dst: dst, log: log, last: byID(initial)}, nil
}

// Run polls every interval until done is closed or ctx ends, then
// returns nil. A failed read is logged and tried again at the next tick
// (the poll is its own retry loop); a read that fails because ctx ended
// or done was closed meanwhile is the stop, logged at Debug only. It
// blocks; do not call it twice.
func (p *OverridePoller) Run(ctx context.Context, done <-chan struct{}) error {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := p.Poll(ctx); err != nil {
			if stopping(ctx, done) {
				// The read was cut short by the stop (Ctrl-C cancels ctx
				// while a poll is under way): not a failure.
				p.log.Debug("reading plan overrides stopped", "err", err)
				return nil
			}
			p.log.Warn("reading plan overrides failed; retrying", "in", p.every, "err", err)
		}
	}
}

// stopping reports whether ctx has ended or done is closed.
func stopping(ctx context.Context, done <-chan struct{}) bool {
	if ctx.Err() != nil {
		return true
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Poll reads the overrides once and hands them to the setter when they
// differ from the last set; it returns the difference. An error of the
// setter is logged, not returned: the set is handed over all the same
// (a planpub.PlanObserver keeps the changes it could not publish).
func (p *OverridePoller) Poll(ctx context.Context) (OverrideDiff, error) {
	ovs, err := p.src.Overrides(ctx)
	if err != nil {
		return OverrideDiff{}, err
	}
	cur := byID(ovs)
	d := diffOverrides(p.last, cur)
	if d.Empty() {
		return d, nil
	}
	if err := p.dst.SetOverrides(ctx, ovs); err != nil {
		p.log.Warn("plan overrides", "err", err)
	}
	p.log.Info("plan overrides changed", "overrides", len(ovs), "added", d.Added, "changed", d.Changed, "removed", d.Removed)
	p.last = cur
	return d, nil
}

// byID indexes overrides by identity.
func byID(ovs []plans.Override) map[overrideID]time.Time {
	m := make(map[overrideID]time.Time, len(ovs))
	for _, o := range ovs {
		m[overrideID{o.JobID, o.TaskName, o.Action, o.Key}] = o.At
	}
	return m
}

// diffOverrides counts the differences from old to cur.
func diffOverrides(old, cur map[overrideID]time.Time) OverrideDiff {
	var d OverrideDiff
	for id, at := range cur {
		prev, ok := old[id]
		switch {
		case !ok:
			d.Added++
		case !prev.Equal(at):
			d.Changed++
		}
	}
	for id := range old {
		if _, ok := cur[id]; !ok {
			d.Removed++
		}
	}
	return d
}
