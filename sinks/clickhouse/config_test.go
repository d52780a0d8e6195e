package clickhouse

import (
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // substring; "" means valid
	}{
		{name: "zero value gets defaults", cfg: Config{}},
		{name: "explicit", cfg: Config{Addr: "ch.example:9440", Database: "skew_2", TTLDays: 7, Dialect: "modern"}},
		{name: "ipv6", cfg: Config{Addr: "[::1]:9000"}},
		{name: "no port", cfg: Config{Addr: "localhost"}, wantErr: "addr"},
		{name: "empty host", cfg: Config{Addr: ":9000"}, wantErr: "empty host"},
		{name: "bad port", cfg: Config{Addr: "h:99999"}, wantErr: "bad port"},
		{name: "database with dot", cfg: Config{Database: "a.b"}, wantErr: "database"},
		{name: "database with backtick", cfg: Config{Database: "a`b"}, wantErr: "database"},
		{name: "database starting with digit", cfg: Config{Database: "1db"}, wantErr: "database"},
		{name: "database too long", cfg: Config{Database: strings.Repeat("d", 65)}, wantErr: "database"},
		{name: "negative dial timeout", cfg: Config{DialTimeout: -time.Second}, wantErr: "dial timeout"},
		{name: "negative batch", cfg: Config{BatchMaxRows: -1}, wantErr: "batch max rows"},
		{name: "backoff inverted", cfg: Config{Retry: retry.Policy{MinBackoff: time.Second, MaxBackoff: time.Millisecond}}, wantErr: "min exceeds max"},
		{name: "negative ttl", cfg: Config{TTLDays: -1}, wantErr: "ttl days"},
		{name: "unknown dialect", cfg: Config{Dialect: "sqlite"}, wantErr: "dialect"},
		{name: "cluster", cfg: Config{Cluster: "skewlens-prod.eu_1"}},
		{name: "cluster with backtick", cfg: Config{Cluster: "c`x"}, wantErr: "cluster"},
		{name: "cluster with quote", cfg: Config{Cluster: "c'x"}, wantErr: "cluster"},
		{name: "cluster with space", cfg: Config{Cluster: "c x"}, wantErr: "cluster"},
		{name: "cluster too long", cfg: Config{Cluster: strings.Repeat("c", 129)}, wantErr: "cluster"},
		{name: "negative flush disables pacing", cfg: Config{FlushInterval: -1}},
		{name: "no retries", cfg: Config{Retry: retry.Policy{MaxRetries: 0, MinBackoff: time.Second}}},
		{name: "unlimited retries", cfg: Config{Retry: retry.Policy{MaxRetries: retry.Unlimited}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg.withDefaults() // as New sees it
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	// Validate only checks: the zero Config has no address.
	if err := (Config{}).Validate(); err == nil {
		t.Error("Validate accepted the zero Config")
	}
	cfg := Config{}.withDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg != DefaultConfig() {
		t.Errorf("zero fields filled with %+v, want DefaultConfig %+v", cfg, DefaultConfig())
	}
	want := Config{
		Addr: DefaultConfig().Addr, Database: DefaultConfig().Database, Username: "default",
		DialTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, BatchMaxRows: 50000,
		FlushInterval: time.Second, Retry: retry.Policy{MaxRetries: 10, MinBackoff: 100 * time.Millisecond,
			MaxBackoff: 10 * time.Second}, TTLDays: 30,
	}
	if cfg != want {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
}
