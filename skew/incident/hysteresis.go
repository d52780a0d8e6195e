package incident

import "time"

// Hysteresis is the one rule that makes consecutive findings of a
// condition one incident, and when its alert fires: the condition has
// lasted once For has passed from the start of its first window to the
// end of its latest one, and it is over once no finding of it arrived for
// ResolveAfter. Times are event time in epoch milliseconds.
type Hysteresis struct {
	// For is how long a condition must last before its alert fires
	// (Change.Lasted); its default is two 10 s windows. 0 or negative
	// fires on the first finding.
	For time.Duration `name:"alert-for" default:"20s" group:"Alerts" help:"How long (event time) an incident must last before its alert fires."`
	// ResolveAfter closes an incident once no finding of its condition
	// arrived for this long. Shorter gaps neither close it nor reset it,
	// so a flapping condition gives one incident and one alert. It must
	// exceed the interval at which the engine reports a lasting condition
	// (the metric reporting interval when that is longer than the
	// window).
	ResolveAfter time.Duration `name:"alert-resolve-after" default:"30s" range:"(0s,]" group:"Alerts" help:"Close an incident, and resolve its alert, after no finding of it for this long (hysteresis)."`
}

// Lasted reports whether a condition seen from start to lastSeen has
// lasted For (always, when For is 0 or negative).
func (h Hysteresis) Lasted(start, lastSeen int64) bool {
	return h.For <= 0 || time.Duration(lastSeen-start)*time.Millisecond >= h.For
}

// Over reports whether a condition last seen at lastSeen is over at now:
// it has been absent for ResolveAfter.
func (h Hysteresis) Over(lastSeen, now int64) bool {
	return now-lastSeen >= h.ResolveAfter.Milliseconds()
}

// OverAt returns the event time at which a condition last seen at
// lastSeen is over if nothing more is seen: the event time of its
// closing, however late it is noticed.
func (h Hysteresis) OverAt(lastSeen int64) int64 {
	return lastSeen + h.ResolveAfter.Milliseconds()
}
