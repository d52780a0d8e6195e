package serve

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/skew/plans"
)

// Config configures a Server. Its tags declare each setting once
// (internal/knob); New also reads a zero field as its default.
type Config struct {
	// Addr is the host:port to listen on: loopback only by default, so
	// exposing the API is a deliberate choice (e.g. ":8080" behind TLS). A
	// port of 0 picks a free one (see Addr).
	Addr string `kong:"-" default:"127.0.0.1:8080" range:"[1,]"`
	// Tokens maps a token's name, which the audit log records as who made
	// a change, to its bearer token. Writes and GET /v1/audit need one;
	// with none configured they answer 403 and the API is read-only.
	// Names are 1 to 256 bytes of UTF-8 without control characters;
	// tokens at least MinTokenBytes of printable ASCII without spaces,
	// each used once.
	Tokens map[string]string `kong:"-"`
	// MaxBodyBytes caps a request body; larger bodies get 413.
	MaxBodyBytes int64 `kong:"-" default:"1048576" range:"[1,]"`
	// MaxHeaderBytes caps the request line and headers: 1 MiB fits a
	// 64 KiB key percent-encoded in a DELETE's query.
	MaxHeaderBytes int `kong:"-" default:"1048576" range:"[1,]"`
	// CacheTTL is how long one snapshot of the plans and overrides
	// answers GET /v1/salting* before it is read again; a negative value
	// reads on every request, still one read at a time.
	CacheTTL time.Duration `kong:"-" default:"1s" zero:"default"`
	// StoreTimeout bounds each store call made for a request, its retries
	// included.
	StoreTimeout time.Duration `kong:"-" default:"5s" range:"(0s,]"`
	// Retry is how the Server retries a store call that failed with a
	// retryable error, within StoreTimeout: the Server is the one layer
	// that retries them.
	Retry retry.Policy `kong:"-" default:"request" zero:"default"`
	// MaxConcurrentQueries bounds the store calls in flight for requests
	// not answered from the snapshot (findings, audit, writes); more are
	// refused with 503.
	MaxConcurrentQueries int `kong:"-" default:"8" range:"[1,]"`
	// MaxOverridesPerTask bounds the active overrides of one task (in
	// practice its excluded keys); a POST that would add one more gets
	// 409.
	MaxOverridesPerTask int `kong:"-" default:"1000" range:"[1,]"`
	// TLSCertFile and TLSKeyFile, both or neither, are PEM files of the
	// server's certificate (chain) and key; with them the server speaks
	// HTTPS only (TLS 1.2 or later). They are read once, by New.
	TLSCertFile string `kong:"-"`
	TLSKeyFile  string `kong:"-"`
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are
	// those of http.Server.
	ReadHeaderTimeout time.Duration `kong:"-" default:"5s" range:"(0s,]"`
	ReadTimeout       time.Duration `kong:"-" default:"30s" range:"(0s,]"`
	WriteTimeout      time.Duration `kong:"-" default:"30s" range:"(0s,]"`
	IdleTimeout       time.Duration `kong:"-" default:"2m" range:"(0s,]"`
	// ShutdownTimeout bounds the graceful shutdown: requests still
	// running after it are cut.
	ShutdownTimeout time.Duration `kong:"-" default:"10s" range:"(0s,]"`
}

// MinTokenBytes is the shortest token accepted.
const MinTokenBytes = 16

// DefaultConfig returns the defaults the tags declare (no tokens, no
// TLS).
func DefaultConfig() Config { return knob.Defaults[Config]() }

// withDefaults returns c with every zero field set to its default. New
// applies it, so a zero field means its default.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	return c
}

// Validate reports every invalid field. It changes nothing; New fills the
// zero fields with their defaults before it validates.
func (c Config) Validate() error {
	errs := []error{knob.CheckFilled(c)} // a zero setting stands for its default
	// An empty host listens on every interface, which is allowed.
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr %q: %w", c.Addr, err))
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		errs = append(errs, fmt.Errorf("addr %q: bad port", c.Addr))
	}
	seen := map[string]string{}
	for name, tok := range c.Tokens {
		if err := checkTokenName(name); err != nil {
			errs = append(errs, err)
		}
		if err := checkToken(tok); err != nil {
			errs = append(errs, fmt.Errorf("token %q: %w", name, err))
		} else if other, dup := seen[tok]; dup {
			errs = append(errs, fmt.Errorf("tokens %q and %q: same token", min(name, other), max(name, other)))
		}
		seen[tok] = name
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("tls: set both the certificate and the key file, or neither"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("serve config: %w", err)
	}
	return nil
}

// checkTokenName checks a token's name, which becomes Override.By.
func checkTokenName(name string) error {
	if name == "" || len(name) > plans.MaxNameBytes || !utf8.ValidString(name) {
		return fmt.Errorf("token name %q: must be 1 to %d bytes of UTF-8", name, plans.MaxNameBytes)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("token name %q: contains a control character", name)
		}
	}
	return nil
}

// checkToken checks a token: it must fit in an Authorization header as is.
func checkToken(tok string) error {
	if len(tok) < MinTokenBytes {
		return fmt.Errorf("shorter than %d bytes", MinTokenBytes)
	}
	if len(tok) > 4096 {
		return errors.New("longer than 4096 bytes")
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] <= ' ' || tok[i] > '~' {
			return errors.New("must be printable ASCII without spaces")
		}
	}
	return nil
}
