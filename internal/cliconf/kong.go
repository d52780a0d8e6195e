package cliconf

import (
	"fmt"
	"reflect"

	"github.com/alecthomas/kong"
	"github.com/skewlens/skewlens/internal/knob"
)

// MillisMapper reads a duration flag (10s) into an int64 of
// milliseconds, the type:"ms" fields of the components' Configs
// (internal/knob). Register it with kong.NamedMapper("ms", ...).
type MillisMapper struct{}

// Decode implements kong.Mapper.
func (MillisMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	var text string
	if err := ctx.Scan.PopValueInto("duration", &text); err != nil {
		return err
	}
	v, err := knob.Parse(text, target.Type(), true)
	if err != nil {
		return fmt.Errorf("expected duration but got %q: %w", text, err)
	}
	target.Set(v)
	return nil
}

// Reset sets every component Config the command tree cli points to binds
// (an embed:"" field) to the defaults its tags declare, before kong sets
// the flags: the settings no flag sets keep their defaults too.
func Reset(cli any, vars kong.Vars) { reset(reflect.ValueOf(cli).Elem(), vars) }

func reset(v reflect.Value, vars kong.Vars) {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if !f.IsExported() && !f.Anonymous || fv.Kind() != reflect.Struct {
			continue
		}
		if _, ok := f.Tag.Lookup("embed"); ok {
			knob.Reset(fv.Addr().Interface(), vars)
			continue
		}
		reset(fv, vars)
	}
}
