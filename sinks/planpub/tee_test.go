package planpub

import (
	"context"
	"errors"
	"testing"

	"github.com/skewlens/skewlens/skew/plans"
)

func TestTeeStopsAtFirstError(t *testing.T) {
	var calls []string
	rec := func(name string, err error) ChangePublisher {
		return PublisherFunc(func(_ context.Context, cs []plans.Change) error {
			calls = append(calls, name)
			return err
		})
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		ps        []ChangePublisher
		wantCalls string
		wantErr   error
	}{
		{"all ok", []ChangePublisher{rec("a", nil), rec("b", nil)}, "ab", nil},
		{"first fails", []ChangePublisher{rec("a", boom), rec("b", nil)}, "a", boom},
		{"second fails", []ChangePublisher{rec("a", nil), rec("b", boom)}, "ab", boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls = nil
			err := Tee(tc.ps...).Publish(context.Background(), []plans.Change{{JobID: "j", TaskName: "t", Retired: true}})
			got := ""
			for _, c := range calls {
				got += c
			}
			if got != tc.wantCalls || !errors.Is(err, tc.wantErr) {
				t.Fatalf("calls %q err %v, want %q %v", got, err, tc.wantCalls, tc.wantErr)
			}
		})
	}
}
