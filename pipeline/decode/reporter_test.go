package decode

import (
	"os"
	"regexp"
	"testing"

	"github.com/skewlens/skewlens/skew"
)

// TestReporterDefaultMetrics checks the Flink-side reporter's default
// metric list (SkewlensReporter.DEFAULT_METRICS, Java) against the names
// this package decodes, both ways: the reporter sends only what skewlens
// reads, and every metric skewlens reads is sent by default. The list is
// written in Java, so it is read from the source.
func TestReporterDefaultMetrics(t *testing.T) {
	const src = "../../deploy/flink/reporter/src/main/java/io/github/skewlens/flink/reporter/SkewlensReporter.java"
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)DEFAULT_METRICS = List\.of\((.*?)\);`).FindSubmatch(b)
	if body == nil {
		t.Fatalf("%s: no DEFAULT_METRICS = List.of(...)", src)
	}
	sent := map[skew.MetricName]bool{}
	for _, m := range regexp.MustCompile(`"([^"]+)"`).FindAllSubmatch(body[1], -1) {
		name := string(m[1])
		got := LookupMetric(name)
		if got == skew.MetricUnknown {
			t.Errorf("the reporter sends %s by default, which the decoder does not read", name)
		}
		sent[got] = true
	}
	for m := skew.MetricName(1); m.String() != "invalid"; m++ {
		if !sent[m] {
			t.Errorf("the decoder reads %s, which the reporter does not send by default", m)
		}
	}
}
