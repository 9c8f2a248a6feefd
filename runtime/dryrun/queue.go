package dryrun

import (
	"cmp"
	"slices"

	"github.com/batonhq/baton/engine"
)

// queue holds the inputs a run has scheduled, in the order they are due
// and, among equal times, in the order they arrived. The waiting inputs
// are q[head:]: pop advances head, and push moves only the inputs due
// before the new one, into the room pop left in front. Most of what is
// pushed (a model's answer, the end of a line's speech) is due soon, so
// a push moves a few inputs, where shifting the whole queue on every pop
// copied all of them, under the collector's write barrier, per input.
type queue struct {
	q    []engine.Input
	head int
}

func (q *queue) len() int { return len(q.q) - q.head }

// peek is the next input due; the queue must not be empty.
func (q *queue) peek() *engine.Input { return &q.q[q.head] }

func (q *queue) pop() engine.Input {
	in := q.q[q.head]
	q.q[q.head] = engine.Input{}
	q.head++
	if q.head == len(q.q) {
		q.q, q.head = q.q[:0], 0
	}
	return in
}

func (q *queue) push(in engine.Input) {
	wait := q.q[q.head:]
	// After every input due at the same time or earlier.
	i, _ := slices.BinarySearchFunc(wait, in.T+1, func(p engine.Input, t int64) int { return cmp.Compare(p.T, t) })
	if q.head == 0 {
		q.q = slices.Insert(q.q, i, in)
		return
	}
	q.head--
	copy(q.q[q.head:], wait[:i])
	q.q[q.head+i] = in
}

// drop removes the waiting inputs del reports.
func (q *queue) drop(del func(*engine.Input) bool) {
	w := q.head
	for r := q.head; r < len(q.q); r++ {
		if !del(&q.q[r]) {
			q.q[w] = q.q[r]
			w++
		}
	}
	clear(q.q[w:])
	q.q = q.q[:w]
}

// slab hands out pointers to values allocated sixteen at a time: an
// input's payload (a model's answer, the end of a line's speech) lives
// as long as the run's record of it, and one allocation per payload was
// a tenth of a session's.
type slab[T any] struct{ free []T }

func (s *slab[T]) new(v T) *T {
	if len(s.free) == 0 {
		s.free = make([]T, 16)
	}
	p := &s.free[0]
	*p = v
	s.free = s.free[1:]
	return p
}
