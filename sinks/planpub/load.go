package planpub

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/skew/plans"
)

// maxFetchBytes bounds one fetch of Load.
const maxFetchBytes = 16 << 20

// Load reads the plans topic from its first offset to the end it has when
// Load starts, and returns the latest plan of every task that has one (a
// tombstone removes the task's plan, and is returned as a retirement when
// it carries the version it retired), sorted by job and task: what the
// topic serves, for plans.Manager.Restore after a restart. Messages whose
// value is not a plan of the task in their key are skipped and logged,
// and returned among the refused, by the job their key names (the task's
// earlier plan, if any, stands: the jobs could not read the message
// either). Lineage messages (keys starting with LineagePrefix) are
// derived from the plans, not state: they are not returned (the PlanObservers
// read what they carry to tombstone stale ones, see PlanObserver.Resume).
// Retryable errors are retried like Publish's; Load blocks until it is
// done or ctx ends.
func (p *Publisher) Load(ctx context.Context) (plans.Stored, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return plans.Stored{}, permanent("load", ErrClosed)
	}
	latest := map[string]*record{}
	lineage := map[string]lineageRun{}
	var refused []plans.RefusedJob
	op := "load " + p.cfg.Topic
	err := p.retry(ctx, op, func(ctx context.Context) error {
		clear(latest)
		clear(lineage)
		refused = refused[:0]
		return p.load(ctx, latest, lineage, &refused)
	})
	if err != nil {
		return plans.Stored{}, err
	}
	p.lineage = lineage
	out := plans.Stored{Unreadable: refused}
	for _, r := range latest {
		switch {
		case r.plan != nil:
			out.Plans = append(out.Plans, *r.plan)
		case r.retired.Version > 0:
			out.Retired = append(out.Retired, r.retired)
		}
	}
	slices.SortFunc(out.Plans, func(a, b plans.Plan) int {
		return cmp.Or(cmp.Compare(a.JobID, b.JobID), cmp.Compare(a.TaskName, b.TaskName))
	})
	slices.SortFunc(out.Retired, func(a, b plans.RetiredTask) int {
		return cmp.Or(cmp.Compare(a.JobID, b.JobID), cmp.Compare(a.TaskName, b.TaskName))
	})
	return out, nil
}

// record is the latest message of a key: a plan, or a tombstone (with
// the retirement it carries, if any).
type record struct {
	plan    *plans.Plan
	retired plans.RetiredTask
}

// loadedLineage returns the lineage messages with a plan that the last
// Load read, by key. A PlanObserver calls it after the Load it resumes from.
func (p *Publisher) loadedLineage() map[string]lineageRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.lineage)
}

// load reads every partition into latest, and the lineage messages into
// lineage, by message key.
func (p *Publisher) load(ctx context.Context, latest map[string]*record, lineage map[string]lineageRun, refused *[]plans.RefusedJob) error {
	md, err := p.cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{p.cfg.Topic}})
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	var reqs []kafka.OffsetRequest
	for _, t := range md.Topics {
		if t.Name != p.cfg.Topic {
			continue
		}
		if t.Error != nil {
			return fmt.Errorf("metadata: %w", t.Error)
		}
		for _, pt := range t.Partitions {
			reqs = append(reqs, kafka.FirstOffsetOf(pt.ID), kafka.LastOffsetOf(pt.ID))
		}
	}
	if len(reqs) == 0 {
		return fmt.Errorf("metadata: %w", kafka.UnknownTopicOrPartition)
	}
	offs, err := p.cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{p.cfg.Topic: reqs}})
	if err != nil {
		return fmt.Errorf("list offsets: %w", err)
	}
	parts := offs.Topics[p.cfg.Topic]
	slices.SortFunc(parts, func(a, b kafka.PartitionOffsets) int { return a.Partition - b.Partition })
	for _, po := range parts {
		if po.Error != nil {
			return fmt.Errorf("list offsets of partition %d: %w", po.Partition, po.Error)
		}
		if err := p.loadPartition(ctx, po.Partition, po.FirstOffset, po.LastOffset, latest, lineage, refused); err != nil {
			return fmt.Errorf("partition %d: %w", po.Partition, err)
		}
	}
	return nil
}

// loadPartition reads offsets [first, end) of one partition into latest.
func (p *Publisher) loadPartition(ctx context.Context, partition int, first, end int64, latest map[string]*record, lineage map[string]lineageRun, refused *[]plans.RefusedJob) error {
	for off := first; off < end; {
		res, err := p.cl.Fetch(ctx, &kafka.FetchRequest{Topic: p.cfg.Topic, Partition: partition, Offset: off,
			MinBytes: 1, MaxBytes: maxFetchBytes, MaxWait: p.cfg.WriteTimeout / 2})
		if err != nil {
			return fmt.Errorf("fetch at %d: %w", off, err)
		}
		if res.Error != nil {
			return fmt.Errorf("fetch at %d: %w", off, res.Error)
		}
		next := off
		for res.Records != nil {
			r, err := res.Records.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("read at %d: %w", next, err)
			}
			if r.Offset < off || r.Offset >= end {
				continue // batches may start before the offset asked for
			}
			next = r.Offset + 1
			if job, err := p.loadRecord(r, latest, lineage); err != nil {
				p.log.Warn("planpub: skipping a message that is not a plan", "partition", partition, "offset", r.Offset, "err", err)
				if job != "" {
					*refused = append(*refused, plans.RefusedJob{JobID: job, Err: fmt.Errorf("partition %d, offset %d: %w", partition, r.Offset, err)})
				}
			}
		}
		if next == off {
			if res.HighWatermark <= off {
				return nil // compaction removed the rest
			}
			return fmt.Errorf("fetch at %d: no record below the high watermark %d", off, res.HighWatermark)
		}
		off = next
	}
	return nil
}

// loadRecord applies one message to latest, or a lineage message to
// lineage. It returns the job its key names (up to the first "/": job ids
// have none), also with an error; "" for a lineage message.
func (p *Publisher) loadRecord(r *kafka.Record, latest map[string]*record, lineage map[string]lineageRun) (string, error) {
	if r.Key == nil {
		return "", errors.New("no key")
	}
	key, err := io.ReadAll(r.Key)
	if err != nil {
		return "", fmt.Errorf("key: %w", err)
	}
	if IsLineageKey(key) {
		loadLineage(string(key), r.Value, lineage)
		return "", nil
	}
	job, task, _ := strings.Cut(string(key), "/")
	if r.Value == nil {
		latest[string(key)] = &record{retired: retirement(job, task, r.Headers)}
		return job, nil
	}
	v, err := io.ReadAll(r.Value)
	if err != nil {
		return job, fmt.Errorf("value: %w", err)
	}
	var pl plans.Plan
	if err := json.Unmarshal(v, &pl); err != nil {
		return job, fmt.Errorf("value of %s: %w", key, err)
	}
	if plans.Key(pl.JobID, pl.TaskName) != string(key) {
		return job, fmt.Errorf("value of %s: plan of %s", key, plans.Key(pl.JobID, pl.TaskName))
	}
	latest[string(key)] = &record{plan: &pl}
	return job, nil
}

// retirement reads the retirement a tombstone's headers carry; its
// Version is 0 when they carry none (a tombstone of an older release).
func retirement(job, task string, hs []kafka.Header) plans.RetiredTask {
	r := plans.RetiredTask{JobID: job, TaskName: task}
	var at int64
	for _, h := range hs {
		switch h.Key {
		case HeaderVersion:
			r.Version, _ = strconv.ParseUint(string(h.Value), 10, 64)
		case HeaderRetiredAt:
			at, _ = strconv.ParseInt(string(h.Value), 10, 64)
		}
	}
	r.At = time.UnixMilli(at).UTC()
	return r
}

// loadLineage applies one lineage message to lineage: the run and version
// of its plan, or none for a tombstone or a value that does not read as a
// plan of its key (nothing to tombstone on its behalf: the name's owner
// replaces it when the name has a newest plan again).
func loadLineage(key string, value io.Reader, lineage map[string]lineageRun) {
	delete(lineage, key)
	if value == nil {
		return
	}
	var pl struct {
		JobID    string `json:"job_id"`
		JobName  string `json:"job_name"`
		TaskName string `json:"task_name"`
		Version  uint64 `json:"version"`
	}
	if v, err := io.ReadAll(value); err != nil || json.Unmarshal(v, &pl) != nil || LineageKey(pl.JobName, pl.TaskName) != key || pl.JobID == "" {
		return
	}
	lineage[key] = lineageRun{pl.JobID, pl.Version}
}
