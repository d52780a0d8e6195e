package simulate

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// formatName and namingName turn the internal format and naming numbers
// back into their configuration names.
func formatName(f int) string {
	return [3]string{FormatJSON, FormatInflux, FormatPrometheus}[f]
}

func namingName(n int) string { return [2]string{NamingLegacy, NamingCurrent}[n] }

// Metric ids, in emission order.
const (
	mInQ = iota
	mOutQ
	mInPool
	mOutPool
	mInFloat
	mInExcl
	mBusy
	mBP
	mIdle
	mRecIn
	mRecInPS
	mRecOut
	mRecOutPS
	mAlign
	mStartDelay
	mLastCk
	mFailedCk
	mDoneCk // Config.CheckpointDetail only, as mCkSize
	mCkSize
	numMetrics
)

const (
	legacyBuf  = "taskmanager_job_task_buffers_"
	currentIn  = "taskmanager_job_task_Shuffle_Netty_Input_Buffers_"
	currentOut = "taskmanager_job_task_Shuffle_Netty_Output_Buffers_"
	taskScope  = "taskmanager_job_task_"
	jobScope   = "jobmanager_job_"
	promPrefix = "flink_"
)

// nameTable holds the full metric names per naming generation and metric
// id, rendered once per Generator: names[naming][id] and prom[naming][id].
type nameTable struct {
	names, prom [2][numMetrics]string
}

func newNameTable() *nameTable {
	nt := &nameTable{}
	short := [numMetrics]string{
		"inputQueueLength", "outputQueueLength", "inPoolUsage", "outPoolUsage",
		"inputFloatingBuffersUsage", "inputExclusiveBuffersUsage",
		"busyTimeMsPerSecond", "backPressuredTimeMsPerSecond", "idleTimeMsPerSecond",
		"numRecordsIn", "numRecordsInPerSecond", "numRecordsOut", "numRecordsOutPerSecond",
		"checkpointAlignmentTime", "checkpointStartDelayNanos",
		"lastCheckpointDuration", "numberOfFailedCheckpoints",
		"numberOfCompletedCheckpoints", "lastCheckpointSize",
	}
	for n := range 2 {
		for id := range numMetrics {
			var name string
			switch {
			case id <= mInExcl && n == 0:
				name = legacyBuf + short[id]
			case id == mOutQ || id == mOutPool:
				name = currentOut + short[id]
			case id <= mInExcl:
				name = currentIn + short[id]
			case id >= mLastCk:
				name = jobScope + short[id]
			default:
				name = taskScope + short[id]
			}
			nt.names[n][id] = name
			nt.prom[n][id] = promPrefix + name
		}
	}
	return nt
}

// tagSet holds the pre-rendered tags of one reporting scope in each format.
type tagSet struct {
	json   []byte // ,"host":"..",...  (after "time_stamp")
	influx []byte // ,host=..,...      (after the measurement)
	prom   []byte // {host="..",...}
}

// subtaskTags renders the tags of one subtask in the format its
// TaskManager reports in (0 json, 1 influx, 2 prometheus) only: a fleet
// holds 100k of them.
func subtaskTags(format int, host, tmID, jobID, jobName, taskID, taskName, attemptID string, idx int) tagSet {
	sub := strconv.Itoa(idx)
	var t tagSet
	// Influx tags and Prometheus labels are sorted by key, as Flink's
	// reporters (and InfluxDB) order them.
	switch format {
	case 1:
		in := t.influx
		for _, kv := range [][2]string{
			{"host", host}, {"job_id", jobID}, {"job_name", jobName}, {"subtask_index", sub},
			{"task_attempt_id", attemptID}, {"task_attempt_num", "0"}, {"task_id", taskID},
			{"task_name", taskName}, {"tm_id", tmID},
		} {
			in = append(in, ',')
			in = append(in, kv[0]...)
			in = append(in, '=')
			in = appendInfluxTag(in, kv[1])
		}
		t.influx = in
		return t
	case 2:
		t.prom = appendPromLabels(nil, [][2]string{
			{"host", host}, {"job_id", jobID}, {"job_name", jobName}, {"subtask_index", sub},
			{"task_attempt_id", attemptID}, {"task_name", taskName}, {"tm_id", tmID},
		})
		return t
	}
	j := t.json
	for _, kv := range [][2]string{
		{"host", host}, {"tm_id", tmID}, {"job_id", jobID}, {"job_name", jobName},
		{"task_id", taskID}, {"task_name", taskName}, {"task_attempt_id", attemptID},
		{"task_attempt_num", "0"}, {"subtask_index", sub},
	} {
		j = append(j, ',')
		j = appendJSONString(j, kv[0])
		j = append(j, ':')
		j = appendJSONString(j, kv[1])
	}
	t.json = j
	return t
}

func jobTags(host, jobID, jobName string) tagSet {
	var t tagSet
	kvs := [][2]string{{"host", host}, {"job_id", jobID}, {"job_name", jobName}}
	for _, kv := range kvs {
		t.json = append(t.json, ',')
		t.json = appendJSONString(t.json, kv[0])
		t.json = append(t.json, ':')
		t.json = appendJSONString(t.json, kv[1])
		t.influx = append(t.influx, ',')
		t.influx = append(t.influx, kv[0]...)
		t.influx = append(t.influx, '=')
		t.influx = appendInfluxTag(t.influx, kv[1])
	}
	t.prom = appendPromLabels(nil, kvs)
	return t
}

func appendPromLabels(dst []byte, kvs [][2]string) []byte {
	dst = append(dst, '{')
	for i, kv := range kvs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, kv[0]...)
		dst = append(dst, '=', '"')
		for j := 0; j < len(kv[1]); j++ {
			switch c := kv[1][j]; c {
			case '\\':
				dst = append(dst, '\\', '\\')
			case '"':
				dst = append(dst, '\\', '"')
			case '\n':
				dst = append(dst, '\\', 'n')
			default:
				dst = append(dst, c)
			}
		}
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

// appendInfluxTag escapes a tag value for the influx line protocol.
func appendInfluxTag(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ',', '=', ' ':
			dst = append(dst, '\\', c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal (RFC 8259): quotes,
// backslashes and control characters escaped, invalid UTF-8 replaced by
// U+FFFD, U+2028/U+2029 escaped as encoding/json does.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendNum appends a finite float in plain decimal notation, always with a
// decimal point (1 -> 1.0), as Java's reporters print doubles and floats.
// bits is 32 for Flink Float gauges, 64 otherwise.
func appendNum(dst []byte, v float64, bits int) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, v, 'f', -1, bits)
	for _, c := range dst[n:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, '.', '0')
}

// Value kinds.
const (
	vInt     = iota // Gauge<Long|Integer>
	vF32            // Gauge<Float>
	vF64            // Gauge<Double>
	vCounter        // Counter
	vMeter          // Meter
)

type value struct {
	kind int
	i    int64
	f    float64
}

func (nt *nameTable) appendMetric(dst []byte, format, naming, id int, tags *tagSet, ts int64, v value) []byte {
	switch format {
	case 1: // influx line protocol
		dst = append(dst, nt.names[naming][id]...)
		dst = append(dst, tags.influx...)
		dst = append(dst, ' ')
		switch v.kind {
		case vInt:
			dst = append(dst, "value="...)
			dst = strconv.AppendInt(dst, v.i, 10)
			dst = append(dst, 'i')
		case vF32:
			dst = append(dst, "value="...)
			dst = appendNum(dst, v.f, 32)
		case vF64:
			dst = append(dst, "value="...)
			dst = appendNum(dst, v.f, 64)
		case vCounter:
			dst = append(dst, "count="...)
			dst = strconv.AppendInt(dst, v.i, 10)
			dst = append(dst, 'i')
		case vMeter:
			dst = append(dst, "count="...)
			dst = strconv.AppendInt(dst, v.i, 10)
			dst = append(dst, "i,rate="...)
			dst = appendNum(dst, v.f, 64)
		}
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, ts, 10)
		return append(dst, "000000\n"...)
	case 2: // Prometheus text exposition, with timestamp
		dst = append(dst, nt.prom[naming][id]...)
		dst = append(dst, tags.prom...)
		dst = append(dst, ' ')
		switch v.kind {
		case vInt, vCounter:
			dst = strconv.AppendInt(dst, v.i, 10)
			dst = append(dst, '.', '0')
		case vF32:
			dst = appendNum(dst, v.f, 32)
		case vF64, vMeter: // a Meter is exported as its rate
			dst = appendNum(dst, v.f, 64)
		}
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, ts, 10)
		return append(dst, '\n')
	}
	dst = append(dst, `{"name":"`...)
	dst = append(dst, nt.names[naming][id]...)
	dst = append(dst, `","time_stamp":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, tags.json...)
	dst = append(dst, `,"value":`...)
	switch v.kind {
	case vInt, vCounter:
		dst = strconv.AppendInt(dst, v.i, 10)
	case vF32:
		dst = appendNum(dst, v.f, 32)
	case vF64:
		dst = appendNum(dst, v.f, 64)
	case vMeter:
		dst = append(dst, `{"count":`...)
		dst = strconv.AppendInt(dst, v.i, 10)
		dst = append(dst, `,"rate":`...)
		dst = appendNum(dst, v.f, 64)
		dst = append(dst, '}')
	}
	return append(dst, '}', '\n')
}

// appendMetrics writes every subtask's metrics and the job's checkpoint
// metrics for the interval ending at t1.
func (g *Generator) appendMetrics(dst []byte, t1 int64) []byte {
	n := len(g.subs)
	for i := range g.subs {
		s := &g.subs[i]
		tm := &g.tms[s.tm]
		ts := t1 - 1 - tm.jitterMs
		f, nm, tags := tm.format, tm.naming, &s.tags

		// Buffers.
		var inQ, outQ int64
		var inPool, outPool, inFloat, inExcl float64
		busyFrac := 0.0
		if g.winT > 0 {
			busyFrac = g.busyAcc[i] / g.winT
		}
		if s.task != tSource {
			inQ, inPool, inFloat, inExcl = g.inputGauges(i, busyFrac)
		}
		if !g.isSink(s.task) {
			outQ, outPool = g.outputGauges(i)
		}
		dst = g.names.appendMetric(dst, f, nm, mInQ, tags, ts, value{kind: vInt, i: inQ})
		dst = g.names.appendMetric(dst, f, nm, mOutQ, tags, ts, value{kind: vInt, i: outQ})
		dst = g.names.appendMetric(dst, f, nm, mInPool, tags, ts, value{kind: vF32, f: inPool})
		dst = g.names.appendMetric(dst, f, nm, mOutPool, tags, ts, value{kind: vF32, f: outPool})
		dst = g.names.appendMetric(dst, f, nm, mInFloat, tags, ts, value{kind: vF32, f: inFloat})
		dst = g.names.appendMetric(dst, f, nm, mInExcl, tags, ts, value{kind: vF32, f: inExcl})

		// Task IO time split.
		busyMs, bpMs, idleMs := g.timeSplit(i, busyFrac)
		dst = g.names.appendMetric(dst, f, nm, mBusy, tags, ts, value{kind: vF64, f: float64(busyMs)})
		dst = g.names.appendMetric(dst, f, nm, mBP, tags, ts, value{kind: vInt, i: bpMs})
		dst = g.names.appendMetric(dst, f, nm, mIdle, tags, ts, value{kind: vInt, i: idleMs})

		// Records.
		in, out := g.cntIn[i], g.cntOut[i]
		inRate := (in - g.countAt(i, t1-meterSpanMs)) / (meterSpanMs / 1000)
		outRate := (out - g.countAt(n+i, t1-meterSpanMs)) / (meterSpanMs / 1000)
		dst = g.names.appendMetric(dst, f, nm, mRecIn, tags, ts, value{kind: vCounter, i: int64(in)})
		dst = g.names.appendMetric(dst, f, nm, mRecInPS, tags, ts, value{kind: vMeter, i: int64(in), f: inRate})
		dst = g.names.appendMetric(dst, f, nm, mRecOut, tags, ts, value{kind: vCounter, i: int64(out)})
		dst = g.names.appendMetric(dst, f, nm, mRecOutPS, tags, ts, value{kind: vMeter, i: int64(out), f: outRate})

		// Checkpointing.
		dst = g.names.appendMetric(dst, f, nm, mAlign, tags, ts, value{kind: vInt, i: g.ckAlignNs[i]})
		dst = g.names.appendMetric(dst, f, nm, mStartDelay, tags, ts, value{kind: vInt, i: g.ckStartNs[i]})
	}
	ts := t1 - 1
	dst = g.names.appendMetric(dst, g.jm.format, g.jm.naming, mLastCk, &g.jmTags, ts, value{kind: vInt, i: g.lastCkDur})
	dst = g.names.appendMetric(dst, g.jm.format, g.jm.naming, mFailedCk, &g.jmTags, ts, value{kind: vInt, i: g.failedCk})
	if g.cfg.CheckpointDetail {
		dst = g.names.appendMetric(dst, g.jm.format, g.jm.naming, mDoneCk, &g.jmTags, ts, value{kind: vInt, i: g.doneCk})
		dst = g.names.appendMetric(dst, g.jm.format, g.jm.naming, mCkSize, &g.jmTags, ts, value{kind: vInt, i: g.ckSize})
	}
	return dst
}

// inputGauges derives the input-gate gauges of receiving subtask i from its
// fluid queue (full buffers flat-line at the gate's capacity) plus the
// small random queue a busy-but-coping subtask has.
func (g *Generator) inputGauges(i int, rho float64) (q int64, pool, floating, exclusive float64) {
	s := &g.subs[i]
	c := g.par[upstream(s.task)]
	gate := exclusiveBufs*c + floatingBufs
	rpb := recsPerBuf(wideRecBytes)
	if s.task != tKeyed {
		rpb = recsPerBuf(narrowRecBytes)
	}
	used := min(float64(gate), g.F[i]/rpb)
	noise := float64(gate)
	if rho < 0.999 {
		noise = rho * rho / (1 - rho) * g.qNoise[i]
	}
	q = int64(min(float64(gate), max(math.Round(used), math.Floor(noise))))
	pool = float64(q) / float64(gate)
	exclusive = min(1, float64(q)/float64(exclusiveBufs*c))
	floating = min(1, max(0, float64(q)-float64(exclusiveBufs*c))/floatingBufs)
	return q, pool, floating, exclusive
}

// outputGauges derives the output-pool gauges of sending subtask i from the
// backlog its receivers' full gates leave in its subpartitions.
func (g *Generator) outputGauges(i int) (q int64, pool float64) {
	s := &g.subs[i]
	rt := s.task + 1
	n := g.par[rt]
	senders := g.par[s.task]
	gate := float64(exclusiveBufs*senders + floatingBufs)
	rpb := recsPerBuf(wideRecBytes)
	if rt != tKeyed {
		rpb = recsPerBuf(narrowRecBytes)
	}
	nB := 0
	for r := range n {
		if g.F[g.off[rt]+r]/rpb > gate {
			nB++
		}
	}
	ch := chanCap(n, nB)
	var backlog float64
	for r := range n {
		backlog += min(ch, max(0, g.F[g.off[rt]+r]/rpb-gate)/float64(senders))
	}
	size := float64(exclusiveBufs*n + floatingBufs)
	partial := min(float64(n), 1+0.25*float64(n)*g.qNoise[i])
	q = int64(min(size, math.Round(backlog)))
	pool = min(1, (backlog+partial)/size)
	return q, pool
}

// timeSplit turns the accumulated busy and back-pressured time into Flink's
// three TimerGauges (ms per second; busy = 1000 - idle - backPressured).
func (g *Generator) timeSplit(i int, busy float64) (busyMs, bpMs, idleMs int64) {
	bp := 0.0
	if g.winT > 0 {
		bp = g.bpAcc[i] / g.winT
	}
	if busy >= 0.99 {
		idleMs = int64(g.idleSat[i])
		return 1000 - idleMs, 0, idleMs
	}
	idle := max(0, 1-busy-bp) + bp*g.eps[i]
	bp *= 1 - g.eps[i]
	bpMs = int64(math.Round(1000 * bp))
	idleMs = min(1000-bpMs, int64(math.Round(1000*idle)))
	return 1000 - bpMs - idleMs, bpMs, idleMs
}

// appendSamples writes the interval's key samples: n records drawn from
// what the keyed subtasks actually processed, step by step.
func (g *Generator) appendSamples(dst []byte, t1 int64, processed float64) []byte {
	cfg := &g.cfg
	n := min(cfg.SamplesPerInterval, int(processed))
	var total float64
	for _, s := range g.steps {
		total += s.tot
	}
	if n <= 0 || total <= 0 {
		return dst
	}
	head := make([]byte, 0, 160)
	head = append(head, `,"job_id":`...)
	head = appendJSONString(head, g.jobID)
	head = append(head, `,"job_name":`...)
	head = appendJSONString(head, cfg.JobName)
	head = append(head, `,"task_name":`...)
	head = appendJSONString(head, KeyedTaskName)
	head = append(head, `,"key":`...)
	mid := make([]byte, 0, 128)
	mid = append(mid, `,"weight":1,"sample_rate":`...)
	// Samplers are configured with a rate such as 0.01, not a full-precision
	// ratio, so the rate is written with 4 significant digits.
	mid = strconv.AppendFloat(mid, float64(n)/processed, 'g', 4, 64)
	mid = append(mid, `,"parallelism":`...)
	mid = strconv.AppendInt(mid, int64(g.par[tKeyed]), 10)
	if cfg.MaxParallelism != 0 {
		mid = append(mid, `,"max_parallelism":`...)
		mid = strconv.AppendInt(mid, int64(cfg.MaxParallelism), 10)
	}
	if cfg.OmitSubtask {
		mid = append(mid, '}', '\n')
	} else {
		mid = append(mid, `,"subtask_index":`...)
	}
	P := g.par[tKeyed]
	r := g.rs
	var cumTot float64
	emitted := 0
	var lastBkt int64 = -1
	var bk *bucketKey
	for si, st := range g.steps {
		cumTot += st.tot
		k := int(math.Round(float64(n)*cumTot/total)) - emitted
		if k <= 0 {
			continue
		}
		emitted += k
		stepP := g.stepP[si*P : (si+1)*P]
		var c float64
		for j, p := range stepP {
			c += p
			g.cum[j] = c
		}
		span := st.b - st.a
		for range k {
			// Subtask by processed records, then a key from its stream.
			u := r.Float64() * c
			lo, hi := 0, P-1
			for lo < hi {
				m := (lo + hi) >> 1
				if g.cum[m] > u {
					hi = m
				} else {
					lo = m + 1
				}
			}
			j := lo
			ts := int64(st.a + r.Float64()*span)
			if ts >= t1 {
				ts = t1 - 1
			}
			dst = append(dst, `{"ts":`...)
			dst = strconv.AppendInt(dst, ts, 10)
			dst = append(dst, head...)
			sub := j
			if j == st.hs && r.Float64() < st.hf {
				if g.hotKind == 1 {
					dst = append(dst, g.fixedHotKey...)
				} else {
					if b := floorBucket(ts); b != lastBkt || bk == nil {
						lastBkt, bk = b, g.bucketKey(b)
					}
					dst = append(dst, bk.key...)
					sub = bk.sub
				}
			} else {
				lo, hi := g.keyOff[j], g.keyOff[j+1]
				idx := lo + int32(r.IntN(int(hi-lo)))
				if r.Float64() >= g.aliasP[idx] {
					idx = lo + g.aliasI[idx]
				}
				dst = append(dst, `"user`...)
				dst = strconv.AppendInt(dst, int64(g.keyIDs[idx]), 10)
				dst = append(dst, '"')
			}
			dst = append(dst, mid...)
			if !cfg.OmitSubtask {
				dst = strconv.AppendInt(dst, int64(sub), 10)
				dst = append(dst, '}', '\n')
			}
		}
	}
	return dst
}
