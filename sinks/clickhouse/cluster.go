package clickhouse

import (
	"fmt"
	"regexp"
	"strings"
)

// On a cluster (Config.Cluster), the schema is the same tables under the
// same names, so that queries, docs/queries.md and the rest of this
// package do not change, but each is made of two:
//
//   - <table>_local on every server, created ON CLUSTER, with the
//     Replicated variant of the table's engine; ZooKeeper path
//     /clickhouse/tables/{shard}/<database>/<table>_local, replica name
//     {replica}, both from each server's macros;
//   - <table>, a Distributed table over the <table>_local tables of the
//     cluster, which skewlens reads and writes, sharded by
//     cityHash64(job_id), or at random (rand()) for a table without job_id,
//     allowed only with an engine that deduplicates nothing.
//
// Why: docs/architecture.md, Design notes: ClickHouse on a cluster.

// clusterSchema rewrites the rendered statements of the migrations into
// their cluster form. Build it with newClusterSchema.
type clusterSchema struct {
	database, cluster string
	// shardKeys maps each table of the schema, by its name without
	// _local, to its sharding key, from its CREATE TABLE statement in any
	// migration: a later migration that alters the table recreates its
	// Distributed table with that key.
	shardKeys map[string]string
}

var (
	createDatabaseRE = regexp.MustCompile("(?is)^CREATE\\s+DATABASE\\s+IF\\s+NOT\\s+EXISTS\\s+(`[^`]+`|\\w+)$")
	createTableRE    = regexp.MustCompile("(?is)^CREATE\\s+TABLE\\s+IF\\s+NOT\\s+EXISTS\\s+(`[^`]+`|\\w+)\\.`?(\\w+)`?\\s*\\(")
	alterTableRE     = regexp.MustCompile("(?is)^ALTER\\s+TABLE\\s+(`[^`]+`|\\w+)\\.`?(\\w+)`?\\s+(\\S.*)$")
	insertSelectRE   = regexp.MustCompile("(?is)^INSERT\\s+INTO\\s+(`[^`]+`|\\w+)\\.`?\\w+`?\\s*(\\([^)]*\\))?\\s*SELECT\\s")
	engineRE         = regexp.MustCompile(`(?is)\bENGINE\s*=\s*(ReplacingMergeTree|MergeTree)\b(\s*\(([^)]*)\))?`)
	jobIDColumnRE    = regexp.MustCompile(`(?m)^\s*job_id\s`)
)

// newClusterSchema reads the sharding key of every table the migrations
// create, in dialect d.
func newClusterSchema(ms []Migration, d Dialect, database, cluster string, ttlDays int) (*clusterSchema, error) {
	c := &clusterSchema{database: database, cluster: cluster, shardKeys: map[string]string{}}
	for _, m := range ms {
		stmts, err := m.Render(d, database, ttlDays)
		if err != nil {
			return nil, err
		}
		for _, stmt := range stmts {
			mt := createTableRE.FindStringSubmatch(stmt)
			if mt == nil {
				continue
			}
			key, err := shardKey(mt[2], stmt)
			if err != nil {
				return nil, fmt.Errorf("migration %04d: %w", m.Version, err)
			}
			c.shardKeys[mt[2]] = key
		}
	}
	return c, nil
}

// shardKey returns the sharding key of the Distributed table over table,
// created by stmt (see the comment at the top of this file).
func shardKey(table, stmt string) (string, error) {
	if jobIDColumnRE.MatchString(stmt) {
		return "cityHash64(job_id)", nil
	}
	if m := engineRE.FindStringSubmatch(stmt); m != nil && strings.EqualFold(m[1], "MergeTree") {
		return "rand()", nil
	}
	return "", fmt.Errorf("table %s: no job_id column to shard by on a cluster, and its engine deduplicates", table)
}

// quoted returns the backtick-quoted identifier s.
func quoted(s string) string { return "`" + s + "`" }

// onCluster returns the ON CLUSTER clause.
func (c *clusterSchema) onCluster() string { return " ON CLUSTER " + quoted(c.cluster) }

// local returns the quoted name of table's local (replicated) table.
func (c *clusterSchema) local(table string) string {
	return quoted(c.database) + "." + quoted(table+"_local")
}

// distributed returns the statements that create the Distributed table
// over table's local tables.
func (c *clusterSchema) distributed(table string) (string, error) {
	key, ok := c.shardKeys[table]
	if !ok {
		return "", fmt.Errorf("table %s: no migration creates it", table)
	}
	return "CREATE TABLE IF NOT EXISTS " + quoted(c.database) + "." + quoted(table) + c.onCluster() +
		" AS " + c.local(table) +
		" ENGINE = Distributed('" + c.cluster + "', '" + c.database + "', '" + table + "_local', " + key + ")", nil
}

// rewriteAll returns the cluster form of the rendered statements of one
// migration: each statement's (see rewrite), except that a Distributed
// table is dropped and created again once, after the migration's last
// ALTER of its table, rather than after each: every ON CLUSTER statement
// waits for each server of the cluster, and a migration that adds six
// columns would otherwise run eighteen of them.
func (c *clusterSchema) rewriteAll(stmts []string) ([]string, error) {
	var out, recreate []string
	seen := map[string]bool{}
	for _, stmt := range stmts {
		forms, err := c.rewrite(stmt)
		if err != nil {
			return nil, err
		}
		if m := alterTableRE.FindStringSubmatch(stmt); m != nil {
			if !seen[m[2]] {
				seen[m[2]] = true
				recreate = append(recreate, forms[1:]...)
			}
			forms = forms[:1]
		}
		out = append(out, forms...)
	}
	return append(out, recreate...), nil
}

// rewrite returns the cluster form of one rendered statement:
//   - CREATE DATABASE runs ON CLUSTER;
//   - CREATE TABLE t creates t_local ON CLUSTER with the Replicated
//     engine, then the Distributed table t over it;
//   - ALTER TABLE t alters t_local ON CLUSTER, then drops and creates the
//     Distributed table t again, AS the altered t_local, which loses
//     nothing; queries through t fail for the moment it is missing (why:
//     docs/architecture.md, Design notes: ClickHouse on a cluster);
//   - INSERT INTO t ... SELECT (a migration copying rows) runs as it is,
//     through the Distributed tables: it reads every shard and writes
//     each row to the shard of its job_id.
//
// Any other statement is an error, so that a new kind of migration
// statement cannot silently create a table on one server only.
func (c *clusterSchema) rewrite(stmt string) ([]string, error) {
	if m := createDatabaseRE.FindStringSubmatch(stmt); m != nil {
		return []string{stmt + c.onCluster()}, nil
	}
	if m := createTableRE.FindStringSubmatchIndex(stmt); m != nil {
		table := stmt[m[4]:m[5]]
		engines := engineRE.FindAllStringSubmatchIndex(stmt, -1)
		if len(engines) != 1 {
			return nil, fmt.Errorf("table %s: want one ENGINE = MergeTree or ReplacingMergeTree, found %d", table, len(engines))
		}
		e := engines[0]
		args := "'/clickhouse/tables/{shard}/" + c.database + "/" + table + "_local', '{replica}'"
		if e[6] >= 0 {
			if own := strings.TrimSpace(stmt[e[6]:e[7]]); own != "" {
				args += ", " + own
			}
		}
		create := "CREATE TABLE IF NOT EXISTS " + c.local(table) + c.onCluster() + " (" +
			stmt[m[1]:e[0]] + "ENGINE = Replicated" + stmt[e[2]:e[3]] + "(" + args + ")" + stmt[e[1]:]
		dist, err := c.distributed(table)
		if err != nil {
			return nil, err
		}
		return []string{create, dist}, nil
	}
	if m := alterTableRE.FindStringSubmatch(stmt); m != nil {
		table, rest := m[2], m[3]
		dist, err := c.distributed(table)
		if err != nil {
			return nil, err
		}
		return []string{
			"ALTER TABLE " + c.local(table) + c.onCluster() + " " + rest,
			"DROP TABLE IF EXISTS " + quoted(c.database) + "." + quoted(table) + c.onCluster(),
			dist,
		}, nil
	}
	if insertSelectRE.MatchString(stmt) {
		return []string{stmt}, nil
	}
	return nil, fmt.Errorf("statement %q: no cluster form (CREATE DATABASE, CREATE TABLE, ALTER TABLE and INSERT ... SELECT have one)", firstLine(stmt))
}
