package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/skewlens/skewlens/pipeline/decode"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// Input is one named stream of records.
type Input struct {
	Name string
	R    io.Reader
}

// Stats describes a replay so far.
type Stats struct {
	Bytes   int64  // bytes of input consumed
	Lines   uint64 // lines read, including skipped and bad ones
	Skipped uint64 // blank lines, comments and unknown metrics
	Bad     decode.Counts
	Window  window.Counts
	// Truncated names the inputs that ended early, in the order noticed:
	// their stream stopped in the middle (a gzip file cut short), so
	// their records up to there were replayed and the rest is missing.
	Truncated []string
}

// ErrTruncated is returned (wrapped, naming the inputs) by Run when an
// input ended early; see Stats.Truncated.
var ErrTruncated = errors.New("input ended early")

// BadLine describes one line that could not be decoded.
type BadLine struct {
	Input string
	Line  int
	Err   *decode.Error
}

// Options tune a replay. The zero value is usable.
type Options struct {
	// Format forces one input format; the default detects it per line.
	Format decode.Format
	// MaxLine is the longest line accepted, in bytes (0: decode.DefaultMaxLine).
	MaxLine int
	// OnBad is called for every bad line (optional).
	OnBad func(BadLine)
	// OnProgress is called every ProgressLines lines (optional).
	OnProgress    func(Stats)
	ProgressLines uint64
}

// source is one input with its reader and the decoded record at its head.
type source struct {
	name string
	cr   *countingReader
	lr   *decode.LineReader
	dec  *decode.Decoder
	kind decode.Kind
	ts   int64
	done bool
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Run replays inputs through feeder and hands every finding to emit, in
// order. It returns when all inputs are exhausted (after flushing every
// window), when ctx is done, or when emit or a reader fails. The Stats
// count what was read up to then, whatever the error. An input that ends
// in the middle of its stream (io.ErrUnexpectedEOF: a truncated gzip
// file) counts as exhausted, so the others and the windows still play
// out; Run then returns an error wrapping ErrTruncated at the end.
func Run(ctx context.Context, inputs []Input, feeder *window.Feeder, opts Options, emit func(*skew.Finding) error) (st Stats, err error) {
	if opts.MaxLine <= 0 {
		opts.MaxLine = 1 << 20
	}
	if opts.ProgressLines == 0 {
		opts.ProgressLines = 1 << 20
	}
	srcs := make([]*source, len(inputs))
	for i, in := range inputs {
		cr := &countingReader{r: in.R}
		srcs[i] = &source{name: in.Name, cr: cr, lr: decode.NewLineReader(cr, opts.MaxLine), dec: decode.NewDecoder(opts.Format)}
	}
	// Whichever way Run returns, the summary counts what was read.
	defer func() { st.Bytes, st.Window = bytesRead(srcs), feeder.Counts() }()
	var findings []skew.Finding
	flush := func() error {
		for i := range findings {
			if err := emit(&findings[i]); err != nil {
				return err
			}
		}
		clear(findings)
		findings = findings[:0]
		return nil
	}
	// Prime every source with its first record.
	for _, s := range srcs {
		if err := advance(s, &st, &opts); err != nil {
			return st, err
		}
	}
	nextProgress := opts.ProgressLines
	for {
		// Pick the source whose head record is oldest; ties go to the
		// earlier input so the merge is deterministic.
		var cur *source
		for _, s := range srcs {
			if !s.done && (cur == nil || s.ts < cur.ts) {
				cur = s
			}
		}
		if cur == nil {
			break
		}
		switch cur.kind {
		case decode.KindKeySample:
			findings, _ = feeder.Sample(&cur.dec.Sample, findings)
		case decode.KindMetric:
			findings, _ = feeder.Metric(&cur.dec.Metric, findings)
		}
		if len(findings) > 0 {
			if err := flush(); err != nil {
				return st, err
			}
		}
		if err := advance(cur, &st, &opts); err != nil {
			return st, err
		}
		if st.Lines >= nextProgress {
			nextProgress += opts.ProgressLines
			if err := ctx.Err(); err != nil {
				return st, err
			}
			if opts.OnProgress != nil {
				st.Bytes, st.Window = bytesRead(srcs), feeder.Counts()
				opts.OnProgress(st)
			}
		}
	}
	findings = feeder.Flush(findings)
	if err := flush(); err != nil {
		return st, err
	}
	if len(st.Truncated) > 0 {
		return st, fmt.Errorf("%w: %s", ErrTruncated, strings.Join(st.Truncated, ", "))
	}
	return st, nil
}

func bytesRead(srcs []*source) int64 {
	var n int64
	for _, s := range srcs {
		n += s.cr.n
	}
	return n
}

// advance reads s's lines until it holds the next record or is exhausted.
func advance(s *source, st *Stats, opts *Options) error {
	for {
		line, n, err := s.lr.Next()
		if err == io.EOF {
			s.done = true
			return nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// The stream stopped mid-way (gzip says so; a plain file
			// cannot tell): what was read counts, the rest is missing.
			s.done = true
			st.Truncated = append(st.Truncated, s.name)
			return nil
		}
		if err != nil {
			var de *decode.Error
			if errors.As(err, &de) {
				st.Lines++
				st.Bad.Add(de.Reason)
				if opts.OnBad != nil {
					opts.OnBad(BadLine{Input: s.name, Line: n, Err: de})
				}
				continue
			}
			return fmt.Errorf("read %s: %w", s.name, err)
		}
		st.Lines++
		kind, err := s.dec.Decode(line)
		if err != nil {
			var de *decode.Error
			if !errors.As(err, &de) {
				de = &decode.Error{Reason: decode.ReasonBadLine, Msg: err.Error()}
			}
			st.Bad.Add(de.Reason)
			if opts.OnBad != nil {
				opts.OnBad(BadLine{Input: s.name, Line: n, Err: de})
			}
			continue
		}
		switch kind {
		case decode.KindKeySample:
			s.kind, s.ts = kind, s.dec.Sample.TS
			return nil
		case decode.KindMetric:
			s.kind, s.ts = kind, s.dec.Metric.TS
			return nil
		default:
			st.Skipped++
		}
	}
}
