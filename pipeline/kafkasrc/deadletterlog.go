package kafkasrc

import (
	"log/slog"
	"sync"
	"time"
)

// deadLetterLogEvery is how often at most the log says, per source topic
// and reason, that lines were dead-lettered: a stream of bad lines (a
// producer writing another format, say) gives a line every 30 s with the
// count, not a line per record.
const deadLetterLogEvery = 30 * time.Second

// deadLetterLog logs the dead letters written, without flooding: per
// source topic and reason, the first at once, then at most one line per
// deadLetterLogEvery, with how many there were since the line before and
// in all. flush logs what is still uncounted (Close). Its map holds one
// entry per topic and reason, both from small fixed sets (the consumed
// topics; reasons are metric label values). Safe for concurrent use.
type deadLetterLog struct {
	log   *slog.Logger
	to    string // the dead-letter topic
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	keys map[deadLetterKey]*deadLetterCount
}

type deadLetterKey struct{ topic, reason string }

type deadLetterCount struct {
	logged  time.Time // when the last line about this key was written
	pending int64     // dead letters since then
	total   int64
	// The newest one's place and error, as an example.
	partition int
	offset    int64
	detail    string
}

func newDeadLetterLog(log *slog.Logger, deadLetterTopic string) *deadLetterLog {
	return &deadLetterLog{log: log, to: deadLetterTopic, every: deadLetterLogEvery, now: time.Now, keys: map[deadLetterKey]*deadLetterCount{}}
}

// sent counts one dead letter written, from topic/partition@offset for
// reason, and logs when its key's line is due.
func (l *deadLetterLog) sent(topic string, partition int, offset int64, reason, detail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := deadLetterKey{topic, reason}
	c := l.keys[k]
	if c == nil {
		c = &deadLetterCount{}
		l.keys[k] = c
	}
	c.pending++
	c.total++
	c.partition, c.offset, c.detail = partition, offset, detail
	if now := l.now(); c.logged.IsZero() || now.Sub(c.logged) >= l.every {
		l.write(k, c)
		c.logged = now
	}
}

// flush logs the dead letters no line has counted yet.
func (l *deadLetterLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, c := range l.keys {
		if c.pending > 0 {
			l.write(k, c)
		}
	}
}

// write logs k's line and resets its count. l.mu is held.
func (l *deadLetterLog) write(k deadLetterKey, c *deadLetterCount) {
	const maxDetail = 300 // an error may quote a whole line
	detail := c.detail
	if len(detail) > maxDetail {
		detail = detail[:maxDetail] + "…"
	}
	l.log.Warn("lines dead-lettered",
		"count", c.pending, "total", c.total, "reason", k.reason, "topic", k.topic,
		"dead_letter_topic", l.to, "last_partition", c.partition, "last_offset", c.offset, "last_err", detail,
		"at_most_every", l.every)
	c.pending = 0
}
