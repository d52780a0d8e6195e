package app

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/skew/alert"
)

func TestHostLocal(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"http://127.0.0.1:8080", true},
		{"http://127.1.2.3:8080", true},
		{"http://localhost:8080", true},
		{"http://LocalHost", true},
		{"http://api.localhost:8080", true},
		{"http://[::1]:8080", true},
		{"http://:8080", true},
		{"http://0.0.0.0:8080", true},
		{"http://[::]:8080", true},
		{"http://%zz", true},
		{"http://10.0.0.5:8080", false},
		{"https://skewlens.example.com", false},
		{"http://[2001:db8::1]:8080", false},
	}
	for _, tt := range tests {
		if got := HostLocal(tt.url); got != tt.want {
			t.Errorf("HostLocal(%q) = %v, want %v", tt.url, got, tt.want)
		}
	}
}

// TestNoteSaltingURL: a start-up line names --salting-url when alerts
// would link to a loopback salting API; a warning when the alerts leave
// the process, an info line when they are only logged (make run).
func TestNoteSaltingURL(t *testing.T) {
	tests := []struct {
		name       string
		apiListen  string
		saltingURL string
		external   bool
		want       string // the level logged; "" none
	}{
		{"loopback, alerts to Alertmanager", "127.0.0.1:8080", "", true, "WARN"},
		{"all interfaces, alerts to Alertmanager", ":8080", "", true, "WARN"},
		{"loopback, alerts only logged", "127.0.0.1:8080", "", false, "INFO"},
		{"routable listen address", "10.0.0.5:8080", "", true, ""},
		{"--salting-url set", "127.0.0.1:8080", "https://skewlens.example.com", true, ""},
		{"no API, no link", "", "", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &RunConfig{Alerts: alert.Config{SaltingURL: tt.saltingURL}}
			c.APIListen = tt.apiListen
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, nil))
			c.noteSaltingURL(c.alertConfig().StateMachine.SaltingURL, tt.external, log)
			out := buf.String()
			if tt.want == "" {
				if out != "" {
					t.Fatalf("want no line, got %s", out)
				}
				return
			}
			if n := strings.Count(out, "\n"); n != 1 {
				t.Fatalf("want one line, got %d: %s", n, out)
			}
			if !strings.Contains(out, "level="+tt.want) || !strings.Contains(out, "--salting-url") || !strings.Contains(out, "salting_url=http://"+tt.apiListen) {
				t.Errorf("want a %s line naming --salting-url and the link, got %s", tt.want, out)
			}
		})
	}
}
