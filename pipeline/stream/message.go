package stream

import "time"

// Message is one record of the source: where it was read, and what it
// holds. It is the runner's own type, so that no Kafka client is part of
// its API (kafkasrc converts).
type Message struct {
	Topic     string
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte
	// Time is the record's timestamp: the event time of lines that carry
	// none.
	Time    time.Time
	Headers []Header
	// Generation is the consumer-group generation the message was read
	// in (GroupSource; 0 for other sources). Commit takes it back: a
	// source refuses to commit for a generation that ended.
	Generation int64
}

// Header is one record header, kept for dead letters.
type Header struct {
	Key   string
	Value []byte
}

// Partition names one partition of a consumed topic.
type Partition struct {
	Topic string
	ID    int
}
