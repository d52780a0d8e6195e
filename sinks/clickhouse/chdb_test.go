package clickhouse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// The modern dialect is checked against chDB, the in-process ClickHouse
// (a current release), because no current server can be installed here.
// chDB's Go binding panics at start-up when libchdb.so is missing, so this
// test binary never links it: it installs the library with
// deploy/clickhouse/install-chdb.sh, builds the small program
// internal/chdbexec and runs it with CHDB_LIB_PATH set, sending SQL
// statements as JSON lines and reading one result per statement.

// chdbRequest and chdbResponse mirror internal/chdbexec.
type chdbRequest struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

type chdbResponse struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Output string `json:"output"`
	Error  string `json:"error"`
}

// installChDB returns the path of libchdb.so, installing it if needed.
// CHDB_LIB_PATH, when set, wins.
func installChDB(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs chDB (npm and network to install it); skipped under -short")
	}
	if p := os.Getenv("CHDB_LIB_PATH"); p != "" {
		return p
	}
	script := filepath.Join(chtest.RepoRoot(), "deploy", "clickhouse", "install-chdb.sh")
	var stderr bytes.Buffer
	cmd := exec.Command(script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("install-chdb.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// buildChdbExec builds internal/chdbexec into a temporary folder.
func buildChdbExec(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the chDB check builds a helper and needs the go command on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "chdbexec")
	cmd := exec.Command(goBin, "build", "-o", bin, "./sinks/clickhouse/internal/chdbexec")
	cmd.Dir = chtest.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build chdbexec: %v\n%s", err, out)
	}
	return bin
}

// runChDB runs the requests in one chDB session and returns the
// responses by name.
func runChDB(t *testing.T, lib, bin string, reqs []chdbRequest) map[string]chdbResponse {
	t.Helper()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, r := range reqs {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	reqFile := filepath.Join(t.TempDir(), "requests.jsonl")
	if err := os.WriteFile(reqFile, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-path", filepath.Join(t.TempDir(), "chdb"), "-requests", reqFile)
	// TZ=UTC: today() and toDate() must agree with the fixtures' UTC dates.
	cmd.Env = append(os.Environ(), "CHDB_LIB_PATH="+lib, "TZ=UTC")
	cmd.Stdin = nil // /dev/null: chDB would read INSERT data from stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chdbexec: %v\nstderr: %s", err, tailLines(stderr.String(), 30))
	}
	res := map[string]chdbResponse{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var r chdbResponse
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("chdbexec output: %v: %s", err, sc.Text())
		}
		res[r.Name] = r
	}
	if len(res) != len(reqs) {
		t.Fatalf("chdbexec answered %d of %d requests; stderr: %s", len(res), len(reqs), tailLines(stderr.String(), 30))
	}
	return res
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// findingRows maps fs to the rows of each table, as the Writer would at
// version, inserted at now.
func findingRows(t *testing.T, fs []skew.Finding, version uint64, now time.Time) tableRows {
	t.Helper()
	rows := tableRows{}
	for i := range fs {
		if err := mapFinding(rows, &fs[i], version, now); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

// chdbBatch is the requests one chdbexec run answers, in order.
type chdbBatch []chdbRequest

// add appends one named statement.
func (b *chdbBatch) add(name, sql string) { *b = append(*b, chdbRequest{Name: name, SQL: sql}) }

// migrate adds the database db and every migration in the modern
// dialect; suffix tells the requests of a second pass apart.
func (b *chdbBatch) migrate(t *testing.T, db, suffix string) {
	t.Helper()
	b.add("create database"+suffix, "CREATE DATABASE IF NOT EXISTS `"+db+"`")
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		stmts, err := m.Render(DialectModern, db, DefaultConfig().TTLDays)
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range stmts {
			b.add(fmt.Sprintf("migration %04d statement %d%s", m.Version, i+1, suffix), st)
		}
	}
}

// insert adds an INSERT of rows (in cols' order) into db.table. chDB
// turns async inserts on, which cannot take inline data.
func (b *chdbBatch) insert(t *testing.T, name, db, table string, cols []string, rows []row) {
	t.Helper()
	b.add(name, "INSERT INTO `"+db+"`.`"+table+"` ("+strings.Join(cols, ", ")+") SETTINGS async_insert = 0 FORMAT JSONEachRow\n"+
		jsonEachRow(t, cols, rows))
}

// jsonEachRow encodes rows for INSERT ... FORMAT JSONEachRow: times as
// epoch seconds, dates (columns named *_date) as YYYY-MM-DD.
func jsonEachRow(t *testing.T, cols []string, rows []row) string {
	t.Helper()
	var b strings.Builder
	for _, r := range rows {
		obj := make(map[string]any, len(cols))
		for i, c := range cols {
			v := r[i]
			if tm, ok := v.(time.Time); ok {
				if strings.HasSuffix(c, "_date") {
					v = tm.UTC().Format(time.DateOnly)
				} else {
					v = tm.Unix()
				}
			}
			obj[c] = v
		}
		line, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestModernDialectChDB(t *testing.T) {
	t.Parallel()
	lib := installChDB(t)
	bin := buildChdbExec(t)
	const db = "skewlens"

	var reqs chdbBatch
	add := reqs.add
	add("version", "SELECT version()")
	// Twice, as Migrate would run the ledger and a re-applied migration.
	for pass := 0; pass < 2; pass++ {
		reqs.migrate(t, db, fmt.Sprintf(" pass %d", pass))
	}

	// The fixtures, written twice (a crash replay).
	now := time.Now()
	fs := fixtures(now)
	rows := findingRows(t, fs, 100, now)
	for pass := 0; pass < 2; pass++ {
		for _, table := range tableOrder() {
			reqs.insert(t, fmt.Sprintf("insert %s pass %d", table, pass), db, table, insertColumns(table), rows[table])
		}
	}
	for _, table := range tableOrder() {
		add("count "+table, "SELECT count() FROM `"+db+"`.`"+table+"` FINAL")
	}
	// The incidents of the fixtures, twice (a replay).
	changes, final := incidentFixtures(t, fs)
	var irows []row
	for i := range changes {
		r, err := incidentRow(&changes[i], now)
		if err != nil {
			t.Fatal(err)
		}
		irows = append(irows, r)
	}
	for pass := 0; pass < 2; pass++ {
		reqs.insert(t, fmt.Sprintf("insert incidents pass %d", pass), db, tableIncidents, incidentColumns(), irows)
	}
	add("count incidents", "SELECT count() FROM `"+db+"`.`"+tableIncidents+"` FINAL")
	itable := "`" + db + "`.`" + tableIncidents + "`"
	seenQ, openQ := loadIncidentsQueries(itable)
	add("load incidents seen", seenQ)
	add("load incidents open", inlineArgs(t, openQ, []any{incident.StateOpen}))
	readQ, readArgs := incidentsQuery(itable, servestore.IncidentsQuery{JobID: final[0].JobID, State: final[0].State, Since: time.UnixMilli(final[0].Start)})
	add("read incidents", inlineArgs(t, readQ, readArgs))
	qs := docQueriesFor(t, DialectModern, db)
	for _, q := range qs {
		add("doc "+q.Name(), q.SQL)
	}

	res := runChDB(t, lib, bin, reqs)
	t.Logf("chDB version %s", strings.TrimSpace(res["version"].Output))
	for _, r := range reqs {
		got := res[r.Name]
		if !got.OK {
			t.Errorf("%s: %s\n%s", r.Name, got.Error, firstLines(r.SQL, 30))
		}
	}
	counts := fixtureCounts(fs)
	for _, table := range tableOrder() {
		if got := strings.TrimSpace(res["count "+table].Output); got != fmt.Sprint(counts[table]) {
			t.Errorf("%s: %s rows with FINAL after a replay, want %d", table, got, counts[table])
		}
	}
	if got := strings.TrimSpace(res["count incidents"].Output); got != fmt.Sprint(len(final)) {
		t.Errorf("incidents: %s rows with FINAL after a replay, want %d", got, len(final))
	}
	wantSeen, wantOpen, wantRead := map[string]int64{}, 0, 0
	for _, in := range final {
		wantSeen[in.JobID] = max(wantSeen[in.JobID], in.LastSeen)
		if in.State == incident.StateOpen {
			wantOpen++
		}
		if in.JobID == final[0].JobID && in.State == final[0].State && in.LastSeen >= final[0].Start {
			wantRead++
		}
	}
	if got := strings.Count(res["load incidents seen"].Output, "\n"); got != len(wantSeen) {
		t.Errorf("load incidents seen: %d rows, want %d\n%s", got, len(wantSeen), res["load incidents seen"].Output)
	}
	if got := strings.Count(res["load incidents open"].Output, "\n"); got != wantOpen {
		t.Errorf("load incidents open: %d rows, want %d", got, wantOpen)
	}
	if got := strings.Count(res["read incidents"].Output, "\n"); got != wantRead || wantRead == 0 {
		t.Errorf("read incidents: %d rows, want %d", got, wantRead)
	}
	// The documented results are the same as on the legacy server.
	expect := docExpect(fs)
	for h, rows := range incidentDocExpect(final, true) {
		expect[h] = rows
	}
	for _, q := range qs {
		want, ok := expect[q.Heading]
		if !ok || want == nil {
			continue
		}
		var lines []string
		for _, w := range want {
			lines = append(lines, strings.Join(w, "\t"))
		}
		if got := strings.TrimRight(res["doc "+q.Name()].Output, "\n"); got != strings.Join(lines, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", q.Name(), got, strings.Join(lines, "\n"))
		}
	}
}

// firstLines returns at most n lines and 2000 bytes of s.
func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	out := strings.Join(lines, "\n")
	if len(out) > 2000 {
		out = out[:2000] + "…"
	}
	return out
}

// TestModernClusterDDLChDB parses the cluster form of every modern
// migration statement with chDB's own parser (formatQuery): chDB has no
// ZooKeeper or cluster to run them on, so this checks the syntax of the
// statements a current server would run, and that the parser read the
// Replicated engine, the ON CLUSTER clause and the Distributed table.
func TestModernClusterDDLChDB(t *testing.T) {
	t.Parallel()
	lib := installChDB(t)
	bin := buildChdbExec(t)
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := newClusterSchema(ms, DialectModern, "skewlens", "prod", DefaultConfig().TTLDays)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []chdbRequest
	literal := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	add := func(name, stmt string) {
		reqs = append(reqs, chdbRequest{Name: name, SQL: "SELECT formatQuery('" + literal.Replace(stmt) + "')"})
	}
	add("create database", "CREATE DATABASE IF NOT EXISTS `skewlens` ON CLUSTER `prod`")
	for _, m := range ms {
		stmts, err := m.Render(DialectModern, "skewlens", DefaultConfig().TTLDays)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range stmts {
			out, err := cs.rewrite(s)
			if err != nil {
				t.Fatal(err)
			}
			for j, o := range out {
				add(fmt.Sprintf("migration %04d statement %d.%d", m.Version, i+1, j+1), o)
			}
		}
	}
	res := runChDB(t, lib, bin, reqs)
	for _, r := range reqs {
		got := res[r.Name]
		if !got.OK {
			t.Errorf("%s: chDB cannot parse it: %s\n%s", r.Name, got.Error, r.SQL)
			continue
		}
		// formatQuery prints the statement back as the server parsed it.
		// A copy (INSERT ... SELECT) runs through the Distributed tables.
		if !strings.Contains(got.Output, "ON CLUSTER prod") && !strings.HasPrefix(got.Output, "INSERT INTO") {
			t.Errorf("%s: parsed without ON CLUSTER: %s", r.Name, got.Output)
		}
		if strings.Contains(r.SQL, "ENGINE = Replicated") && !strings.Contains(got.Output, "ENGINE = Replicated") {
			t.Errorf("%s: parsed without the Replicated engine: %s", r.Name, got.Output)
		}
	}
}
