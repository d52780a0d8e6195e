package kafkaclient

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// CheckBroker reports a bootstrap broker address that no dial can use:
// one without a port (kafka-go would try it, fail, and be retried until
// the wait for brokers ends, a minute later), with a port that is not a
// number in 1..65535, or without a host. Components check their brokers
// with it when they validate their configuration, so that a mistyped
// address is refused at start.
func CheckBroker(addr string) error {
	if addr == "" {
		return errors.New("empty address")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) && ae.Err == "missing port in address" {
			return fmt.Errorf("%q has no port: want HOST:PORT, e.g. %s", addr, net.JoinHostPort(strings.Trim(addr, "[]"), "9092"))
		}
		return fmt.Errorf("%q: want HOST:PORT ([HOST]:PORT for IPv6): %w", addr, err)
	}
	if host == "" {
		return fmt.Errorf("%q has no host: want HOST:PORT", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number in 1..65535", addr, port)
	}
	return nil
}
