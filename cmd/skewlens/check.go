package main

import (
	"github.com/alecthomas/kong"
	"github.com/skewlens/skewlens/internal/app"
	"github.com/skewlens/skewlens/internal/cliconf"
)

// rangeChecker checks every flag against its range (cliconf): the
// components' tags, but where the commands narrow one (app.Narrowed).
func rangeChecker(vars kong.Vars) cliconf.Checker {
	return cliconf.Checker{Vars: vars, Narrow: app.Narrowed()}
}

// checker is a command with rules that span flags or belong to the
// components the flags configure. run calls check after the ranges and
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
