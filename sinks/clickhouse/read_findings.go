package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
)

// Limits of Findings and Audit.
const (
	DefaultFindingsLimit = 100
	MaxFindingsLimit     = 10000
	DefaultAuditLimit    = 100
	MaxAuditLimit        = 10000
)

// Audit returns the newest entries of the audit log, newest first: of one
// job, or of all when jobID is "". limit 0 means DefaultAuditLimit; it is
// at most MaxAuditLimit.
func (r *AuditReader) Audit(ctx context.Context, jobID string, limit int) ([]servestore.AuditEntry, error) {
	q, args := auditQuery(r.s.table(tablePlanAudit), jobID, limit)
	var out []servestore.AuditEntry
	err := r.s.query(ctx, "read audit log", q, args, func(rows rowScanner) error {
		out = out[:0]
		for rows.Next() {
			var (
				a    servestore.AuditEntry
				at   int64
				what string
			)
			if err := rows.Scan(&at, &a.By, &a.Method, &a.Action, &a.JobID, &a.TaskName, &a.Key,
				&what, &a.RemoteAddr, &a.Result); err != nil {
				return err
			}
			a.At = time.UnixMilli(at).UTC()
			if what != "" {
				a.What = json.RawMessage(what)
				if !json.Valid(a.What) {
					// Rows written by other tools: keep the text.
					b, _ := json.Marshal(strings.ToValidUTF8(what, "\uFFFD"))
					a.What = b
				}
			}
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Findings returns findings (their body, the skew.Finding JSON contract)
// newest window first: the latest version of each finding (argMax by
// version over the table's sort key, so replays count once).
func (r *FindingReader) Findings(ctx context.Context, fq servestore.FindingsQuery) ([]json.RawMessage, error) {
	q, args := findingsQuery(r.s.table(tableFindings), fq)
	var out []json.RawMessage
	err := r.s.query(ctx, "read findings", q, args, func(rows rowScanner) error {
		out = out[:0]
		for rows.Next() {
			var body string
			if err := rows.Scan(&body); err != nil {
				return err
			}
			if b, ok := r.s.jsonBody("findings", body, "body", body); ok {
				out = append(out, b)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// clampLimit returns def for n <= 0 and at most hi.
func clampLimit(n, def, hi int) int {
	switch {
	case n <= 0:
		return def
	case n > hi:
		return hi
	}
	return n
}

// jsonBody returns a row's body as JSON. The sink writes valid JSON; a
// row from another tool that is not is skipped, with a warning naming
// it by what (a column and its value), rather than failing every query.
func (s *Store) jsonBody(table, body, what, value string) (json.RawMessage, bool) {
	body = strings.ToValidUTF8(body, "\uFFFD")
	if !json.Valid([]byte(body)) {
		s.log.Warn("clickhouse sink: skipping a "+table+" row whose body is not JSON", what, fmt.Sprintf("%.80q", value))
		return nil, false
	}
	return json.RawMessage(body), true
}
