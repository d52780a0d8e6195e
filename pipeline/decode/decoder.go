package decode

import (
	"fmt"
	"unsafe"

	"github.com/skewlens/skewlens/skew"
)

// Format selects how Decode reads a line.
type Format uint8

const (
	// FormatAuto detects the format of every line on its own: a line whose
	// first non-blank byte is '{' is JSON (key sample or metric, by its
	// fields); otherwise the byte after the metric-name token decides:
	// '{' Prometheus, ',' InfluxDB, ' ' InfluxDB if the next token contains
	// '=' and Prometheus otherwise.
	FormatAuto Format = iota
	// FormatJSON reads JSON objects only, either shape: an object with a
	// "name" is a metric, one with a "key" (and no "name") a key sample.
	FormatJSON
	// FormatKeyJSON reads every line as a JSON key sample.
	FormatKeyJSON
	// FormatMetricJSON reads every line as a JSON metric.
	FormatMetricJSON
	// FormatInflux reads InfluxDB line protocol (Flink's InfluxdbReporter).
	FormatInflux
	// FormatPrometheus reads Prometheus text exposition (Flink's
	// PrometheusReporter).
	FormatPrometheus

	numFormats
)

var formatNames = [numFormats]string{"auto", "json", "key-json", "metric-json", "influx", "prometheus"}

// String returns the name ParseFormat accepts for f.
func (f Format) String() string {
	if f < numFormats {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat parses a --format flag value: "auto", "json", "influx" or
// "prometheus" (and, for completeness, "key-json" and "metric-json").
func ParseFormat(s string) (Format, error) {
	for i, n := range formatNames {
		if s == n {
			return Format(i), nil
		}
	}
	return FormatAuto, fmt.Errorf("unknown format %q (want auto, json, influx or prometheus)", s)
}

// MarshalText implements encoding.TextMarshaler. No command reads a Format
// from a flag or config file today (they take decode.ParseFormat's string);
// MarshalText and UnmarshalText are kept, tested, so that a Format can be
// a flag or JSON field value without a wrapper.
func (f Format) MarshalText() ([]byte, error) {
	if f >= numFormats {
		return nil, fmt.Errorf("invalid format %d", uint8(f))
	}
	return []byte(f.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (flag parsing).
func (f *Format) UnmarshalText(b []byte) error {
	v, err := ParseFormat(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// Kind says what Decode found on a line.
type Kind uint8

const (
	// KindNone: nothing to hand on: a blank line, a comment, or a metric
	// that skewlens does not use. Not an error.
	KindNone Kind = iota
	// KindKeySample: Decoder.Sample holds a key sample.
	KindKeySample
	// KindMetric: Decoder.Metric holds a metric observation.
	KindMetric
)

// String names the kind, for %v in messages (today only test failure
// messages).
func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindKeySample:
		return "key_sample"
	case KindMetric:
		return "metric"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Limits applied to decoded values. They are Flink's own limits
// (KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM): a parallelism or
// max parallelism above 32768, or a subtask index of 32768 or more, can
// not come from a real job.
const (
	MaxParallelism = 1 << 15
	maxSubtask     = MaxParallelism - 1
)

// Decoder decodes lines of any of the four skewlens input formats. The
// zero value decodes with FormatAuto; NewDecoder chooses the format. A
// Decoder is not safe for concurrent use: give every goroutine its own.
//
// After Decode returns KindKeySample, Sample holds the sample; after
// KindMetric, Metric holds the metric. The other field, and both fields
// after KindNone or an error, hold unspecified leftovers. Strings in Sample
// and Metric alias the decoded line or the Decoder's scratch memory: they
// are valid only until the next Decode call or until the line's bytes are
// modified or reused (with LineReader: until the next Next call). Copy
// them (strings.Clone) to keep them longer.
type Decoder struct {
	// DefaultTS, when > 0, is the timestamp (epoch ms) given to metric
	// lines that carry none, typically the Kafka message timestamp. Key
	// samples always need their own ts. A ScrapeTimeDirective line sets
	// it: the scrape time applies to the lines that follow, until the
	// next directive or until the caller sets DefaultTS again.
	DefaultTS int64

	Sample skew.KeySample
	Metric skew.Metric

	format  Format
	scratch []byte // unescaped strings of the current line
	js      jsonState
	// influxTags predicts the tag keys of Influx lines from those of the
	// lines before (see influxTagKeys).
	influxTags influxTagKeys
	// tags is the tag or label set of the last Influx or Prometheus line,
	// for the lines after it that repeat it (see tagCache).
	tags tagCache
}

// NewDecoder returns a Decoder for format f.
func NewDecoder(f Format) *Decoder {
	if f >= numFormats {
		f = FormatAuto
	}
	return &Decoder{format: f, scratch: make([]byte, 0, 256)}
}

// Format returns the format the Decoder was created for. Only tests call
// it; it is the Decoder's one read accessor and costs nothing to keep.
func (d *Decoder) Format() Format { return d.format }

// ScrapeTimeDirective begins the comment line that gives the time of a
// raw Prometheus scrape, which has no timestamps on its samples. Written
// before the scrape's samples, "# skewlens-scrape-time 1593004193363"
// (epoch ms) makes Decode set Decoder.DefaultTS, so that the metric lines
// after it without a timestamp take the scrape time; a timestamp on a
// line still wins.
const ScrapeTimeDirective = "# skewlens-scrape-time"

// Decode decodes one line, given without its trailing newline; a trailing
// '\r' (and any surrounding blanks) is tolerated. Blank lines and lines
// whose first non-blank byte is '#' return KindNone and no error, except
// a ScrapeTimeDirective whose time is not a positive integer: that is a
// bad_timestamp, and it clears DefaultTS, so that the samples of a scrape
// of unknown time are rejected rather than given another time. Every
// rejected line returns an *Error. Decode never keeps line after it
// returns, but the strings it stores in d.Sample / d.Metric alias it (see
// Decoder).
func (d *Decoder) Decode(line []byte) (Kind, error) {
	b := trimBlank(line)
	if len(b) == 0 {
		return KindNone, nil
	}
	if b[0] == '#' {
		if err := d.directive(b); err != nil {
			return KindNone, err
		}
		return KindNone, nil
	}
	d.scratch = d.scratch[:0]
	f := d.format
	nameEnd, nameEsc := -1, false
	if f == FormatAuto {
		f, nameEnd, nameEsc = detectAt(b)
	}
	var k Kind
	var err *Error
	switch f {
	case FormatInflux:
		k, err = d.decodeInflux(b, nameEnd, nameEsc)
	case FormatPrometheus:
		k, err = d.decodeProm(b)
	default:
		k, err = d.decodeJSON(b, f)
	}
	if err != nil {
		// Returning a nil *Error as error would make a non-nil interface.
		return KindNone, err
	}
	return k, nil
}

// directive applies the comment line b if it is a ScrapeTimeDirective:
// the directive, then blanks, then the time.
func (d *Decoder) directive(b []byte) *Error {
	n := len(ScrapeTimeDirective)
	if len(b) <= n || bytesToString(b[:n]) != ScrapeTimeDirective || (b[n] != ' ' && b[n] != '\t') {
		return nil
	}
	ts, ok := parseInt(bytesToString(trimBlank(b[n:])))
	if !ok || ts <= 0 {
		d.DefaultTS = 0
		return newErr(ReasonBadTimestamp, "", "skewlens-scrape-time must be a positive integer (epoch ms)")
	}
	d.DefaultTS = ts
	return nil
}

// detect picks the format of a non-blank, non-comment line.
func detect(b []byte) Format {
	f, _, _ := detectAt(b)
	return f
}

// detectAt is detect that also hands on what it learnt of an Influx line,
// so that decodeInflux does not scan the measurement again: when the
// metric-name token ends at an unescaped ',', before any '{', blank or
// tab, the token is exactly the line-protocol measurement, and nameEnd is
// its end and nameEsc whether it holds a backslash. Otherwise nameEnd is
// -1.
func detectAt(b []byte) (f Format, nameEnd int, nameEsc bool) {
	if b[0] == '{' {
		return FormatJSON, -1, false
	}
	i := 0
	esc := false
	for i < len(b) {
		i = findNameStop(b, i) // '\\', '{', ',', ' ' or '\t'
		if i >= len(b) {
			break
		}
		switch b[i] {
		case '\\':
			esc = true
			i += 2
			continue
		case '{':
			return FormatPrometheus, -1, false
		case ',':
			return FormatInflux, i, esc
		}
		// blank
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		for i < len(b) && b[i] != ' ' && b[i] != '\t' {
			switch b[i] {
			case '\\':
				i++
			case '=':
				return FormatInflux, -1, false
			}
			i++
		}
		return FormatPrometheus, -1, false
	}
	// A lone token: neither format; the Prometheus parser reports it.
	return FormatPrometheus, -1, false
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func trimBlank(b []byte) []byte {
	for len(b) > 0 && isBlank(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && isBlank(b[0]) {
		b = b[1:]
	}
	return b
}

// bytesToString returns a string sharing b's memory (zero copy). The
// caller guarantees b is not modified while the string is in use.
func bytesToString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Required-variable bookkeeping shared by the metric decoders.
func (d *Decoder) checkMetricVars(seen uint16, sub string) *Error {
	m := &d.Metric
	if seen&(1<<varJobID) == 0 {
		return newErr(ReasonMissingField, "job_id", "")
	}
	if m.JobID == "" {
		return newErr(ReasonBadField, "job_id", "must not be empty")
	}
	if m.Name.JobScoped() {
		m.TaskName = ""
		m.Subtask = -1
		return nil
	}
	if seen&(1<<varTaskName) == 0 {
		return newErr(ReasonMissingField, "task_name", "")
	}
	if m.TaskName == "" {
		return newErr(ReasonBadField, "task_name", "must not be empty")
	}
	if seen&(1<<varSubtask) == 0 {
		return newErr(ReasonMissingField, "subtask_index", "")
	}
	v, ok := parseInt(sub)
	if !ok || v < 0 || v > maxSubtask {
		return newErr(ReasonBadField, "subtask_index", "must be an integer in [0, 32767]")
	}
	m.Subtask = int32(v)
	return nil
}

// metricTS applies the DefaultTS fallback.
func (d *Decoder) defaultTS() (int64, *Error) {
	if d.DefaultTS > 0 {
		return d.DefaultTS, nil
	}
	return 0, newErr(ReasonMissingTimestamp, "", "no timestamp and no default")
}
