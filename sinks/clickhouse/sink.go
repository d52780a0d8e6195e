package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/pipeline/retry"
	"github.com/skewlens/skewlens/skew"
)

// ErrClosed is returned (marked retry.Permanent) by calls on a closed Sink.
var ErrClosed = errors.New("clickhouse sink is closed")

// Sink writes skewlens findings to ClickHouse. Create it with New, call
// Migrate once, then Write. A Sink is safe for concurrent use; Write and
// Migrate calls are serialised.
type Sink struct {
	cfg     Config
	log     *slog.Logger
	m       *metrics
	conn    driver.Conn
	version string
	dialect Dialect

	// mu serialises Write and Migrate and guards lastInsert and closed.
	mu         sync.Mutex
	lastInsert map[string]time.Time
	closed     bool
	closeOnce  sync.Once
	closeErr   error
}

// New validates cfg, registers the sink's metrics with reg (nil: none),
// connects to the server and reads its version, which picks the schema
// dialect. It blocks for at most cfg.DialTimeout. An error from a server
// that cannot be reached is not permanent: the caller may retry New.
// log may be nil to discard the sink's log records.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fatal("new", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fatal("new", err)
	}
	conn, err := ch.Open(&ch.Options{
		Protocol: ch.Native,
		Addr:     []string{cfg.Addr},
		// No default database: it may not exist before Migrate; every
		// statement names its database.
		Auth:             ch.Auth{Username: cfg.Username, Password: cfg.Password},
		DialTimeout:      cfg.DialTimeout,
		ReadTimeout:      cfg.ReadTimeout,
		MaxOpenConns:     4,
		MaxIdleConns:     2,
		ConnMaxLifetime:  10 * time.Minute,
		Compression:      &ch.Compression{Method: ch.CompressionLZ4},
		ConnOpenStrategy: ch.ConnOpenInOrder,
	})
	if err != nil {
		return nil, fatal("open "+cfg.Addr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
	defer cancel()
	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		_ = conn.Close()
		if classify(context.Background(), err) == classFatal {
			return nil, fatal("connect "+cfg.Addr, err)
		}
		return nil, fmt.Errorf("clickhouse sink: connect %s: %w", cfg.Addr, err)
	}
	dialect, err := dialectFor(version, Dialect(cfg.Dialect))
	if err != nil {
		_ = conn.Close()
		return nil, fatal("connect "+cfg.Addr, err)
	}
	log.Info("clickhouse sink connected", "addr", cfg.Addr, "server_version", version,
		"dialect", string(dialect), "database", cfg.Database)
	return &Sink{
		cfg: cfg, log: log, m: m, conn: conn, version: version, dialect: dialect,
		lastInsert: map[string]time.Time{},
	}, nil
}

// ServerVersion returns the server's version as SELECT version() gave it
// when the Sink connected, e.g. "18.16.1".
func (s *Sink) ServerVersion() string { return s.version }

// Dialect returns the schema dialect in use.
func (s *Sink) Dialect() Dialect { return s.dialect }

// Ping checks that the server answers. It blocks until it does, ctx ends
// or the read timeout passes.
func (s *Sink) Ping(ctx context.Context) error {
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("clickhouse sink: ping %s: %w", s.cfg.Addr, err)
	}
	return nil
}

// Close closes the connections. It is safe to call more than once and
// concurrently with Write, which then fails with ErrClosed; it waits for a
// running Write or Migrate to finish.
func (s *Sink) Close() error {
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
func (s *Sink) table(name string) string {
	return "`" + s.cfg.Database + "`.`" + name + "`"
}

// Migrate creates the database and applies every schema migration that
// the ledger (schema_migrations) does not list, in the dialect of the
// server. It is idempotent: every statement is CREATE ... IF NOT EXISTS,
// so a migration interrupted before it was recorded is simply re-run.
// Retryable errors are retried; it blocks until done or ctx ends.
func (s *Sink) Migrate(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fatal("migrate", ErrClosed)
	}
	ms, err := Migrations()
	if err != nil {
		return fatal("migrate", err)
	}
	exec := func(op, sql string) error {
		return s.retry(ctx, op, "migrate", func(ctx context.Context) error {
			return s.conn.Exec(ctx, sql)
		})
	}
	if err := exec("create database", "CREATE DATABASE IF NOT EXISTS `"+s.cfg.Database+"`"); err != nil {
		return err
	}
	ledger, err := ms[0].Render(s.dialect, s.cfg.Database, s.cfg.TTLDays)
	if err != nil {
		return fatal("migrate", err)
	}
	for _, stmt := range ledger {
		if err := exec("migration 0000", stmt); err != nil {
			return err
		}
	}
	applied := map[int]bool{}
	err = s.retry(ctx, "read schema_migrations", "migrate", func(ctx context.Context) error {
		rows, err := s.conn.Query(ctx, "SELECT DISTINCT version FROM "+s.table("schema_migrations"))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v uint32
			if err := rows.Scan(&v); err != nil {
				return err
			}
			applied[int(v)] = true
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	for _, m := range ms[1:] {
		if applied[m.Version] {
			continue
		}
		stmts, err := m.Render(s.dialect, s.cfg.Database, s.cfg.TTLDays)
		if err != nil {
			return fatal("migrate", err)
		}
		op := fmt.Sprintf("migration %04d_%s", m.Version, m.Name)
		for i, stmt := range stmts {
			if err := exec(fmt.Sprintf("%s statement %d", op, i+1), stmt); err != nil {
				return err
			}
		}
		rec := []row{{uint32(m.Version), m.Name, string(s.dialect), time.Now().UTC().Truncate(time.Second)}}
		err = s.retry(ctx, "record "+op, "migrate", func(ctx context.Context) error {
			return s.insertRows(ctx, "schema_migrations", []string{"version", "name", "dialect", "applied_at"}, rec)
		})
		if err != nil {
			return err
		}
		s.log.Info("clickhouse schema migration applied", "version", m.Version, "name", m.Name,
			"dialect", string(s.dialect), "database", s.cfg.Database)
	}
	return nil
}

// Write stores every finding of fs: one row per finding in the findings
// table and one in its kind's table (subtask_stats, hot_keys,
// salting_plans), in batches of at most BatchMaxRows rows. version is the
// caller's monotonically increasing number (e.g. the highest Kafka offset
// of the input); rows with the same key and a higher version replace older
// ones, so writing the same findings again after a crash does not
// duplicate them.
//
// Write blocks until every row is acknowledged by the server, so the
// caller may commit its input offsets when it returns nil. It paces
// inserts per table by FlushInterval. It makes one attempt and does not
// retry: its caller does (the stream runner retries a write for as long as
// it takes, consumption paused), so retries do not nest. Errors are
// classified: a finding that cannot be stored, or a server error that
// retrying cannot fix, is permanent (retry.IsPermanent; nothing of fs is
// inserted when the findings themselves are bad); other errors may succeed
// when Write is called again. When ctx ends it returns ctx's error; a
// failed or interrupted Write may have inserted some of the tables, which
// is harmless because replays replace.
func (s *Sink) Write(ctx context.Context, version uint64, fs []skew.Finding) error {
	rows := tableRows{}
	now := time.Now()
	for i := range fs {
		f := &fs[i]
		if err := mapFinding(rows, f, version, now); err != nil {
			s.m.insertErrors.WithLabelValues(string(classFatal)).Inc()
			return fatal(fmt.Sprintf("finding %d (%s, job %s, task %s, window %d)", i, f.Kind, f.JobID, f.TaskName, f.WindowStart), err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fatal("write", ErrClosed)
	}
	for _, table := range tableOrder() {
		rs := rows[table]
		cols := insertColumns(table)
		for start := 0; start < len(rs); start += s.cfg.BatchMaxRows {
			chunk := rs[start:min(start+s.cfg.BatchMaxRows, len(rs))]
			if err := s.pace(ctx, table); err != nil {
				return err
			}
			op := fmt.Sprintf("insert %d rows into %s", len(chunk), table)
			err := s.attempt(ctx, op, func(ctx context.Context) error {
				return s.insertRows(ctx, table, cols, chunk)
			})
			s.lastInsert[table] = time.Now()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// pace waits until FlushInterval has passed since the last insert into
// table, or ctx ends.
func (s *Sink) pace(ctx context.Context, table string) error {
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
func (s *Sink) insertRows(ctx context.Context, table string, cols []string, rows []row) error {
	start := time.Now()
	query := "INSERT INTO " + s.table(table) + " (" + strings.Join(cols, ", ") + ")"
	batch, err := s.conn.PrepareBatch(ctx, query)
	if err != nil {
		return fmt.Errorf("prepare insert into %s: %w", table, err)
	}
	for i, r := range rows {
		if err := batch.Append(r...); err != nil {
			_ = batch.Abort()
			return fatal(fmt.Sprintf("append row %d to %s", i, table), err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("send %d rows to %s: %w", len(rows), table, err)
	}
	s.m.insertSeconds.WithLabelValues(table).Observe(time.Since(start).Seconds())
	s.m.rowsInserted.WithLabelValues(table).Add(float64(len(rows)))
	return nil
}

// attempt makes one call of fn, counts its error by class, and returns it
// classified: marked permanent when retrying cannot fix it, with ctx's
// error when ctx ended, else wrapped with op (retryable).
func (s *Sink) attempt(ctx context.Context, op string, fn func(context.Context) error) error {
	err := fn(ctx)
	if err == nil {
		return nil
	}
	class := classify(ctx, err)
	s.m.insertErrors.WithLabelValues(string(class)).Inc()
	switch class {
	case classCanceled:
		return fmt.Errorf("clickhouse sink: %s: %w (last error: %v)", op, ctx.Err(), err)
	case classFatal:
		return fatal(op, err)
	}
	return fmt.Errorf("clickhouse sink: %s: %w", op, err)
}

// retry runs fn with retry.Do until it succeeds, fails with a fatal error,
// ctx ends or MaxRetries retries are used up. It serves the operations the
// Sink is the caller of (migrations, reads, plan and override writes), not
// Write and SaveState, whose caller retries. label is the retries metric
// label.
func (s *Sink) retry(ctx context.Context, op, label string, fn func(context.Context) error) error {
	// A negative MaxRetries disables retries here, where retry.Policy
	// would read it as unlimited.
	p := retry.Policy{MaxRetries: max(s.cfg.MaxRetries, 0), MinBackoff: s.cfg.MinBackoff, MaxBackoff: s.cfg.MaxBackoff}
	return retry.Do(ctx, p, func(attempt int, wait time.Duration, err error) {
		s.log.Warn("clickhouse sink: retrying", "op", op, "attempt", attempt, "wait", wait, "err", err)
		s.m.retries.WithLabelValues(label).Inc()
	}, func(ctx context.Context) error {
		return s.attempt(ctx, op, fn)
	})
}
