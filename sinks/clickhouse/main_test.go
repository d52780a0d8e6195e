package clickhouse

import (
	"testing"

	"github.com/skewlens/skewlens/internal/testenv/chtest"
)

// TestMain stops the ClickHouse server chtest starts, after all tests.
func TestMain(m *testing.M) { chtest.Main(m) }
