package clickhouse

import (
	"regexp"
	"strings"
	"testing"
)

// TestClusterRewrite checks the cluster form of each kind of statement.
func TestClusterRewrite(t *testing.T) {
	ms := []Migration{
		{Version: 0, Name: "ledger", Statements: map[Dialect][]string{DialectLegacy: {
			"CREATE TABLE IF NOT EXISTS {{database}}.ledger\n(\n    version UInt32\n)\nENGINE = MergeTree\nORDER BY version",
		}}},
		{Version: 1, Name: "init", Statements: map[Dialect][]string{DialectLegacy: {
			"CREATE TABLE IF NOT EXISTS {{database}}.facts\n(\n    job_id String,\n    version UInt64\n)\nENGINE = ReplacingMergeTree(version)\nPARTITION BY job_id\nORDER BY job_id",
		}}},
	}
	cs, err := newClusterSchema(ms, DialectLegacy, "db", "c1", 30)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		stmt string
		want []string
	}{
		{
			name: "create database",
			stmt: "CREATE DATABASE IF NOT EXISTS `db`",
			want: []string{"CREATE DATABASE IF NOT EXISTS `db` ON CLUSTER `c1`"},
		},
		{
			name: "replacing table: replicated with its version, sharded by job",
			stmt: "CREATE TABLE IF NOT EXISTS `db`.facts\n(\n    job_id String,\n    version UInt64\n)\nENGINE = ReplacingMergeTree(version)\nPARTITION BY job_id\nORDER BY job_id",
			want: []string{
				"CREATE TABLE IF NOT EXISTS `db`.`facts_local` ON CLUSTER `c1` (\n    job_id String,\n    version UInt64\n)\n" +
					"ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db/facts_local', '{replica}', version)\nPARTITION BY job_id\nORDER BY job_id",
				"CREATE TABLE IF NOT EXISTS `db`.`facts` ON CLUSTER `c1` AS `db`.`facts_local` ENGINE = Distributed('c1', 'db', 'facts_local', cityHash64(job_id))",
			},
		},
		{
			name: "plain MergeTree without job_id: sharded at random",
			stmt: "CREATE TABLE IF NOT EXISTS `db`.ledger\n(\n    version UInt32\n)\nENGINE = MergeTree\nORDER BY version",
			want: []string{
				"CREATE TABLE IF NOT EXISTS `db`.`ledger_local` ON CLUSTER `c1` (\n    version UInt32\n)\n" +
					"ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/db/ledger_local', '{replica}')\nORDER BY version",
				"CREATE TABLE IF NOT EXISTS `db`.`ledger` ON CLUSTER `c1` AS `db`.`ledger_local` ENGINE = Distributed('c1', 'db', 'ledger_local', rand())",
			},
		},
		{
			name: "alter: the local table on the cluster, then the Distributed table again",
			stmt: "ALTER TABLE `db`.facts ADD COLUMN IF NOT EXISTS extra String AFTER job_id",
			want: []string{
				"ALTER TABLE `db`.`facts_local` ON CLUSTER `c1` ADD COLUMN IF NOT EXISTS extra String AFTER job_id",
				"DROP TABLE IF EXISTS `db`.`facts` ON CLUSTER `c1`",
				"CREATE TABLE IF NOT EXISTS `db`.`facts` ON CLUSTER `c1` AS `db`.`facts_local` ENGINE = Distributed('c1', 'db', 'facts_local', cityHash64(job_id))",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cs.rewrite(tt.stmt)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n;\n") != strings.Join(tt.want, "\n;\n") {
				t.Errorf("rewrite:\n%s\nwant:\n%s", strings.Join(got, "\n;\n"), strings.Join(tt.want, "\n;\n"))
			}
		})
	}
}

// TestClusterRewriteAll checks that a migration's ALTERs of one table
// recreate its Distributed table once, after the last of them.
func TestClusterRewriteAll(t *testing.T) {
	ms := []Migration{{Version: 1, Name: "init", Statements: map[Dialect][]string{DialectLegacy: {
		"CREATE TABLE IF NOT EXISTS {{database}}.facts\n(\n    job_id String\n)\nENGINE = MergeTree\nORDER BY job_id",
		"CREATE TABLE IF NOT EXISTS {{database}}.other\n(\n    job_id String\n)\nENGINE = MergeTree\nORDER BY job_id",
	}}}}
	cs, err := newClusterSchema(ms, DialectLegacy, "db", "c1", 30)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.rewriteAll([]string{
		"ALTER TABLE `db`.facts ADD COLUMN IF NOT EXISTS a String AFTER job_id",
		"ALTER TABLE `db`.other ADD COLUMN IF NOT EXISTS b String AFTER job_id",
		"ALTER TABLE `db`.facts ADD COLUMN IF NOT EXISTS c String AFTER a",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ALTER TABLE `db`.`facts_local` ON CLUSTER `c1` ADD COLUMN IF NOT EXISTS a String AFTER job_id",
		"ALTER TABLE `db`.`other_local` ON CLUSTER `c1` ADD COLUMN IF NOT EXISTS b String AFTER job_id",
		"ALTER TABLE `db`.`facts_local` ON CLUSTER `c1` ADD COLUMN IF NOT EXISTS c String AFTER a",
		"DROP TABLE IF EXISTS `db`.`facts` ON CLUSTER `c1`",
		"CREATE TABLE IF NOT EXISTS `db`.`facts` ON CLUSTER `c1` AS `db`.`facts_local` ENGINE = Distributed('c1', 'db', 'facts_local', cityHash64(job_id))",
		"DROP TABLE IF EXISTS `db`.`other` ON CLUSTER `c1`",
		"CREATE TABLE IF NOT EXISTS `db`.`other` ON CLUSTER `c1` AS `db`.`other_local` ENGINE = Distributed('c1', 'db', 'other_local', cityHash64(job_id))",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rewriteAll:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestClusterRewriteRefuses checks that what has no safe cluster form is
// an error rather than a table on one server.
func TestClusterRewriteRefuses(t *testing.T) {
	tests := []struct {
		name    string
		ms      []Migration
		stmt    string
		wantErr string
	}{
		{name: "other statement", stmt: "INSERT INTO `db`.t VALUES (1)", wantErr: "no cluster form"},
		{name: "alter of a table no migration creates", stmt: "ALTER TABLE `db`.nope ADD COLUMN c String", wantErr: "no migration creates"},
		{name: "other engine", stmt: "CREATE TABLE IF NOT EXISTS `db`.t (job_id String) ENGINE = Log", wantErr: "want one ENGINE"},
		{
			name: "deduplicating table without job_id",
			ms: []Migration{{Version: 1, Name: "x", Statements: map[Dialect][]string{DialectLegacy: {
				"CREATE TABLE IF NOT EXISTS {{database}}.t\n(\n    k String,\n    version UInt64\n)\nENGINE = ReplacingMergeTree(version)\nORDER BY k",
			}}}},
			wantErr: "no job_id column",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := newClusterSchema(tt.ms, DialectLegacy, "db", "c1", 30)
			if err == nil {
				_, err = cs.rewrite(tt.stmt)
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestClusterSchemaEmbedded rewrites every embedded migration in both
// dialects: each CREATE TABLE becomes a replicated local table with the
// same engine family and a Distributed table sharded by job (or, for the
// ledger, at random), each ALTER touches the local table, and a copy
// (INSERT ... SELECT) runs as it is.
func TestClusterSchemaEmbedded(t *testing.T) {
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	replicated := regexp.MustCompile(`ENGINE = Replicated(Replacing)?MergeTree\('/clickhouse/tables/\{shard\}/skewlens/(\w+)_local', '\{replica\}'`)
	for _, d := range []Dialect{DialectLegacy, DialectModern} {
		cs, err := newClusterSchema(ms, d, "skewlens", "prod", 30)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		tables := 0
		for _, m := range ms {
			stmts, err := m.Render(d, "skewlens", 30)
			if err != nil {
				t.Fatal(err)
			}
			for _, stmt := range stmts {
				out, err := cs.rewrite(stmt)
				if err != nil {
					t.Fatalf("%s migration %04d: %v", d, m.Version, err)
				}
				if strings.HasPrefix(stmt, "INSERT INTO") {
					// A copy runs as it is, through the Distributed tables.
					if len(out) != 1 || out[0] != stmt {
						t.Errorf("%s %04d: copy rewritten to %q", d, m.Version, out)
					}
					continue
				}
				for _, o := range out {
					if !strings.Contains(o, " ON CLUSTER `prod`") {
						t.Errorf("%s %04d: no ON CLUSTER in %q", d, m.Version, firstLine(o))
					}
				}
				if !strings.HasPrefix(stmt, "CREATE TABLE") {
					continue
				}
				tables++
				rm := replicated.FindStringSubmatch(out[0])
				if rm == nil {
					t.Errorf("%s %04d: not replicated: %s", d, m.Version, out[0])
					continue
				}
				if replacing := strings.Contains(stmt, "ReplacingMergeTree("); replacing != (rm[1] != "") {
					t.Errorf("%s %s: the Replicated engine changed the dedup: %s", d, rm[2], out[0])
				}
				key := "cityHash64(job_id)"
				if rm[2] == "schema_migrations" {
					key = "rand()"
				}
				want := "CREATE TABLE IF NOT EXISTS `skewlens`.`" + rm[2] + "` ON CLUSTER `prod` AS `skewlens`.`" + rm[2] +
					"_local` ENGINE = Distributed('prod', 'skewlens', '" + rm[2] + "_local', " + key + ")"
				if len(out) != 2 || out[1] != want {
					t.Errorf("%s %s: Distributed table %q, want %q", d, rm[2], out[1:], want)
				}
			}
		}
		if tables < 10 {
			t.Errorf("%s: only %d tables rewritten", d, tables)
		}
	}
}
