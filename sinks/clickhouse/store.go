package clickhouse

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/retry"
)

// Store is the connection to ClickHouse and the schema on it. Create it
// with New and call Migrate once; then each consumer takes the part it
// needs: Writer (the pipeline: findings, engine state, plans, and the
// API's overrides and audit), Plans, Findings, Stats and Audit (the
// readers of skewlens serve) and Top (the reader of skewlens top). A Store and its
// parts are safe for concurrent use; writes and Migrate are serialised.
type Store struct {
	cfg     Config
	log     *slog.Logger
	m       *metrics
	conn    driver.Conn
	version string
	dialect Dialect
	// unreg unregisters the metrics: for a Connector that gives up on a
	// Store whose Migrate failed, and connects again.
	unreg func()

	// mu serialises Write and Migrate and guards lastInsert and closed.
	mu         sync.Mutex
	lastInsert map[string]time.Time
	closed     bool
	closeOnce  sync.Once
	closeErr   error

	writer   *Writer
	plans    *PlanReader
	findings *FindingReader
	stats    *StatsReader
	audit    *AuditReader
	top      *TopReader
}

// Writer stores what the pipeline and the API write: findings (Write),
// the engine's state (SaveState, and LoadState to resume it), plan
// changes (WritePlans) and the operators' overrides with their audit
// entries (PutOverride, DeleteOverride). Its writes are serialised with
// each other and with Migrate.
type Writer struct{ s *Store }

// PlanReader reads the current plans and overrides (servestore.PlanReader).
type PlanReader struct{ s *Store }

// FindingReader reads findings (servestore.FindingReader).
type FindingReader struct{ s *Store }

// StatsReader reads the per-subtask statistics (servestore.StatsReader).
type StatsReader struct{ s *Store }

// AuditReader reads the audit log (servestore.AuditReader).
type AuditReader struct{ s *Store }

// TopReader reads the view of skewlens top (topstore.Reader).
type TopReader struct{ s *Store }

// Writer returns the Store's writer.
func (s *Store) Writer() *Writer { return s.writer }

// Plans returns the Store's reader of plans and overrides.
func (s *Store) Plans() *PlanReader { return s.plans }

// Findings returns the Store's reader of findings.
func (s *Store) Findings() *FindingReader { return s.findings }

// Stats returns the Store's reader of the per-subtask statistics.
func (s *Store) Stats() *StatsReader { return s.stats }

// Audit returns the Store's reader of the audit log.
func (s *Store) Audit() *AuditReader { return s.audit }

// Top returns the Store's reader of the top view.
func (s *Store) Top() *TopReader { return s.top }

// New validates cfg, whose zero fields mean their defaults
// (DefaultConfig), registers the store's metrics with reg (nil: none),
// connects to the server and reads its version, which picks the schema
// dialect. It blocks for at most cfg.DialTimeout, or until ctx ends;
// ctx bounds only New, not the Store's life. An error from a server
// that cannot be reached is not permanent (retry.IsPermanent): the
// caller may retry New, on the same reg, since a New that fails leaves
// reg as it found it.
// log may be nil to discard the store's log records.
func New(ctx context.Context, cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, permanentErr("new", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, unreg, err := newMetrics(reg)
	if err != nil {
		return nil, permanentErr("new", err)
	}
	ok := false
	defer func() {
		if !ok {
			unreg()
		}
	}()
	conn, err := open(cfg, cfg.ReadTimeout)
	if err != nil {
		return nil, permanentErr("open "+cfg.Addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		_ = conn.Close()
		if permanent(err) {
			return nil, permanentErr("connect "+cfg.Addr, err)
		}
		return nil, fmt.Errorf("clickhouse: connect %s: %w", cfg.Addr, err)
	}
	dialect, err := dialectFor(version, Dialect(cfg.Dialect))
	if err != nil {
		_ = conn.Close()
		return nil, permanentErr("connect "+cfg.Addr, err)
	}
	log.Info("clickhouse sink connected", "addr", cfg.Addr, "server_version", version,
		"dialect", string(dialect), "database", cfg.Database, "cluster", cfg.Cluster)
	s := &Store{
		cfg: cfg, log: log, m: m, conn: conn, version: version, dialect: dialect,
		lastInsert: map[string]time.Time{}, unreg: unreg,
	}
	ok = true
	s.writer, s.plans, s.findings, s.stats = &Writer{s}, &PlanReader{s}, &FindingReader{s}, &StatsReader{s}
	s.audit, s.top = &AuditReader{s}, &TopReader{s}
	return s, nil
}

// open opens a pool of connections to cfg.Addr whose every exchange
// with the server (one Exec, or the wait for one block of a query) must
// finish within readTimeout.
func open(cfg Config, readTimeout time.Duration) (driver.Conn, error) {
	var settings ch.Settings
	if cfg.Cluster != "" {
		// An insert into a Distributed table is by default queued on
		// the server that received it and sent to the shards later: its
		// acknowledgement would not mean the rows are stored, and the
		// pipeline commits its Kafka offsets on it. Synchronous, it
		// returns once every shard's block is on one replica.
		settings = ch.Settings{"insert_distributed_sync": 1}
	}
	return ch.Open(&ch.Options{
		Protocol: ch.Native,
		Addr:     []string{cfg.Addr},
		// No default database: it may not exist before Migrate; every
		// statement names its database.
		Auth:             ch.Auth{Username: cfg.Username, Password: cfg.Password},
		DialTimeout:      cfg.DialTimeout,
		ReadTimeout:      readTimeout,
		MaxOpenConns:     4,
		MaxIdleConns:     2,
		ConnMaxLifetime:  10 * time.Minute,
		Compression:      &ch.Compression{Method: ch.CompressionLZ4},
		ConnOpenStrategy: ch.ConnOpenInOrder,
		Settings:         settings,
	})
}

// ServerVersion returns the server's version as SELECT version() gave it
// when the Store connected, e.g. "18.16.1".
func (s *Store) ServerVersion() string { return s.version }

// RetryPolicy returns Config.Retry (its defaults filled in), for the
// callers that retry the Store's reads and writes.
func (s *Store) RetryPolicy() retry.Policy { return s.cfg.Retry }

// Cluster returns Config.Cluster: the cluster the schema is on, or "" for
// one server.
func (s *Store) Cluster() string { return s.cfg.Cluster }

// Dialect returns the schema dialect in use.
func (s *Store) Dialect() Dialect { return s.dialect }

// Ping checks that the server answers. It blocks until it does, ctx ends
// or the read timeout passes.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("clickhouse sink: ping %s: %w", s.cfg.Addr, err)
	}
	return nil
}

// Close closes the connections. It is safe to call more than once and
// concurrently with Write, which then fails with ErrClosed; it waits for a
// running Write or Migrate to finish.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		if err := s.conn.Close(); err != nil {
			s.closeErr = fmt.Errorf("clickhouse sink: close: %w", err)
		}
	})
	return s.closeErr
}

// table returns the quoted, database-qualified name of a table.
func (s *Store) table(name string) string {
	return "`" + s.cfg.Database + "`.`" + name + "`"
}

// pace waits until FlushInterval has passed since the last insert into
// table, or ctx ends.
func (s *Store) pace(ctx context.Context, table string) error {
	if s.cfg.FlushInterval <= 0 {
		return nil
	}
	last, ok := s.lastInsert[table]
	if !ok {
		return nil
	}
	wait := time.Until(last.Add(s.cfg.FlushInterval))
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("clickhouse sink: waiting to insert into %s: %w", table, ctx.Err())
	case <-t.C:
		return nil
	}
}

// insertRows sends rows to table as one batch with an explicit column
// list (18.16 needs it) and returns when the server acknowledged them.
// Values are sent in the native format, never spliced into SQL.
func (s *Store) insertRows(ctx context.Context, table string, cols []string, rows []row) error {
	return s.insertEach(ctx, table, cols, func(add func(row) error) error {
		for _, r := range rows {
			if err := add(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// insertBlockRows is the rows of one block of an insert (see insertEach).
const insertBlockRows = 16384

// insertEach sends the rows fill hands to add as one insert, as
// insertRows does. The batch holds the rows in its columns only: a
// caller that makes each row just before add (Write's statistics rows)
// never holds them all as Go values.
func (s *Store) insertEach(ctx context.Context, table string, cols []string, fill func(add func(row) error) error) error {
	start := time.Now()
	query := "INSERT INTO " + s.table(table) + " (" + strings.Join(cols, ", ") + ")"
	batch, err := s.conn.PrepareBatch(ctx, query)
	if err != nil {
		return fmt.Errorf("prepare insert into %s: %w", table, err)
	}
	n := 0
	err = fill(func(r row) error {
		if err := batch.Append(r...); err != nil {
			return permanentErr(fmt.Sprintf("append row %d to %s", n, table), err)
		}
		n++
		if n%insertBlockRows == 0 {
			// The rows so far go as one block of the same insert, so that
			// the columns and their compressed copy never hold a whole
			// fleet's window (100k statistics rows were 60 MB of a 512 MB
			// instance's peak). The server squashes the blocks of an
			// insert into parts as it would one block.
			if err := batch.Flush(); err != nil {
				return fmt.Errorf("send rows up to %d to %s: %w", n, table, err)
			}
		}
		return nil
	})
	if err != nil {
		_ = batch.Abort()
		return err
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("send %d rows to %s: %w", n, table, err)
	}
	s.m.insertSeconds.WithLabelValues(table).Observe(time.Since(start).Seconds())
	s.m.rowsInserted.WithLabelValues(table).Add(float64(n))
	return nil
}

// closedNow reports whether the Store is closed, without waiting: reads
// must not queue behind a write that holds the lock while it waits for
// the server (a lock is not context-aware). When the lock is busy it reports false;
// a read on a closed connection then fails on its own.
func (s *Store) closedNow() bool {
	if !s.mu.TryLock() {
		return false
	}
	defer s.mu.Unlock()
	return s.closed
}

// query runs a read, once: its caller retries (the readers' callers
// own that decision, see doc.go). scan is called with the rows and
// returns what it cannot decode as permanent. The error is classified.
func (s *Store) query(ctx context.Context, op, sql string, args []any, scan func(rows rowScanner) error) error {
	if s.closedNow() {
		return permanentErr(op, ErrClosed)
	}
	return s.classify(ctx, op, func() error {
		rows, err := s.conn.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return err
		}
		return rows.Err()
	}())
}

// rowScanner is the part of driver.Rows the readers use.
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
}
