package clickhouse

import (
	"bufio"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// schemaFS holds the versioned schema files, NNNN_name.sql. They live in
// this package (go:embed cannot reach outside it); deploy/clickhouse/schema
// points here.
//
//go:embed schema/*.sql
var schemaFS embed.FS

// Migration is one versioned schema file, parsed.
type Migration struct {
	Version int
	Name    string
	// Statements maps each dialect to its statements, in file order,
	// without the trailing semicolons and with the placeholders
	// {{database}} and {{ttl_days}} still in place.
	Statements map[Dialect][]string
	// Upgrades are the statements of its `-- upgrade:` section, for both
	// dialects: each copies (INSERT INTO ... SELECT ... FROM
	// {{database}}.table) the rows of a table that only databases set up
	// by older releases have, because the migration that created it is
	// retired. Migrate runs each after Statements, and only where its
	// table exists.
	Upgrades []string
}

// dialectAll marks a section that applies to both dialects; sectionUpgrade
// the upgrade section (Migration.Upgrades).
const (
	dialectAll     Dialect = "all"
	sectionUpgrade Dialect = "upgrade"
)

// What a modern statement has that ClickHouse 18.16 lacks (legacyForm).
var (
	lowCardinalityRE = regexp.MustCompile(`LowCardinality\(((?:[^()]|\([^()]*\))*)\)`)
	codecRE          = regexp.MustCompile(` CODEC\((?:[^()]|\([^()]*\))*\)`)
	ttlRE            = regexp.MustCompile(`\n\s*(TTL [^\n]*|SETTINGS ttl_only_drop_parts = 1)`)
)

// legacyForm returns the legacy dialect's form of a statement of an `all`
// section, which is written in the modern one: without what 18.16 lacks.
// LowCardinality(T) becomes T, and column codecs, the table TTL and its
// ttl_only_drop_parts setting go (legacy tables are pruned by dropping
// partitions by hand). A statement needing anything else goes in
// `legacy` and `modern` sections of its own.
func legacyForm(stmt string) string {
	stmt = lowCardinalityRE.ReplaceAllString(stmt, "$1")
	stmt = codecRE.ReplaceAllString(stmt, "")
	return ttlRE.ReplaceAllString(stmt, "")
}

// upgradeRE matches an upgrade statement and captures the table it reads.
var upgradeRE = regexp.MustCompile(`(?is)^INSERT\s+INTO\s.*\sSELECT\s.*\sFROM\s+\{\{database\}\}\.(\w+)$`)

// parseMigration parses one schema file. The file is a sequence of
// sections, each introduced by a line `-- dialect: legacy`, `-- dialect:
// modern`, `-- dialect: all` or `-- upgrade:` (Migration.Upgrades, the
// rest of the line a comment); text before the first marker is a comment.
// An `all` section is written in the modern dialect; the legacy one gets
// its legacyForm, so a table is declared once.
// A statement ends at a line that ends with ';' and is not a comment.
// Every migration must end up with statements for both dialects.
func parseMigration(name string, text string) (Migration, error) {
	base := path.Base(name)
	stem, ok := strings.CutSuffix(base, ".sql")
	if !ok {
		return Migration{}, fmt.Errorf("schema file %s: name must end in .sql", name)
	}
	num, label, ok := strings.Cut(stem, "_")
	if !ok || len(num) != 4 || label == "" {
		return Migration{}, fmt.Errorf("schema file %s: name must be NNNN_name.sql", name)
	}
	version, err := strconv.Atoi(num)
	if err != nil || version < 0 {
		return Migration{}, fmt.Errorf("schema file %s: bad version %q", name, num)
	}
	m := Migration{Version: version, Name: label, Statements: map[Dialect][]string{}}

	var (
		section Dialect
		cur     strings.Builder
		lineNo  int
	)
	flush := func() error {
		stmt := stripLeadingComments(cur.String())
		cur.Reset()
		if stmt == "" || onlyComments(stmt) {
			return nil
		}
		if section == "" {
			return fmt.Errorf("schema file %s:%d: statement before the first `-- dialect:` line", name, lineNo)
		}
		if section == sectionUpgrade {
			if !upgradeRE.MatchString(stmt) {
				return fmt.Errorf("schema file %s:%d: an upgrade must be INSERT INTO ... SELECT ... FROM {{database}}.table", name, lineNo)
			}
			m.Upgrades = append(m.Upgrades, stmt)
			return nil
		}
		if section == dialectAll {
			m.Statements[DialectLegacy] = append(m.Statements[DialectLegacy], legacyForm(stmt))
			m.Statements[DialectModern] = append(m.Statements[DialectModern], stmt)
		} else {
			m.Statements[section] = append(m.Statements[section], stmt)
		}
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "-- upgrade:") {
			if strings.TrimSpace(cur.String()) != "" && !onlyComments(cur.String()) {
				return Migration{}, fmt.Errorf("schema file %s:%d: statement not terminated with ';' before the upgrade marker", name, lineNo)
			}
			cur.Reset()
			section = sectionUpgrade
			continue
		}
		if rest, ok := strings.CutPrefix(trimmed, "-- dialect:"); ok {
			if strings.TrimSpace(cur.String()) != "" && !onlyComments(cur.String()) {
				return Migration{}, fmt.Errorf("schema file %s:%d: statement not terminated with ';' before the dialect marker", name, lineNo)
			}
			cur.Reset()
			d := Dialect(strings.TrimSpace(rest))
			switch d {
			case DialectLegacy, DialectModern, dialectAll:
			default:
				return Migration{}, fmt.Errorf("schema file %s:%d: unknown dialect %q", name, lineNo, d)
			}
			section = d
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if !strings.HasPrefix(trimmed, "--") && strings.HasSuffix(trimmed, ";") {
			s := strings.TrimSpace(cur.String())
			cur.Reset()
			cur.WriteString(strings.TrimSuffix(s, ";"))
			if err := flush(); err != nil {
				return Migration{}, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Migration{}, fmt.Errorf("schema file %s: %w", name, err)
	}
	if strings.TrimSpace(cur.String()) != "" && !onlyComments(cur.String()) {
		return Migration{}, fmt.Errorf("schema file %s: last statement not terminated with ';'", name)
	}
	for _, d := range []Dialect{DialectLegacy, DialectModern} {
		if len(m.Statements[d]) == 0 {
			return Migration{}, fmt.Errorf("schema file %s: no statements for dialect %s", name, d)
		}
	}
	return m, nil
}

// stripLeadingComments drops blank and comment lines before the first line
// of SQL, so a statement's comment block stays in the file only.
func stripLeadingComments(s string) string {
	lines := strings.Split(s, "\n")
	for len(lines) > 0 {
		t := strings.TrimSpace(lines[0])
		if t != "" && !strings.HasPrefix(t, "--") {
			break
		}
		lines = lines[1:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// onlyComments reports whether every non-blank line of s is a -- comment.
func onlyComments(s string) bool {
	for line := range strings.SplitSeq(s, "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "--") {
			return false
		}
	}
	return true
}

// Migrations returns the embedded schema files, parsed, in version order.
// Version 0 is the migration ledger, which Migrate applies every time.
func Migrations() ([]Migration, error) {
	names, err := fs.Glob(schemaFS, "schema/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list schema files: %w", err)
	}
	var ms []Migration
	seen := map[int]string{}
	for _, name := range names {
		b, err := schemaFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read schema file %s: %w", name, err)
		}
		m, err := parseMigration(name, string(b))
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[m.Version]; dup {
			return nil, fmt.Errorf("schema files %s and %s: same version %d", prev, name, m.Version)
		}
		seen[m.Version] = name
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	if len(ms) == 0 || ms[0].Version != 0 {
		return nil, fmt.Errorf("schema files: migration 0000 (the ledger) is missing")
	}
	return ms, nil
}

// Render returns the statements of m for dialect d with the placeholders
// filled in. database must be a valid identifier (Config.Validate checks);
// it is quoted with backticks.
func (m Migration) Render(d Dialect, database string, ttlDays int) ([]string, error) {
	if !validIdentifier(database) {
		return nil, fmt.Errorf("migration %04d: bad database name %q", m.Version, database)
	}
	if ttlDays <= 0 {
		return nil, fmt.Errorf("migration %04d: ttl days %d must be positive", m.Version, ttlDays)
	}
	stmts, ok := m.Statements[d]
	if !ok {
		return nil, fmt.Errorf("migration %04d: no statements for dialect %q", m.Version, d)
	}
	return m.render(stmts, database, ttlDays)
}

// Upgrade is an upgrade statement of a migration, rendered: it copies
// the rows of Table, when the database has it.
type Upgrade struct {
	Table, SQL string
}

// RenderUpgrades returns m.Upgrades with the placeholders filled in, as
// Render does.
func (m Migration) RenderUpgrades(database string, ttlDays int) ([]Upgrade, error) {
	if !validIdentifier(database) {
		return nil, fmt.Errorf("migration %04d: bad database name %q", m.Version, database)
	}
	out := make([]Upgrade, len(m.Upgrades))
	sqls, err := m.render(m.Upgrades, database, ttlDays)
	if err != nil {
		return nil, err
	}
	for i, u := range m.Upgrades {
		out[i] = Upgrade{Table: upgradeRE.FindStringSubmatch(u)[1], SQL: sqls[i]}
	}
	return out, nil
}

// render fills the placeholders of stmts.
func (m Migration) render(stmts []string, database string, ttlDays int) ([]string, error) {
	r := strings.NewReplacer("{{database}}", "`"+database+"`", "{{ttl_days}}", strconv.Itoa(ttlDays))
	out := make([]string, len(stmts))
	for i, s := range stmts {
		out[i] = r.Replace(s)
		if strings.Contains(out[i], "{{") {
			return nil, fmt.Errorf("migration %04d statement %d: unknown placeholder in %q", m.Version, i+1, firstLine(out[i]))
		}
	}
	return out, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
