package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// callLog records the calls of the stages, in order, as "name:call".
type callLog struct {
	calls []string
	fail  map[string]error // by "name:call"
}

func (l *callLog) call(name, what string) error {
	c := name + ":" + what
	l.calls = append(l.calls, c)
	return l.fail[c]
}

type logStore struct {
	l *callLog
}

func (s logStore) Write(_ context.Context, _ uint64, fs []skew.Finding) error {
	return s.l.call("store", fmt.Sprintf("write %d", len(fs)))
}

type logObserver struct {
	name string
	l    *callLog
}

func (o logObserver) Observe(_ context.Context, _ uint64, fs []skew.Finding) error {
	ends := ""
	for i := range fs {
		ends += fmt.Sprint(fs[i].WindowEnd / 1000)
	}
	return o.l.call(o.name, "observe "+ends)
}

func (o logObserver) Advance(_ context.Context, now time.Time) error {
	return o.l.call(o.name, fmt.Sprint("advance ", now.UnixMilli()/1000))
}

func (o logObserver) Resume(context.Context, func(string) bool) error {
	return o.l.call(o.name, "resume")
}

// TestSinkChain: the store first, then each Observer in order; the first
// error stops the call.
func TestSinkChain(t *testing.T) {
	down := errors.New("down")
	batch := []skew.Finding{{WindowEnd: 1000}, {WindowEnd: 2000}, {WindowEnd: 1000}, {WindowEnd: 3000}}
	tests := []struct {
		name    string
		do      func(context.Context, *SinkChain) error
		fail    string
		want    []string
		wantErr bool
	}{
		{name: "write",
			do:   func(ctx context.Context, s *SinkChain) error { return s.Write(ctx, 1, batch) },
			want: []string{"store:write 4", "plans:observe 1213", "incidents:observe 1213"}},
		{name: "a failed store observes nothing", fail: "store:write 4", wantErr: true,
			do:   func(ctx context.Context, s *SinkChain) error { return s.Write(ctx, 1, batch) },
			want: []string{"store:write 4"}},
		{name: "a failed observer stops the write", fail: "plans:observe 1213", wantErr: true,
			do:   func(ctx context.Context, s *SinkChain) error { return s.Write(ctx, 1, batch) },
			want: []string{"store:write 4", "plans:observe 1213"}},
		{name: "write of nothing", do: func(ctx context.Context, s *SinkChain) error { return s.Write(ctx, 1, nil) },
			want: []string{"store:write 0", "plans:observe ", "incidents:observe "}},
		{name: "advance in order",
			do:   func(ctx context.Context, s *SinkChain) error { return s.Advance(ctx, time.UnixMilli(5000)) },
			want: []string{"plans:advance 5", "incidents:advance 5"}},
		{name: "a failed advance stops", fail: "plans:advance 5", wantErr: true,
			do:   func(ctx context.Context, s *SinkChain) error { return s.Advance(ctx, time.UnixMilli(5000)) },
			want: []string{"plans:advance 5"}},
		{name: "resume in order", do: func(ctx context.Context, s *SinkChain) error { return s.Resume(ctx, func(string) bool { return true }) },
			want: []string{"plans:resume", "incidents:resume"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &callLog{fail: map[string]error{tt.fail: down}}
			s := NewSinkChain(logStore{l}, logObserver{"plans", l}, logObserver{"incidents", l})
			err := tt.do(context.Background(), s)
			if (err != nil) != tt.wantErr || err != nil && !errors.Is(err, down) {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if !slices.Equal(l.calls, tt.want) {
				t.Fatalf("calls %q, want %q", l.calls, tt.want)
			}
		})
	}
}
