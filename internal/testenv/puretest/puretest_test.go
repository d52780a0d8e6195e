package puretest

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestImpurities checks the checker: each snippet breaks one rule, and
// the pure one breaks none.
func TestImpurities(t *testing.T) {
	allowed := Allowed{"net/url": true, "github.com/skewlens/skewlens/skew": true}
	tests := []struct {
		name, src, want string // want: a fragment of the one report; "" for none
	}{
		{"pure", `package p; import ("net/url"; "time"; "github.com/skewlens/skewlens/skew"); var _ = url.PathEscape; var _ = time.UnixMilli(0); var _ skew.Finding`, ""},
		{"os", `package p; import "os"; var _ = os.Args`, "imports os: I/O"},
		{"os/exec", `package p; import "os/exec"; var _ = exec.Command`, "imports os/exec"},
		{"slog", `package p; import "log/slog"; var _ = slog.Info`, "imports log/slog: logging"},
		{"net/http", `package p; import "net/http"; var _ = http.Get`, "imports net/http: network I/O"},
		{"sync", `package p; import "sync"; var _ sync.Mutex`, "imports sync"},
		{"math/rand/v2", `package p; import "math/rand/v2"; var _ = rand.N[int]`, "imports math/rand/v2: randomness"},
		{"prometheus", `package p; import "github.com/prometheus/client_golang/prometheus"; var _ = prometheus.NewRegistry`, "imports github.com/prometheus/client_golang/prometheus"},
		{"pipeline", `package p; import "github.com/skewlens/skewlens/internal/retry"; var _ = retry.Do`, "imports github.com/skewlens/skewlens/internal/retry"},
		{"clock", `package p; import "time"; var _ = time.Now()`, "reads the clock: time.Now"},
		{"renamed clock", `package p; import clk "time"; var _ = clk.Since`, "reads the clock: time.Since"},
		{"goroutine", `package p; func f() { go f() }`, "starts a goroutine"},
		{"select", `package p; func f(c chan int) { select { case <-c: } }`, "waits on channels"},
		{"send", `package p; func f(c chan int) { c <- 1 }`, "sends on a channel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", tt.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			got := Impurities(fset, f, allowed)
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("reported %q for pure code", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
				t.Errorf("reported %q, want one report containing %q", got, tt.want)
			}
		})
	}
}
