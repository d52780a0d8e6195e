package retry

import (
	"fmt"
	"time"
)

// The presets are the retry policies of skewlens, named for what they
// pace: a component takes the one that fits its operation, and no other
// file states backoff numbers. A Config field of type Policy declares its
// default by the preset's name (internal/knob: default:"setup"), which
// UnmarshalText reads.

// Pipeline paces the running pipeline's Kafka and sink calls and its
// waits for brokers and topics, until their context ends.
func Pipeline() Policy {
	return Policy{MaxRetries: Unlimited, MinBackoff: 50 * time.Millisecond, MaxBackoff: 5 * time.Second}
}

// Setup paces preparatory steps that give up in the end: ClickHouse's
// connection and migrations, the plans topic's creation and reading.
func Setup() Policy {
	return Policy{MaxRetries: 10, MinBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second}
}

// Request paces a store call answering an API request, which the
// request's timeout bounds as well.
func Request() Policy {
	return Policy{MaxRetries: 5, MinBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second}
}

// Delivery paces the redelivery of queued alerts to a notifier, until
// delivered and slowly, as an outage may be long.
func Delivery() Policy {
	return Policy{MaxRetries: Unlimited, MinBackoff: time.Second, MaxBackoff: 30 * time.Second}
}

// presets names the presets, for UnmarshalText and MarshalText.
func presets() map[string]Policy {
	return map[string]Policy{"pipeline": Pipeline(), "setup": Setup(), "request": Request(), "delivery": Delivery()}
}

// UnmarshalText sets p to the preset named by text: pipeline, setup,
// request or delivery.
func (p *Policy) UnmarshalText(text []byte) error {
	pr, ok := presets()[string(text)]
	if !ok {
		return fmt.Errorf("retry policy %q: want pipeline, setup, request or delivery", text)
	}
	*p = pr
	return nil
}

// MarshalText writes the name of p's preset, or p's fields when it is
// none.
func (p Policy) MarshalText() ([]byte, error) {
	for name, pr := range presets() {
		if pr == p {
			return []byte(name), nil
		}
	}
	return fmt.Appendf(nil, "%d retries, %s..%s", p.MaxRetries, p.MinBackoff, p.MaxBackoff), nil
}
