package alertdeliver

import (
	"container/list"

	"github.com/skewlens/skewlens/skew/alert"
)

// queue holds the alerts waiting for one notifier, at most one per alert
// id: a newer state of an alert replaces the older one in place (the
// receiver only needs the latest). It is bounded; see push. Not safe for
// concurrent use: the Fanout guards it.
type queue struct {
	capacity int
	order    *list.List               // of *alert.Alert, oldest first
	byID     map[string]*list.Element // id -> element in order
}

func newQueue(capacity int) *queue {
	return &queue{capacity: capacity, order: list.New(), byID: make(map[string]*list.Element)}
}

func (q *queue) len() int { return q.order.Len() }

// push appends a, or replaces the waiting state of the same alert. When
// the queue is full, the oldest alert is dropped to make room (the policy:
// the newest state matters most) and push returns 1, else 0.
func (q *queue) push(a alert.Alert) (dropped int) {
	if e, ok := q.byID[a.ID]; ok {
		e.Value = &a
		return 0
	}
	if q.order.Len() >= q.capacity {
		oldest := q.order.Front()
		delete(q.byID, oldest.Value.(*alert.Alert).ID)
		q.order.Remove(oldest)
		dropped = 1
	}
	q.byID[a.ID] = q.order.PushBack(&a)
	return dropped
}

// take removes and returns up to n of the oldest alerts.
func (q *queue) take(n int) []alert.Alert {
	out := make([]alert.Alert, 0, min(n, q.order.Len()))
	for len(out) < n && q.order.Len() > 0 {
		e := q.order.Front()
		a := e.Value.(*alert.Alert)
		q.order.Remove(e)
		delete(q.byID, a.ID)
		out = append(out, *a)
	}
	return out
}

// requeue puts alerts whose delivery failed back at the front, oldest
// first, unless a newer state of the same alert arrived meanwhile. Alerts
// that do not fit are dropped (they are the oldest); it returns how many.
func (q *queue) requeue(alerts []alert.Alert) (dropped int) {
	for i := len(alerts) - 1; i >= 0; i-- {
		a := alerts[i]
		if _, ok := q.byID[a.ID]; ok {
			continue
		}
		if q.order.Len() >= q.capacity {
			dropped++
			continue
		}
		q.byID[a.ID] = q.order.PushFront(&a)
	}
	return dropped
}

// clear empties the queue and returns how many alerts it held.
func (q *queue) clear() int {
	n := q.order.Len()
	q.order.Init()
	clear(q.byID)
	return n
}
