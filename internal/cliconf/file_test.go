package cliconf

import "testing"

func TestNearestKey(t *testing.T) {
	known := []string{"alerts_topic", "brokers", "clickhouse_addr", "group", "topics", "window"}
	tests := []struct{ in, want string }{
		{"broker", "brokers"},
		{"Brokers", "brokers"},
		{"clickhouse-addr", "clickhouse_addr"},
		{"clickhouseAddr", "clickhouse_addr"},
		{"grop", "group"},
		{"topic", "topics"},
		{"windows", "window"},
		{"alert_topic", "alerts_topic"},
		{"x", ""},
		{"database_name", ""},
	}
	for _, tt := range tests {
		if got := nearestKey(tt.in, known); got != tt.want {
			t.Errorf("nearestKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
