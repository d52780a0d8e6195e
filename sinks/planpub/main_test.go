package planpub

import (
	"testing"

	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }
