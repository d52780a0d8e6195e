package serve

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/plans"
)

// Config configures a Server. DefaultConfig returns it with the defaults
// given in the field comments; New also reads a zero field as its default.
type Config struct {
	// Addr is the host:port to listen on. Default "127.0.0.1:8080":
	// loopback only, so exposing the API is a deliberate choice (e.g.
	// ":8080" behind TLS). A port of 0 picks a free one (see Addr).
	Addr string
	// Tokens maps a token's name, which the audit log records as who made
	// a change, to its bearer token. Writes and GET /v1/audit need one;
	// with none configured they answer 403 and the API is read-only.
	// Names are 1 to 256 bytes of UTF-8 without control characters;
	// tokens at least 16 bytes of printable ASCII without spaces, each
	// used once.
	Tokens map[string]string
	// MaxBodyBytes caps a request body (default 1 MiB); larger bodies get
	// 413.
	MaxBodyBytes int64
	// MaxHeaderBytes caps the request line and headers (default 1 MiB,
	// which fits a 64 KiB key percent-encoded in a DELETE's query).
	MaxHeaderBytes int
	// CacheTTL is how long one snapshot of the plans and overrides
	// answers GET /v1/salting* before it is read again (default 1s; a
	// negative value reads on every request, still one read at a time).
	CacheTTL time.Duration
	// StoreTimeout bounds each store call made for a request, its retries
	// included (default 5s).
	StoreTimeout time.Duration
	// Retry is how the Server retries a store call that failed with a
	// retryable error, within StoreTimeout: the Server is the one layer
	// that retries them (default retry.Request).
	Retry retry.Policy
	// MaxConcurrentQueries bounds the store calls in flight for requests
	// not answered from the snapshot (findings, audit, writes); more are
	// refused with 503 (default 8).
	MaxConcurrentQueries int
	// MaxOverridesPerTask bounds the active overrides of one task (in
	// practice its excluded keys); a POST that would add one more gets
	// 409 (default 1000).
	MaxOverridesPerTask int
	// TLSCertFile and TLSKeyFile, both or neither, are PEM files of the
	// server's certificate (chain) and key; with them the server speaks
	// HTTPS only (TLS 1.2 or later). They are read once, by New.
	TLSCertFile string
	TLSKeyFile  string
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are
	// those of http.Server (defaults 5s, 30s, 30s, 120s).
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// ShutdownTimeout bounds the graceful shutdown: requests still
	// running after it are cut (default 10s).
	ShutdownTimeout time.Duration
}

// Defaults, used by DefaultConfig and named for the tests.
const (
	DefaultAddr                 = "127.0.0.1:8080"
	DefaultMaxBodyBytes         = 1 << 20
	DefaultMaxHeaderBytes       = 1 << 20
	DefaultCacheTTL             = time.Second
	DefaultStoreTimeout         = 5 * time.Second
	DefaultMaxConcurrentQueries = 8
	DefaultMaxOverridesPerTask  = 1000
	DefaultReadHeaderTimeout    = 5 * time.Second
	DefaultReadTimeout          = 30 * time.Second
	DefaultWriteTimeout         = 30 * time.Second
	DefaultIdleTimeout          = 120 * time.Second
	DefaultShutdownTimeout      = 10 * time.Second
	// MinTokenBytes is the shortest token accepted.
	MinTokenBytes = 16
)

// DefaultConfig returns a Config with every default filled in (no
// tokens, no TLS): the values named by the constants above, which the
// field comments state in words. Callers start from it and override what
// they configure.
func DefaultConfig() Config {
	return Config{
		Addr:                 DefaultAddr,
		MaxBodyBytes:         DefaultMaxBodyBytes,
		MaxHeaderBytes:       DefaultMaxHeaderBytes,
		CacheTTL:             DefaultCacheTTL,
		StoreTimeout:         DefaultStoreTimeout,
		Retry:                retry.Request,
		MaxConcurrentQueries: DefaultMaxConcurrentQueries,
		MaxOverridesPerTask:  DefaultMaxOverridesPerTask,
		ReadHeaderTimeout:    DefaultReadHeaderTimeout,
		ReadTimeout:          DefaultReadTimeout,
		WriteTimeout:         DefaultWriteTimeout,
		IdleTimeout:          DefaultIdleTimeout,
		ShutdownTimeout:      DefaultShutdownTimeout,
	}
}

// withDefaults returns c with every zero field set to its value in
// DefaultConfig. New applies it, so a zero field means its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	setDefault(&c.Addr, d.Addr)
	setDefault(&c.MaxBodyBytes, d.MaxBodyBytes)
	setDefault(&c.MaxHeaderBytes, d.MaxHeaderBytes)
	setDefault(&c.CacheTTL, d.CacheTTL)
	setDefault(&c.StoreTimeout, d.StoreTimeout)
	setDefault(&c.Retry, d.Retry)
	setDefault(&c.MaxConcurrentQueries, d.MaxConcurrentQueries)
	setDefault(&c.MaxOverridesPerTask, d.MaxOverridesPerTask)
	setDefault(&c.ReadHeaderTimeout, d.ReadHeaderTimeout)
	setDefault(&c.ReadTimeout, d.ReadTimeout)
	setDefault(&c.WriteTimeout, d.WriteTimeout)
	setDefault(&c.IdleTimeout, d.IdleTimeout)
	setDefault(&c.ShutdownTimeout, d.ShutdownTimeout)
	return c
}

// Validate reports every invalid field. It changes nothing; New fills the
// zero fields with their defaults before it validates.
func (c Config) Validate() error {
	var errs []error
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
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"store timeout", c.StoreTimeout}, {"read header timeout", c.ReadHeaderTimeout},
		{"read timeout", c.ReadTimeout}, {"write timeout", c.WriteTimeout},
		{"idle timeout", c.IdleTimeout}, {"shutdown timeout", c.ShutdownTimeout},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %s: must be positive", d.name, d.v))
		}
	}
	if err := c.Retry.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("max body bytes %d: must be positive", c.MaxBodyBytes))
	}
	if c.MaxHeaderBytes < 0 {
		errs = append(errs, fmt.Errorf("max header bytes %d: must be positive", c.MaxHeaderBytes))
	}
	if c.MaxConcurrentQueries < 0 {
		errs = append(errs, fmt.Errorf("max concurrent queries %d: must be positive", c.MaxConcurrentQueries))
	}
	if c.MaxOverridesPerTask < 0 {
		errs = append(errs, fmt.Errorf("max overrides per task %d: must be positive", c.MaxOverridesPerTask))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("serve config: %w", err)
	}
	return nil
}

// setDefault sets *v to def when it is zero.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
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
