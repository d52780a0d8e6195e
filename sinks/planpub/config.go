package planpub

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/retry"
)

// Config configures a Publisher and the override poller. Its tags
// declare each setting once (internal/knob); New also reads a zero field
// as its default.
type Config struct {
	// Brokers are the bootstrap brokers, host:port. Required.
	Brokers []string `kong:"-"`
	// Topic is the compacted plans topic.
	Topic string `name:"plans-topic" default:"skewlens.salting-plans" zero:"default" group:"Plans" help:"Compacted Kafka topic the salting plans are published to (docs/salting-plans.md); empty: not published."`
	// Partitions is the partition count EnsureTopic creates the topic
	// with: plans are few, and one partition keeps them in one total
	// order. An existing topic is left as it is.
	Partitions int `kong:"-" default:"1" range:"[1,]"`
	// ReplicationFactor is the replication EnsureTopic creates the topic
	// with; -1 is the broker's default.replication.factor.
	ReplicationFactor int `kong:"-" default:"-1" zero:"default" range:"[-1,32767]"`
	// TopicConfigs are further topic configurations EnsureTopic creates
	// the topic with, e.g. min.cleanable.dirty.ratio or segment.ms to
	// compact sooner. cleanup.policy is always compact and may not be set
	// here.
	TopicConfigs map[string]string `kong:"-"`
	// DialTimeout bounds connecting to a broker.
	DialTimeout time.Duration `kong:"-" default:"5s" range:"(0s,]"`
	// WriteTimeout bounds one produce or admin request.
	WriteTimeout time.Duration `kong:"-" default:"10s" range:"(0s,]"`
	// Retry is the policy of EnsureTopic and Load, which retry retryable
	// errors themselves (Publish makes one attempt: its callers retry). A
	// zero Policy means the default; in any other, MaxRetries is taken as
	// it is (retry.Policy's meaning: 0 never retries, retry.Unlimited
	// retries until the context ends) and a zero backoff field is its
	// default: to never retry, set Retry.MaxRetries to 0 on
	// DefaultConfig().
	Retry retry.Policy `kong:"-" default:"setup"`
	// MaxMessageBytes is the largest message (key, value and headers)
	// Publish sends, and the largest batch: just under the broker's
	// default message.max.bytes of 1048588. A larger plan is a permanent
	// error (retry.IsPermanent).
	MaxMessageBytes int `kong:"-" default:"1000000" range:"[1024,]"`
	// OverridePoll is how often the override poller reads operators'
	// overrides: they take effect within it.
	OverridePoll time.Duration `name:"override-poll" default:"5s" range:"(0s,]" group:"Plans" help:"How often operators' plan overrides (made through skewlens serve) are read from ClickHouse."`
}

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

// DefaultConfig returns the defaults (Brokers, required, stays empty).
func DefaultConfig() Config { return knob.Defaults[Config]() }

// withDefaults returns c with every zero field set to its default (Retry
// as retry.Policy.OrDefault says). New applies it, so a zero field means
// its default.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	c.Retry = c.Retry.OrDefault(DefaultConfig().Retry)
	return c
}

// ready is Validate and what New needs besides: the brokers (a command
// line checks its settings before it has them).
func (c Config) ready() error {
	if len(c.Brokers) == 0 {
		return errors.Join(c.Validate(), errors.New("planpub config: brokers: none given"))
	}
	return c.Validate()
}

// Validate reports every invalid field. It changes nothing; New fills the
// zero fields with their defaults before it validates.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
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
	if err := c.Retry.Validate(); c.Retry != (retry.Policy{}) && err != nil { // zero: the default
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("planpub config: %w", err)
	}
	return nil
}
