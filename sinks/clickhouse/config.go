package clickhouse

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/retry"
)

// Config configures a Store. Its tags declare each setting once
// (internal/knob); New also reads a zero field as its default.
type Config struct {
	// Addr is the host:port of the server's native protocol (TCP) port.
	// The HTTP interface is not used: ClickHouse 18.16 speaks only the
	// native protocol to clickhouse-go.
	Addr string `kong:"-" default:"127.0.0.1:9000" range:"[1,]"`
	// Database holds the skewlens tables; Migrate creates it. It must be a
	// plain identifier ([A-Za-z_][A-Za-z0-9_]*).
	Database string `name:"database" default:"skewlens" range:"[1,64]" help:"ClickHouse database."`
	// Username and Password authenticate the connection.
	Username string `kong:"-" default:"default" range:"[1,]"`
	Password string `kong:"-"`
	// DialTimeout bounds connecting and the server version query in New.
	DialTimeout time.Duration `kong:"-" default:"5s" range:"(0s,]"`
	// ReadTimeout bounds waiting for one server response.
	ReadTimeout time.Duration `kong:"-" default:"30s" range:"(0s,]"`
	// BatchMaxRows is the most rows one INSERT carries; larger writes are
	// split.
	BatchMaxRows int `kong:"-" default:"50000" range:"[1,]"`
	// FlushInterval is the least time between two inserts into the same
	// table: Write waits (context-aware) when it would insert sooner, so a
	// table sees at most about one insert per FlushInterval. A negative
	// value disables the pacing.
	FlushInterval time.Duration `kong:"-" default:"1s" zero:"default"`
	// Retry is the policy of the callers that retry with
	// Store.RetryPolicy: Migrate's steps, and the start-up reads and the
	// API's store calls that skewlens wires with it. The pipeline's writes
	// are retried by its runner instead, without bound. A zero Policy
	// means the default; in any other, MaxRetries is taken as it is
	// (retry.Policy's meaning: 0 never retries, retry.Unlimited retries
	// until the context ends) and a zero backoff field is its default: to
	// never retry, set Retry.MaxRetries to 0 on DefaultConfig().
	Retry retry.Policy `kong:"-" default:"setup"`
	// TTLDays is the retention of the finding tables, in days, applied by
	// the modern dialect only (18.16 has no TTL; drop old daily partitions
	// there).
	TTLDays int `kong:"-" default:"30" range:"[1,36500]"`
	// Dialect forces the schema dialect: "legacy" (ClickHouse < 20.3) or
	// "modern". Empty picks it from the server version.
	Dialect string `kong:"-"`
	// Cluster, when not empty, names the ClickHouse cluster (an entry of
	// the servers' remote_servers) that Migrate creates the schema on:
	// every migration runs ON CLUSTER, each table is a Replicated* table
	// <table>_local on every server and a Distributed table of the
	// table's own name over them, which skewlens reads and writes (see
	// cluster.go). Inserts are then synchronous (insert_distributed_sync),
	// so that an acknowledged write is on a replica of its shard before
	// the caller commits its input. The servers need ZooKeeper, the
	// {shard} and {replica} macros and the distributed_ddl section;
	// Addr is any server of the cluster. At most 128 bytes of
	// [A-Za-z0-9_.-]. Empty: one server, plain tables.
	Cluster string `name:"clickhouse-cluster" placeholder:"NAME" help:"ClickHouse cluster (a remote_servers name) to keep the tables on: ON CLUSTER DDL, Replicated and Distributed tables (docs/queries.md). Empty: one server."`
}

// validIdentifier reports whether s is a plain SQL identifier
// ([A-Za-z_][A-Za-z0-9_]*). Database is spliced into SQL as an identifier
// (identifiers cannot be bound), so nothing else is allowed.
func validIdentifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// validClusterName reports whether s can name a cluster: Cluster is
// spliced into SQL both as an identifier (ON CLUSTER) and as a string
// (Distributed's first argument), so it holds no quote of either kind.
func validClusterName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		switch {
		case r == '_', r == '-', r == '.', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// DefaultConfig returns the defaults the tags declare.
func DefaultConfig() Config { return knob.Defaults[Config]() }

// withDefaults returns c with every zero field set to its default (Retry
// as retry.Policy.OrDefault says). New applies it, so a zero field means
// its default.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	c.Retry = c.Retry.OrDefault(DefaultConfig().Retry)
	return c
}

// Validate reports every invalid field. It changes nothing; New fills the
// zero fields with their defaults before it validates.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
	if host, port, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr %q: %w", c.Addr, err))
	} else if host == "" {
		errs = append(errs, fmt.Errorf("addr %q: empty host", c.Addr))
	} else if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		errs = append(errs, fmt.Errorf("addr %q: bad port", c.Addr))
	}
	if !validIdentifier(c.Database) {
		errs = append(errs, fmt.Errorf("database %q: must be a plain identifier [A-Za-z_][A-Za-z0-9_]* of at most 64 bytes", c.Database))
	}
	if err := c.Retry.Validate(); c.Retry != (retry.Policy{}) && err != nil { // zero: the default
		errs = append(errs, err)
	}
	if c.Cluster != "" && !validClusterName(c.Cluster) {
		errs = append(errs, fmt.Errorf("cluster %q: must be at most 128 bytes of [A-Za-z0-9_.-]", c.Cluster))
	}
	switch Dialect(c.Dialect) {
	case "", DialectLegacy, DialectModern:
	default:
		errs = append(errs, fmt.Errorf("dialect %q: must be %q, %q or empty", c.Dialect, DialectLegacy, DialectModern))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clickhouse sink config: %w", err)
	}
	return nil
}
