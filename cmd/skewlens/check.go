package main

import (
	"github.com/alecthomas/kong"
	"github.com/skewlens/skewlens/internal/cliconf"
)

// rangeChecker checks every flag against its range (cliconf): the
// components' tags, but where the command line narrows one. The alert
// tracker fires an alert at an incident's first finding when
// Hysteresis.For is not positive (its tests do), but run's alerts wait
// for an incident to last.
func rangeChecker(vars kong.Vars) cliconf.Checker {
	return cliconf.Checker{Vars: vars, Narrow: map[string]string{"alert-for": "(0s,]"}}
}

// checker is a command with rules that span flags or belong to the
// components the flags configure. run calls check after checkFlags and
// before the command's Run, so that nothing starts with a bad
// configuration.
type checker interface {
	check() error
}

// checkCommand checks the selected command: every flag against its
// range, then the command's own rules.
func checkCommand(kctx *kong.Context, vars kong.Vars) error {
	if err := rangeChecker(vars).Check(kctx); err != nil {
		return err
	}
	node := kctx.Selected()
	if node == nil || !node.Target.CanAddr() {
		return nil
	}
	if c, ok := node.Target.Addr().Interface().(checker); ok {
		return c.check()
	}
	return nil
}
