package clickhouse

import (
	"context"
	"fmt"
	"time"
)

// Migrate creates the database and applies every schema migration that
// the ledger (schema_migrations) does not list, in the dialect of the
// server. It is idempotent: every statement is CREATE ... IF NOT EXISTS,
// so a migration interrupted before it was recorded is simply re-run.
// Retryable errors are retried; it blocks until done or ctx ends.
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
		return permanentErr("migrate", err)
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
			return permanentErr("migrate", err)
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
