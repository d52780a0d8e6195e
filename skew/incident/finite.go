package incident

import (
	"math"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/skewlens/skewlens/skew"
)

// What the tracker keeps and hands on is stored as JSON (the incidents
// table's body, the alert state, the webhook), and JSON has neither NaN
// nor infinities nor strings that are not UTF-8: a number that cannot be
// encoded would make its incident or alert impossible to store, and a
// string is stored as another (encoding/json replaces each invalid byte
// with U+FFFD), so a restored tracker would not know its condition again.
// The tracker therefore keeps what JSON would give back: non-finite
// numbers are 0 (as the engine rounds them, the findings contract) and
// invalid bytes U+FFFD. The strings it keeps are taken so at intake
// (intake); the numbers it folds are guarded where it folds them
// (Stat.add, finite); the findings its changes carry are made so whole
// when cloned (cloneFinding). An uninterrupted run and a restored one
// then hold the same values.

// intake returns f if the strings the tracker keeps of it are valid
// UTF-8 (the cheap, usual case), else a storable copy of it.
func intake(f *skew.Finding) *skew.Finding {
	ok := utf8.ValidString(f.JobID) && utf8.ValidString(f.JobName) && utf8.ValidString(f.TaskName) && utf8.ValidString(f.Summary) &&
		(f.HotKey == nil || utf8.ValidString(f.HotKey.Key)) && (f.JobEnd == nil || utf8.ValidString(f.JobEnd.Successor))
	if ok && f.Saturation != nil && f.Evidence != nil {
		for _, k := range f.Evidence.HotKeys {
			ok = ok && utf8.ValidString(k.Key)
		}
	}
	if ok {
		return f
	}
	return storable(f)
}

// storable returns f if JSON carries it as it is, else a copy that it
// does (see above); f itself is never written.
func storable(f *skew.Finding) *skew.Finding {
	if !unstorable(reflect.ValueOf(f).Elem()) {
		return f
	}
	c := *f
	makeStorable(reflect.ValueOf(&c).Elem())
	return &c
}

// finite returns v, or 0 when v is NaN or infinite.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// validUTF8 returns s with each byte that is not part of valid UTF-8
// replaced by U+FFFD, as encoding/json encodes it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// makeStorable makes every number and string reachable from v (a
// settable value) storable. Pointers and slices it must change are copied
// first, so that memory v shares with its caller is never written; maps
// and interfaces are left as they are (findings have none).
func makeStorable(v reflect.Value) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		v.SetFloat(finite(v.Float()))
	case reflect.String:
		v.SetString(validUTF8(v.String()))
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				makeStorable(f)
			}
		}
	case reflect.Pointer:
		if v.IsNil() || !unstorable(v.Elem()) {
			return
		}
		cp := reflect.New(v.Type().Elem())
		cp.Elem().Set(v.Elem())
		makeStorable(cp.Elem())
		v.Set(cp)
	case reflect.Slice:
		if !unstorable(v) {
			return
		}
		cp := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(cp, v)
		for i := range cp.Len() {
			makeStorable(cp.Index(i))
		}
		v.Set(cp)
	}
}

// unstorable reports whether a non-finite number or a string that is not
// valid UTF-8 is reachable from v through the values makeStorable walks.
func unstorable(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		return math.IsNaN(f) || math.IsInf(f, 0)
	case reflect.String:
		return !utf8.ValidString(v.String())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && unstorable(v.Field(i)) {
				return true
			}
		}
	case reflect.Pointer:
		return !v.IsNil() && unstorable(v.Elem())
	case reflect.Slice:
		switch v.Type().Elem().Kind() {
		case reflect.Float32, reflect.Float64, reflect.String, reflect.Struct, reflect.Pointer, reflect.Slice:
		default:
			return false // bytes (raw JSON), ints: nothing to look at
		}
		for i := range v.Len() {
			if unstorable(v.Index(i)) {
				return true
			}
		}
	}
	return false
}
