package planpub

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
)

// Config configures a Publisher. DefaultConfig returns it with the
// defaults given in the field comments; New also reads a zero field as its
// default.
type Config struct {
	// Brokers are the bootstrap brokers, host:port. Required.
	Brokers []string
	// Topic is the compacted plans topic (default
	// "skewlens.salting-plans").
	Topic string
	// Partitions is the partition count EnsureTopic creates the topic
	// with (default 1: plans are few, and one partition keeps them in one
	// total order). An existing topic is left as it is.
	Partitions int
	// ReplicationFactor is the replication EnsureTopic creates the topic
	// with (default -1: the broker's default.replication.factor).
	ReplicationFactor int
	// TopicConfigs are further topic configurations EnsureTopic creates
	// the topic with, e.g. min.cleanable.dirty.ratio or segment.ms to
	// compact sooner (default none). cleanup.policy is always compact and
	// may not be set here.
	TopicConfigs map[string]string
	// DialTimeout bounds connecting to a broker (default 5s).
	DialTimeout time.Duration
	// WriteTimeout bounds one produce or admin request (default 10s).
	WriteTimeout time.Duration
	// Retry is the policy of EnsureTopic and Load, which retry retryable
	// errors themselves (Publish makes one attempt: its callers retry).
	// Default retry.Setup. A zero Policy means the default; in any other,
	// MaxRetries is taken as it is (retry.Policy's
	// meaning: 0 never retries, retry.Unlimited retries until the context
	// ends) and a zero backoff field is its default: to never retry, set
	// Retry.MaxRetries to 0 on DefaultConfig().
	Retry retry.Policy
	// MaxMessageBytes is the largest message (key, value and headers)
	// Publish sends, and the largest batch (default 1000000, just under
	// the broker's default message.max.bytes of 1048588). A larger plan
	// is a permanent error (retry.IsPermanent).
	MaxMessageBytes int
}

// Defaults, used by DefaultConfig and named for the tests.
const (
	DefaultTopic             = "skewlens.salting-plans"
	DefaultPartitions        = 1
	DefaultReplicationFactor = -1 // the broker's default.replication.factor
	DefaultDialTimeout       = 5 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
	DefaultMaxMessageBytes   = 1000000
)

// validTopic reports whether s is a legal Kafka topic name: 1 to 249
// characters of [a-zA-Z0-9._-], not "." or "..".
func validTopic(s string) bool {
	if s == "" || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// DefaultConfig returns a Config with every default filled in (Brokers,
// required, stays empty): the values named by the constants above, which
// the field comments state in words. Callers start from it and override
// what they configure.
func DefaultConfig() Config {
	return Config{
		Topic:             DefaultTopic,
		Partitions:        DefaultPartitions,
		ReplicationFactor: DefaultReplicationFactor,
		DialTimeout:       DefaultDialTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		Retry:             retry.Setup,
		MaxMessageBytes:   DefaultMaxMessageBytes,
	}
}

// withDefaults returns c with every zero field set to its value in
// DefaultConfig (Retry as retry.Policy.OrDefault says). New applies it,
// so a zero field means its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.Topic = cmp.Or(c.Topic, d.Topic)
	c.Partitions = cmp.Or(c.Partitions, d.Partitions)
	c.ReplicationFactor = cmp.Or(c.ReplicationFactor, d.ReplicationFactor)
	c.DialTimeout = cmp.Or(c.DialTimeout, d.DialTimeout)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, d.WriteTimeout)
	c.Retry = c.Retry.OrDefault(d.Retry)
	c.MaxMessageBytes = cmp.Or(c.MaxMessageBytes, d.MaxMessageBytes)
	return c
}

// Validate reports every invalid field. It changes nothing; New fills the
// zero fields with their defaults before it validates.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("brokers: none given"))
	}
	for _, b := range c.Brokers {
		host, port, err := net.SplitHostPort(b)
		p, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || p <= 0 || p > 65535 {
			errs = append(errs, fmt.Errorf("broker %q: must be host:port", b))
		}
	}
	if !validTopic(c.Topic) {
		errs = append(errs, fmt.Errorf("topic %q: must be 1 to 249 characters of [a-zA-Z0-9._-]", c.Topic))
	}
	if c.Partitions < 1 {
		errs = append(errs, fmt.Errorf("partitions %d: must be positive", c.Partitions))
	}
	if c.ReplicationFactor < -1 || c.ReplicationFactor > 32767 {
		errs = append(errs, fmt.Errorf("replication factor %d: must be positive or -1 (broker default)", c.ReplicationFactor))
	}
	names := make([]string, 0, len(c.TopicConfigs))
	for k := range c.TopicConfigs {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		switch {
		case k == "cleanup.policy":
			errs = append(errs, errors.New("topic configs: cleanup.policy is always compact"))
		case k == "" || strings.ContainsAny(k, " \t\r\n="):
			errs = append(errs, fmt.Errorf("topic configs: bad name %q", k))
		}
	}
	if c.DialTimeout < 0 || c.WriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("timeouts %s, %s: must be positive", c.DialTimeout, c.WriteTimeout))
	}
	if err := c.Retry.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxMessageBytes < 1024 {
		errs = append(errs, fmt.Errorf("max message bytes %d: must be at least 1024", c.MaxMessageBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("planpub config: %w", err)
	}
	return nil
}
