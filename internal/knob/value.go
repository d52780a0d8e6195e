package knob

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Parse reads text, written as on the command line, as a value of type
// t: a duration (10s), a number, a string, a boolean, a comma-separated
// list, or what t's UnmarshalText reads. With millis, t is int64 and text a duration, stored in
// milliseconds.
func Parse(text string, t reflect.Type, millis bool) (reflect.Value, error) {
	v := reflect.New(t).Elem()
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		// A type that reads itself: a retry policy by its preset's name.
		return v, u.UnmarshalText([]byte(text))
	}
	switch {
	case millis:
		d, err := time.ParseDuration(text)
		if err != nil {
			return v, err
		}
		v.SetInt(d.Milliseconds())
	case t == durationType:
		d, err := time.ParseDuration(text)
		if err != nil {
			return v, err
		}
		v.SetInt(int64(d))
	case v.CanInt():
		n, err := strconv.ParseInt(text, 10, t.Bits())
		if err != nil {
			return v, err
		}
		v.SetInt(n)
	case v.CanUint():
		n, err := strconv.ParseUint(text, 10, t.Bits())
		if err != nil {
			return v, err
		}
		v.SetUint(n)
	case v.CanFloat():
		x, err := strconv.ParseFloat(text, t.Bits())
		if err != nil {
			return v, err
		}
		v.SetFloat(x)
	case t.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return v, err
		}
		v.SetBool(b)
	case t.Kind() == reflect.String:
		v.SetString(text)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		parts := strings.Split(text, ",")
		v.Set(reflect.MakeSlice(t, len(parts), len(parts)))
		for i, p := range parts {
			v.Index(i).SetString(p)
		}
	default:
		return v, fmt.Errorf("a setting cannot be a %s", t)
	}
	return v, nil
}

// Format writes v as it is written on the command line: durations as
// people write them (10m rather than 10m0s), lists comma-separated.
func Format(v reflect.Value, millis bool) string {
	if m, ok := v.Interface().(encoding.TextMarshaler); ok {
		if b, err := m.MarshalText(); err == nil {
			return string(b)
		}
	}
	switch {
	case millis:
		return Duration(time.Duration(v.Int()) * time.Millisecond)
	case v.Type() == durationType:
		return Duration(time.Duration(v.Int()))
	case v.CanFloat():
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case v.Kind() == reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v.Interface())
}

// Duration writes d as people write it in flags: 10m rather than
// time.Duration's 10m0s, 1h rather than 1h0m0s. time.ParseDuration reads
// both.
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
