package retry

import "time"

// The presets are the retry policies of skewlens, named for what they
// pace: a component takes the one that fits its operation (a Config
// field of type Policy defaults to one), and no other file states
// backoff numbers. Treat them as constants: copy one to change a field.
var (
	// Pipeline paces the running pipeline's Kafka and sink calls and its waits for brokers and topics, until their context ends.
	Pipeline = Policy{MaxRetries: Unlimited, MinBackoff: 50 * time.Millisecond, MaxBackoff: 5 * time.Second}
	// Setup paces preparatory steps that give up in the end: ClickHouse's connection and migrations, the plans topic's creation and reading.
	Setup = Policy{MaxRetries: 10, MinBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second}
	// Request paces a store call answering an API request, which the request's timeout bounds as well.
	Request = Policy{MaxRetries: 5, MinBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second}
	// Delivery paces the redelivery of queued alerts to a notifier, until delivered and slowly, as an outage may be long.
	Delivery = Policy{MaxRetries: Unlimited, MinBackoff: time.Second, MaxBackoff: 30 * time.Second}
)
