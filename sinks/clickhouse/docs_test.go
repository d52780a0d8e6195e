package clickhouse

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/internal/testenv/chtest"
)

// docQuery is one ```sql block of docs/queries.md.
type docQuery struct {
	Heading string  // the nearest heading above the block
	Line    int     // 1-based line of the block's first SQL line
	Dialect Dialect // "" when the block applies to both dialects
	SQL     string
}

// Name identifies the query in test output.
func (q docQuery) Name() string {
	d := "both"
	if q.Dialect != "" {
		d = string(q.Dialect)
	}
	return fmt.Sprintf("%s [%s, line %d]", q.Heading, d, q.Line)
}

// parseDocQueries returns the ```sql blocks of a markdown text. A block
// whose first line is `-- dialect: legacy` or `-- dialect: modern` is for
// that dialect only.
func parseDocQueries(text string) ([]docQuery, error) {
	var (
		qs      []docQuery
		heading string
		in      bool
		cur     docQuery
		body    strings.Builder
	)
	sc := bufio.NewScanner(strings.NewReader(text))
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		t := strings.TrimSpace(l)
		switch {
		case !in && strings.HasPrefix(t, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(t, "#"))
		case !in && t == "```sql":
			in = true
			cur = docQuery{Heading: heading, Line: line + 1}
			body.Reset()
		case in && t == "```":
			in = false
			cur.SQL = strings.TrimSpace(body.String())
			if cur.SQL == "" {
				return nil, fmt.Errorf("line %d: empty sql block", cur.Line)
			}
			first, _, _ := strings.Cut(cur.SQL, "\n")
			if d, ok := strings.CutPrefix(strings.TrimSpace(first), "-- dialect:"); ok {
				cur.Dialect = Dialect(strings.TrimSpace(d))
				if cur.Dialect != DialectLegacy && cur.Dialect != DialectModern {
					return nil, fmt.Errorf("line %d: unknown dialect %q", cur.Line, cur.Dialect)
				}
			}
			qs = append(qs, cur)
		case in:
			body.WriteString(l)
			body.WriteByte('\n')
		}
	}
	if in {
		return nil, fmt.Errorf("line %d: unterminated sql block", cur.Line)
	}
	return qs, sc.Err()
}

// docQueriesFor reads docs/queries.md and returns the queries for d, with
// the database skewlens renamed to db.
func docQueriesFor(t *testing.T, d Dialect, db string) []docQuery {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(chtest.RepoRoot(), "docs", "queries.md"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := parseDocQueries(string(text))
	if err != nil {
		t.Fatalf("docs/queries.md: %v", err)
	}
	var qs []docQuery
	for _, q := range all {
		if q.Dialect != "" && q.Dialect != d {
			continue
		}
		q.SQL = strings.NewReplacer("skewlens.", db+".", "'skewlens'", "'"+db+"'").Replace(q.SQL)
		qs = append(qs, q)
	}
	return qs
}

func TestParseDocQueries(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    []docQuery
		wantErr bool
	}{
		{
			name: "headings and dialects",
			text: "# A\n\n```sql\nSELECT 1\n```\n\n## B\n```sql\n-- dialect: legacy\nSELECT 2\n```\n```sql\n-- dialect: modern\nSELECT 3\n```\n```sh\nls\n```\n",
			want: []docQuery{
				{Heading: "A", Line: 4, SQL: "SELECT 1"},
				{Heading: "B", Line: 9, Dialect: DialectLegacy, SQL: "-- dialect: legacy\nSELECT 2"},
				{Heading: "B", Line: 13, Dialect: DialectModern, SQL: "-- dialect: modern\nSELECT 3"},
			},
		},
		{name: "unterminated", text: "```sql\nSELECT 1\n", wantErr: true},
		{name: "empty", text: "```sql\n```\n", wantErr: true},
		{name: "bad dialect", text: "```sql\n-- dialect: pg\nSELECT 1\n```\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDocQueries(tt.text)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestDocQueriesShape checks docs/queries.md without a server: at least 12
// queries per dialect, every heading with a query, no query parameters,
// no topK, and every dialect-specific block paired with the other dialect
// under the same heading.
func TestDocQueriesShape(t *testing.T) {
	for _, d := range []Dialect{DialectLegacy, DialectModern} {
		qs := docQueriesFor(t, d, "skewlens")
		if len(qs) < 12 {
			t.Errorf("%s: %d queries, want at least 12", d, len(qs))
		}
		headings := map[string]int{}
		for _, q := range qs {
			headings[q.Heading]++
			if strings.Contains(q.SQL, "{") {
				t.Errorf("%s: uses a query parameter placeholder", q.Name())
			}
			if strings.Contains(strings.ToLower(q.SQL), "topk") {
				t.Errorf("%s: uses topK", q.Name())
			}
		}
		for h, n := range headings {
			if n != 1 {
				t.Errorf("%s: heading %q has %d queries for this dialect, want 1", d, h, n)
			}
		}
	}
}
