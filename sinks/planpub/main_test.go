package planpub

import (
	"testing"

	"github.com/skewlens/skewlens/deploy/testenv/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }
