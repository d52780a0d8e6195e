package kafkaclient

import (
	"strings"
	"testing"
)

func TestCheckBroker(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"kafka-1:9092", ""},
		{"127.0.0.1:39092", ""},
		{"[::1]:9092", ""},
		{"kafka1", `"kafka1" has no port: want HOST:PORT, e.g. kafka1:9092`},
		{"[::1]", `"[::1]" has no port: want HOST:PORT, e.g. [::1]:9092`},
		{"kafka1:", `port "" is not a number`},
		{"kafka1:abc", `port "abc" is not a number`},
		{"kafka1:0", `port "0" is not a number in 1..65535`},
		{"kafka1:70000", `port "70000" is not a number in 1..65535`},
		{":9092", "has no host"},
		{"kafka://kafka1:9092", "want HOST:PORT"},
		{"", "empty address"},
	}
	for _, tt := range tests {
		err := CheckBroker(tt.addr)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckBroker(%q) = %v, want nil", tt.addr, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckBroker(%q) = %v, want %q", tt.addr, err, tt.want)
		}
	}
}
