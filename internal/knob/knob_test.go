package knob

import (
	"strings"
	"testing"
	"time"
)

type inner struct {
	Lateness int64 `name:"lateness" type:"ms" default:"0s" range:"[0s,]" help:"zero is a value"`
}

type sample struct {
	Window   int64         `name:"window" type:"ms" default:"10s" range:"[1ms,]" help:"w"`
	Share    float64       `name:"share" default:"0.5" range:"(0,${hi}]" help:"s"`
	Topics   []string      `name:"topics" default:"a,b" range:"[1,]"`
	Topic    string        `name:"topic" default:"t" zero:"default"`
	Timeout  time.Duration `kong:"-" default:"2s" range:"(0s,]"`
	TTLDays  int           `kong:"-" default:"30" range:"[1,36500]"`
	Free     int           `kong:"-"`
	Inner    inner         `embed:""`
	internal int
}

func (sample) KnobVars() map[string]string { return map[string]string{"hi": "1"} }

func TestSettings(t *testing.T) {
	ss, err := Settings(sample{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range ss {
		names = append(names, s.Label())
	}
	if got, want := strings.Join(names, ","), "window,share,topics,topic,timeout,ttl days,lateness"; got != want {
		t.Errorf("settings %s, want %s", got, want)
	}
	if ss[1].Range != "(0,1]" || ss[1].Rule() != "must be in (0,1]" {
		t.Errorf("share range %q rule %q", ss[1].Range, ss[1].Rule())
	}
	if Env("SKEWLENS", "hot-key-share") != "SKEWLENS_HOT_KEY_SHARE" || Key("hot-key-share") != "hot_key_share" {
		t.Error("Env or Key")
	}
}

func TestDefaultsFillCheck(t *testing.T) {
	d := Defaults[sample]()
	if d.Window != 10000 || d.Share != 0.5 || len(d.Topics) != 2 || d.Topic != "t" || d.Timeout != 2*time.Second || d.TTLDays != 30 || d.Free != 0 {
		t.Errorf("defaults %+v", d)
	}
	if err := Check(d); err != nil {
		t.Errorf("defaults out of range: %v", err)
	}
	z := sample{internal: 7}
	FillZero(&z)
	if z.internal != 7 {
		t.Errorf("FillZero changed an unexported field: %d", z.internal)
	}
	// Zero is a value of Lateness; the rest take their defaults.
	if z.Window != 10000 || z.Topic != "t" || z.Inner.Lateness != 0 || z.Timeout != 2*time.Second || z.Free != 0 {
		t.Errorf("FillZero %+v", z)
	}
	d.Share, d.Timeout, d.Topics = 2, -time.Second, nil
	err := Check(d)
	for _, want := range []string{"share 2: must be in (0,1]", "timeout -1s: must be above 0s", "topics : must not be empty"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v, want %q", err, want)
		}
	}
}

func TestBadDeclarations(t *testing.T) {
	for _, c := range []any{
		struct {
			X int `name:"x" default:"nope"`
		}{},
		struct {
			X int `name:"x" range:"[1,${missing}]"`
		}{},
		struct {
			X int32 `name:"x" type:"ms"`
		}{},
		struct {
			X int `name:"x" range:"1,2"`
		}{},
	} {
		if _, err := Settings(c); err == nil {
			t.Errorf("%T: no error", c)
		}
	}
}

func TestLabel(t *testing.T) {
	for field, want := range map[string]string{"ReadyTimeout": "ready timeout", "TTLDays": "ttl days", "MaxBytes": "max bytes", "X.DeadLetterInFlight": "dead letter in flight"} {
		if got := (Setting{Field: field}).Label(); got != want {
			t.Errorf("%s: %q, want %q", field, got, want)
		}
	}
}

func TestCheckFilled(t *testing.T) {
	var z sample
	if Check(z) == nil {
		t.Error("Check passed a zero window")
	}
	if err := CheckFilled(&z); err != nil || z.Window != 0 {
		t.Errorf("CheckFilled: %v, window %d (want no error and cfg unchanged)", err, z.Window)
	}
	z.Share = 2
	if CheckFilled(z) == nil {
		t.Error("CheckFilled passed a share out of range")
	}
}
