package clickhouse

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// clusterDDLTimeout bounds the wait of Migrate's ON CLUSTER statements
// for every server of the cluster to run them. It is ClickHouse's default
// distributed_ddl_task_timeout, which Migrate sends with each statement.
const clusterDDLTimeout = 180 * time.Second

// Migrate creates the database and applies every schema migration that
// the ledger (schema_migrations) does not list, in the dialect of the
// server, with its upgrades (Migration.Upgrades) where their tables
// exist. It is idempotent: every statement is CREATE ... IF NOT EXISTS
// or ALTER ... ADD COLUMN IF NOT EXISTS (see applyStatement), so a
// migration interrupted before it was recorded is simply re-run.
// Retryable errors are retried; it blocks until done or ctx ends.
//
// On a cluster (Config.Cluster) the statements of each migration run in
// their cluster form (see clusterSchema.rewriteAll), and each one waits
// until every server of the cluster has run it, for up to
// clusterDDLTimeout. Run it while every replica is up; a server that is
// down runs the queued statements when it is back.
func (s *Store) Migrate(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return permanentErr("migrate", ErrClosed)
	}
	ms, err := Migrations()
	if err != nil {
		return permanentErr("migrate", err)
	}
	// forms returns the rendered statements of one migration as they
	// run: themselves, or their cluster form.
	forms := func(stmts []string) ([]string, error) { return stmts, nil }
	conn := s.conn
	if s.cfg.Cluster != "" {
		cs, err := newClusterSchema(ms, s.dialect, s.cfg.Database, s.cfg.Cluster, s.cfg.TTLDays)
		if err != nil {
			return permanentErr("migrate", err)
		}
		forms = cs.rewriteAll
		// The server answers an ON CLUSTER statement once every server
		// has run it or distributed_ddl_task_timeout has passed, naming
		// the servers that have not. Its own connections wait for that
		// answer: a client that gave up sooner would retry, and queue the
		// statement again behind the first, which on a slow cluster
		// piles up faster than the servers run it.
		ddl, err := open(s.cfg, clusterDDLTimeout+s.cfg.ReadTimeout)
		if err != nil {
			return permanentErr("open "+s.cfg.Addr, err)
		}
		defer func() { _ = ddl.Close() }()
		conn = ddl
		ctx = ch.Context(ctx, ch.WithSettings(ch.Settings{
			"distributed_ddl_task_timeout": int(clusterDDLTimeout / time.Second),
		}))
	}
	exec := func(op string, sql ...string) error {
		stmts, err := forms(sql)
		if err != nil {
			return permanentErr(op, err)
		}
		for i, stmt := range stmts {
			if err := s.applyStatement(ctx, conn, fmt.Sprintf("%s statement %d", op, i+1), stmt); err != nil {
				return err
			}
		}
		return nil
	}
	if err := exec("create database", "CREATE DATABASE IF NOT EXISTS `"+s.cfg.Database+"`"); err != nil {
		return err
	}
	ledger, err := ms[0].Render(s.dialect, s.cfg.Database, s.cfg.TTLDays)
	if err != nil {
		return permanentErr("migrate", err)
	}
	if err := exec("migration 0000", ledger...); err != nil {
		return err
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
			return permanentErr("migrate", err)
		}
		op := fmt.Sprintf("migration %04d_%s", m.Version, m.Name)
		if err := exec(op, stmts...); err != nil {
			return err
		}
		ups, err := m.RenderUpgrades(s.cfg.Database, s.cfg.TTLDays)
		if err != nil {
			return permanentErr("migrate", err)
		}
		for _, u := range ups {
			// The table of a retired migration exists only where an older
			// release created it: a fresh database has nothing to copy.
			var n uint64
			err := s.retry(ctx, op+" upgrade from "+u.Table, "migrate", func(ctx context.Context) error {
				return s.conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", s.cfg.Database, u.Table).Scan(&n)
			})
			if err != nil {
				return err
			}
			if n == 0 {
				continue
			}
			if err := exec(op+" upgrade from "+u.Table, u.SQL); err != nil {
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

// addColumnRE matches a statement that adds one column unless it exists:
// ALTER TABLE `db`.table [ON CLUSTER name] ADD COLUMN IF NOT EXISTS
// column ...
var addColumnRE = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+(\S+)\s+(?:ON\s+CLUSTER\s+\S+\s+)?ADD\s+COLUMN\s+(IF\s+NOT\s+EXISTS\s+)(\S+)\s`)

// addColumn is an ALTER TABLE ... ADD COLUMN IF NOT EXISTS statement,
// parsed.
type addColumn struct {
	database, table, column string
	// plain is the statement without IF NOT EXISTS, for servers that do
	// not know the clause.
	plain string
}

// parseAddColumn recognises an ALTER TABLE ... ADD COLUMN IF NOT EXISTS
// statement of one column whose table is named database.table (either
// part may be quoted with backticks), with or without ON CLUSTER.
func parseAddColumn(stmt string) (addColumn, bool) {
	m := addColumnRE.FindStringSubmatchIndex(stmt)
	if m == nil {
		return addColumn{}, false
	}
	unquote := func(s string) string { return strings.Trim(s, "`") }
	db, table, ok := strings.Cut(stmt[m[2]:m[3]], ".")
	if !ok {
		return addColumn{}, false
	}
	return addColumn{
		database: unquote(db),
		table:    unquote(table),
		column:   unquote(stmt[m[6]:m[7]]),
		plain:    stmt[:m[4]] + stmt[m[5]:],
	}, true
}

// applyStatement runs one statement of a migration, retrying what is
// retryable. ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS, so on the
// legacy dialect such a statement runs without the clause, and only when
// system.columns does not list the column yet: re-running it (a
// migration interrupted before it was recorded, or two sinks migrating
// at once) then changes nothing, as on a modern server. On a cluster it
// is the server Addr names that is asked; a replica that already has the
// column fails the ON CLUSTER statement, which then counts as done when
// that server has the column too. It runs on conn; s.mu is held.
func (s *Store) applyStatement(ctx context.Context, conn driver.Conn, op, stmt string) error {
	ac, ok := parseAddColumn(stmt)
	if !ok || s.dialect != DialectLegacy {
		return s.retry(ctx, op, "migrate", func(ctx context.Context) error {
			return conn.Exec(ctx, stmt)
		})
	}
	return s.retry(ctx, op, "migrate", func(ctx context.Context) error {
		if exists, err := columnExists(ctx, conn, ac); err != nil || exists {
			return err
		}
		err := conn.Exec(ctx, ac.plain)
		if err != nil {
			// Another sink may have added it in between.
			if exists, cerr := columnExists(ctx, conn, ac); cerr == nil && exists {
				return nil
			}
		}
		return err
	})
}

// columnExists reports whether the table of ac has the column.
func columnExists(ctx context.Context, conn driver.Conn, ac addColumn) (bool, error) {
	var n uint64
	err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?",
		ac.database, ac.table, ac.column).Scan(&n)
	return n > 0, err
}

// WriteDDL writes the schema as Migrate would apply it to a fresh
// database of dialect d (in cfg's cluster form when cfg.Cluster is set),
// for a manual install: each migration's statements, each ending with
// ';', under a comment naming the migration, and its upgrades commented
// out, with the table each needs. On the legacy dialect ADD COLUMN has no
// IF NOT EXISTS (18.16 does not know the clause): run those once. It
// connects to nothing.
func WriteDDL(w io.Writer, d Dialect, cfg Config) error {
	if d != DialectLegacy && d != DialectModern {
		return fmt.Errorf("dialect %q: want %s or %s", d, DialectLegacy, DialectModern)
	}
	ms, err := Migrations()
	if err != nil {
		return err
	}
	forms := func(stmts []string) ([]string, error) { return stmts, nil }
	if cfg.Cluster != "" {
		cs, err := newClusterSchema(ms, d, cfg.Database, cfg.Cluster, cfg.TTLDays)
		if err != nil {
			return err
		}
		forms = cs.rewriteAll
	}
	bw := bufio.NewWriter(w)
	db, err := forms([]string{"CREATE DATABASE IF NOT EXISTS `" + cfg.Database + "`"})
	if err != nil {
		return err
	}
	fmt.Fprintf(bw, "-- skewlens schema, %s dialect, database %s\n%s;\n", d, cfg.Database, db[0])
	for _, m := range ms {
		stmts, err := m.Render(d, cfg.Database, cfg.TTLDays)
		if err != nil {
			return err
		}
		if stmts, err = forms(stmts); err != nil {
			return err
		}
		fmt.Fprintf(bw, "\n-- %04d_%s\n", m.Version, m.Name)
		for _, s := range stmts {
			if ac, ok := parseAddColumn(s); ok && d == DialectLegacy {
				s = ac.plain
			}
			fmt.Fprintf(bw, "%s;\n", s)
		}
		ups, err := m.RenderUpgrades(cfg.Database, cfg.TTLDays)
		if err != nil {
			return err
		}
		for _, u := range ups {
			fmt.Fprintf(bw, "-- upgrade: only if the database has the table %s:\n-- %s;\n", u.Table, strings.ReplaceAll(u.SQL, "\n", "\n-- "))
		}
	}
	return bw.Flush()
}
