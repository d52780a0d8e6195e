package clickhouse

import (
	"strings"
	"testing"
)

func TestParseMigration(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		text    string
		legacy  []string
		modern  []string
		upgrade []string
		wantErr string
	}{
		{
			name:   "both dialects",
			file:   "0003_add.sql",
			text:   "-- header; with a semicolon\n\n-- dialect: legacy\n-- about t\nCREATE TABLE t (a String);\nSELECT 1;\n-- dialect: modern\nCREATE TABLE t\n(\n  a LowCardinality(String)\n);\n",
			legacy: []string{"CREATE TABLE t (a String)", "SELECT 1"},
			modern: []string{"CREATE TABLE t\n(\n  a LowCardinality(String)\n)"},
		},
		{
			name:   "all",
			file:   "0000_ledger.sql",
			text:   "-- dialect: all\nCREATE TABLE x (v UInt32) ENGINE = MergeTree ORDER BY v;\n",
			legacy: []string{"CREATE TABLE x (v UInt32) ENGINE = MergeTree ORDER BY v"},
			modern: []string{"CREATE TABLE x (v UInt32) ENGINE = MergeTree ORDER BY v"},
		},
		{
			name:    "upgrade",
			file:    "0008_x.sql",
			text:    "-- dialect: all\nCREATE TABLE x (v UInt32);\n-- upgrade: where old exists\nINSERT INTO {{database}}.x (v)\nSELECT v FROM {{database}}.old;\n",
			legacy:  []string{"CREATE TABLE x (v UInt32)"},
			modern:  []string{"CREATE TABLE x (v UInt32)"},
			upgrade: []string{"INSERT INTO {{database}}.x (v)\nSELECT v FROM {{database}}.old"},
		},
		{name: "upgrade not a copy", file: "0008_x.sql", text: "-- dialect: all\nSELECT 1;\n-- upgrade:\nDROP TABLE {{database}}.old;\n", wantErr: "an upgrade must be"},
		{name: "missing modern", file: "0001_a.sql", text: "-- dialect: legacy\nSELECT 1;\n", wantErr: "no statements for dialect modern"},
		{name: "unterminated", file: "0001_a.sql", text: "-- dialect: all\nSELECT 1\n", wantErr: "not terminated"},
		{name: "unterminated before marker", file: "0001_a.sql", text: "-- dialect: legacy\nSELECT 1\n-- dialect: modern\nSELECT 2;\n", wantErr: "not terminated"},
		{name: "statement before marker", file: "0001_a.sql", text: "SELECT 1;\n-- dialect: all\nSELECT 2;\n", wantErr: "before the first"},
		{name: "unknown dialect", file: "0001_a.sql", text: "-- dialect: mysql\nSELECT 1;\n", wantErr: "unknown dialect"},
		{name: "bad name", file: "init.sql", text: "-- dialect: all\nSELECT 1;\n", wantErr: "NNNN_name.sql"},
		{name: "bad version", file: "00x1_init.sql", text: "-- dialect: all\nSELECT 1;\n", wantErr: "bad version"},
		{name: "not sql", file: "0001_init.txt", text: "", wantErr: ".sql"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := parseMigration(tt.file, tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Statements[DialectLegacy]; !equalStrings(got, tt.legacy) {
				t.Errorf("legacy = %q, want %q", got, tt.legacy)
			}
			if got := m.Statements[DialectModern]; !equalStrings(got, tt.modern) {
				t.Errorf("modern = %q, want %q", got, tt.modern)
			}
			if !equalStrings(m.Upgrades, tt.upgrade) {
				t.Errorf("upgrades = %q, want %q", m.Upgrades, tt.upgrade)
			}
			if ups, err := m.RenderUpgrades("db", 1); err != nil || len(ups) != len(tt.upgrade) || len(ups) > 0 && (ups[0].Table != "old" || !strings.Contains(ups[0].SQL, "FROM `db`.old")) {
				t.Errorf("rendered upgrades %+v, %v", ups, err)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEmbeddedMigrations checks the real schema files: they parse, both
// dialects create the same tables, every table has the columns the sink
// inserts, and rendering fills every placeholder.
func TestEmbeddedMigrations(t *testing.T) {
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].Version != 0 || ms[0].Name != "schema_migrations" {
		t.Fatalf("first migration = %04d_%s, want 0000_schema_migrations", ms[0].Version, ms[0].Name)
	}
	for i := 1; i < len(ms); i++ {
		if ms[i].Version <= ms[i-1].Version {
			t.Fatalf("migrations out of order: %d after %d", ms[i].Version, ms[i-1].Version)
		}
	}
	for _, d := range []Dialect{DialectLegacy, DialectModern} {
		tables := map[string]string{}
		for _, m := range ms {
			stmts, err := m.Render(d, "skewlens", 30)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range stmts {
				if !strings.Contains(s, "IF NOT EXISTS") {
					t.Errorf("%s %04d: statement is not idempotent: %s", d, m.Version, firstLine(s))
				}
				if strings.Contains(s, "{{") {
					t.Errorf("%s: placeholder left in %s", d, firstLine(s))
				}
				name, ok := strings.CutPrefix(firstLine(s), "CREATE TABLE IF NOT EXISTS `skewlens`.")
				if ok {
					tables[strings.TrimSpace(name)] = s
				}
				// A later column: the checks below see it as a line of
				// its table's DDL.
				if ac, ok := parseAddColumn(s); ok {
					ddl, created := tables[ac.table]
					if ac.database != "skewlens" || !created {
						t.Errorf("%s %04d: adds a column to %s.%s, which no earlier migration creates", d, m.Version, ac.database, ac.table)
						continue
					}
					_, def, _ := strings.Cut(s, " "+ac.column+" ")
					tables[ac.table] = ddl + "\n    " + ac.column + " " + def
				}
			}
		}
		// An upgrade copies from a table no migration creates now (its
		// migration is retired), into one an earlier statement created: a
		// copy is idempotent when that table deduplicates, as the rows
		// copied again have the same key and version.
		for _, m := range ms {
			ups, err := m.RenderUpgrades("skewlens", 30)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range ups {
				into, _ := strings.CutPrefix(firstLine(u.SQL), "INSERT INTO `skewlens`.")
				target, _, _ := strings.Cut(into, " ")
				if !strings.Contains(tables[target], "ReplacingMergeTree(version)") {
					t.Errorf("%s %04d: copies into %q, which is not a ReplacingMergeTree(version) a migration creates", d, m.Version, target)
				}
				if _, ok := tables[u.Table]; ok {
					t.Errorf("%s %04d: upgrades from %s, which a migration still creates", d, m.Version, u.Table)
				}
			}
		}
		for _, table := range append(tableOrder(), "schema_migrations") {
			ddl, ok := tables[table]
			if !ok {
				t.Errorf("%s: no CREATE TABLE for %s", d, table)
				continue
			}
			if table == "schema_migrations" {
				continue
			}
			if !strings.Contains(ddl, "ReplacingMergeTree(version)") {
				t.Errorf("%s %s: not ReplacingMergeTree(version)", d, table)
			}
			for _, col := range insertColumns(table) {
				if !strings.Contains(ddl, "\n    "+col+" ") {
					t.Errorf("%s %s: column %s missing from DDL", d, table, col)
				}
			}
			modernOnly := []string{"LowCardinality", "CODEC", "TTL"}
			for _, kw := range modernOnly {
				if got := strings.Contains(ddl, kw); got != (d == DialectModern) {
					t.Errorf("%s %s: contains %s = %v", d, table, kw, got)
				}
			}
		}
	}
}

func TestParseAddColumn(t *testing.T) {
	tests := []struct {
		name string
		stmt string
		want addColumn
		ok   bool
	}{
		{
			name: "quoted database",
			stmt: "ALTER TABLE `skewlens`.subtask_stats ADD COLUMN IF NOT EXISTS busy_source String AFTER saturated",
			want: addColumn{database: "skewlens", table: "subtask_stats", column: "busy_source",
				plain: "ALTER TABLE `skewlens`.subtask_stats ADD COLUMN busy_source String AFTER saturated"},
			ok: true,
		},
		{
			name: "both quoted, other case and spacing",
			stmt: "alter table `db_1`.`t`\n    add column if not exists `c` LowCardinality(String)",
			want: addColumn{database: "db_1", table: "t", column: "c",
				plain: "alter table `db_1`.`t`\n    add column `c` LowCardinality(String)"},
			ok: true,
		},
		{
			name: "on cluster",
			stmt: "ALTER TABLE `db`.`t_local` ON CLUSTER `c-1` ADD COLUMN IF NOT EXISTS c String AFTER b",
			want: addColumn{database: "db", table: "t_local", column: "c",
				plain: "ALTER TABLE `db`.`t_local` ON CLUSTER `c-1` ADD COLUMN c String AFTER b"},
			ok: true,
		},
		{name: "without IF NOT EXISTS", stmt: "ALTER TABLE `db`.t ADD COLUMN c String"},
		{name: "without database", stmt: "ALTER TABLE t ADD COLUMN IF NOT EXISTS c String"},
		{name: "create", stmt: "CREATE TABLE IF NOT EXISTS `db`.t (a String)"},
		{name: "drop column", stmt: "ALTER TABLE `db`.t DROP COLUMN IF EXISTS c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseAddColumn(tt.stmt)
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseAddColumn = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRender(t *testing.T) {
	m := Migration{Version: 7, Name: "x", Statements: map[Dialect][]string{
		DialectModern: {"CREATE TABLE IF NOT EXISTS {{database}}.t (a Int8) TTL d + INTERVAL {{ttl_days}} DAY"},
		DialectLegacy: {"SELECT {{nope}}"},
	}}
	got, err := m.Render(DialectModern, "db_1", 14)
	if err != nil {
		t.Fatal(err)
	}
	if want := "CREATE TABLE IF NOT EXISTS `db_1`.t (a Int8) TTL d + INTERVAL 14 DAY"; got[0] != want {
		t.Errorf("Render = %q, want %q", got[0], want)
	}
	if _, err := m.Render(DialectLegacy, "db", 1); err == nil {
		t.Error("unknown placeholder: want error")
	}
	if _, err := m.Render(DialectModern, "db`; DROP", 1); err == nil {
		t.Error("bad database: want error")
	}
	if _, err := m.Render(DialectModern, "db", 0); err == nil {
		t.Error("ttl 0: want error")
	}
}

// TestLegacyForm: an `all` section is written in the modern dialect, and
// the legacy one drops what ClickHouse 18.16 lacks, nothing else.
func TestLegacyForm(t *testing.T) {
	tests := []struct{ name, modern, legacy string }{
		{"low cardinality", "a LowCardinality(String),\n    b LowCardinality(Nullable(String))", "a String,\n    b Nullable(String)"},
		{"codecs", "a Int64 CODEC(Delta, ZSTD(1)),\n    b String CODEC(ZSTD(3)) AFTER c", "a Int64,\n    b String AFTER c"},
		{"ttl", "ORDER BY (a, b)\nTTL window_date + INTERVAL {{ttl_days}} DAY\nSETTINGS ttl_only_drop_parts = 1", "ORDER BY (a, b)"},
		{"other settings stay", "ORDER BY a\nSETTINGS index_granularity = 8192", "ORDER BY a\nSETTINGS index_granularity = 8192"},
		{"plain", "CREATE TABLE IF NOT EXISTS {{database}}.t (a String) ENGINE = MergeTree ORDER BY a", "CREATE TABLE IF NOT EXISTS {{database}}.t (a String) ENGINE = MergeTree ORDER BY a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := legacyForm(tt.modern); got != tt.legacy {
				t.Errorf("legacyForm(%q) = %q, want %q", tt.modern, got, tt.legacy)
			}
		})
	}
}
