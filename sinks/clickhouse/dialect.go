package clickhouse

import (
	"fmt"
	"strconv"
	"strings"
)

// Dialect names one of the two SQL dialects of the schema.
type Dialect string

const (
	// DialectLegacy is for ClickHouse before 20.3, e.g. 18.16 from Debian:
	// no LowCardinality, codecs, TTL, DateTime64 or Map.
	DialectLegacy Dialect = "legacy"
	// DialectModern is for ClickHouse 20.3 and later (and chDB): adds
	// LowCardinality columns, compression codecs and a TTL.
	DialectModern Dialect = "modern"
)

// modernSince is the first release the modern dialect needs: 20.3 is the
// first LTS release with LowCardinality on by default, column codecs, TTL
// and ttl_only_drop_parts.
const (
	modernSinceMajor = 20
	modernSinceMinor = 3
)

// parseServerVersion reads the major and minor numbers of a version string
// as SELECT version() returns it, e.g. "18.16.1" or "26.5.1.1".
func parseServerVersion(v string) (major, minor int, err error) {
	parts := strings.Split(strings.TrimSpace(v), ".")
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("server version %q: want MAJOR.MINOR[...]", v)
	}
	major, err = strconv.Atoi(parts[0])
	if err != nil || major < 0 {
		return 0, 0, fmt.Errorf("server version %q: bad major number", v)
	}
	// Some builds append a suffix to the minor part ("3-lts").
	minorText := parts[1]
	if i := strings.IndexFunc(minorText, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorText = minorText[:i]
	}
	minor, err = strconv.Atoi(minorText)
	if err != nil || minor < 0 {
		return 0, 0, fmt.Errorf("server version %q: bad minor number", v)
	}
	return major, minor, nil
}

// dialectFor picks the dialect for a server version: modern only when the
// server supports every modern feature. forced, when not empty, wins.
func dialectFor(version string, forced Dialect) (Dialect, error) {
	if forced != "" {
		return forced, nil
	}
	major, minor, err := parseServerVersion(version)
	if err != nil {
		return "", err
	}
	if major > modernSinceMajor || (major == modernSinceMajor && minor >= modernSinceMinor) {
		return DialectModern, nil
	}
	return DialectLegacy, nil
}
