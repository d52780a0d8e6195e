package top

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/sinks/topstore"
)

func TestConfigValidate(t *testing.T) {
	defaults := Config{Refresh: 2 * time.Second, MaxRows: 10, Windows: topstore.DefaultWindows,
		Lookback: topstore.DefaultLookback, Timeout: 10 * time.Second, Color: ColorAuto,
		KeyWidth: 40, NameWidth: 32, SummaryWidth: 80}
	tests := []struct {
		name    string
		cfg     Config
		want    *Config // the config New uses (defaults filled in), when valid
		wantErr []string
	}{
		{name: "zero value gets the defaults", want: &defaults},
		{
			name: "explicit values kept",
			cfg: Config{Refresh: 5 * time.Second, Jobs: []string{"a"}, MaxRows: 3, Windows: 1, Lookback: time.Minute,
				Timeout: time.Second, Color: ColorNever, Once: true, KeyWidth: 8, NameWidth: 9, SummaryWidth: 200},
			want: &Config{Refresh: 5 * time.Second, Jobs: []string{"a"}, MaxRows: 3, Windows: 1, Lookback: time.Minute,
				Timeout: time.Second, Color: ColorNever, Once: true, KeyWidth: 8, NameWidth: 9, SummaryWidth: 200},
		},
		{name: "refresh too short", cfg: Config{Refresh: time.Millisecond}, wantErr: []string{"refresh 1ms"}},
		{name: "negative refresh", cfg: Config{Refresh: -time.Second}, wantErr: []string{"refresh -1s"}},
		{name: "rows out of range", cfg: Config{MaxRows: 1001}, wantErr: []string{"rows 1001"}},
		{name: "negative windows", cfg: Config{Windows: -1}, wantErr: []string{"windows -1"}},
		{name: "negative lookback and timeout", cfg: Config{Lookback: -1, Timeout: -1}, wantErr: []string{"lookback", "timeout"}},
		{name: "unknown color", cfg: Config{Color: "yes"}, wantErr: []string{`color "yes"`}},
		{name: "widths out of range", cfg: Config{KeyWidth: 3, NameWidth: -1, SummaryWidth: MaxWidth + 1},
			wantErr: []string{"key width 3", "name width -1", "summary width 10001"}},
		{name: "width of a terminal kept", cfg: Config{Width: 120},
			want: func() *Config { c := defaults; c.Width = 120; return &c }()},
		{name: "width too narrow", cfg: Config{Width: minFrameWidth - 1}, wantErr: []string{"width 19"}},
		{name: "negative width", cfg: Config{Width: -80}, wantErr: []string{"width -80"}},
		{name: "empty job id", cfg: Config{Jobs: []string{"a", ""}}, wantErr: []string{"jobs[1]: empty job id"}},
	}
	if !reflect.DeepEqual(DefaultConfig(), defaults) {
		t.Errorf("DefaultConfig() = %+v, want %+v", DefaultConfig(), defaults)
	}
	// Validate only checks: the zero Config has no refresh and no widths.
	if err := (Config{}).Validate(); err == nil {
		t.Error("Validate accepted the zero Config")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cfg
			cfg := tc.cfg.withDefaults()
			if !reflect.DeepEqual(before, tc.cfg) {
				t.Fatal("withDefaults changed its receiver")
			}
			err := cfg.Validate()
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatal("Validate accepted the config")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg, *tc.want) {
				t.Errorf("with defaults: %+v, want %+v", cfg, *tc.want)
			}
			// Filling in defaults is idempotent, and Validate only checks.
			again := cfg.withDefaults()
			if err := again.Validate(); err != nil || !reflect.DeepEqual(again, cfg) {
				t.Errorf("second pass: %v, %+v", err, again)
			}
		})
	}
}

// TestConfigSettings: the tags of Config are well formed, and its
// defaults valid.
func TestConfigSettings(t *testing.T) {
	if _, err := knob.Settings(Config{}); err != nil {
		t.Fatal(err)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
