// Package dueheap is a min-heap of entries by when they fall due: the
// timers of the switch agent's hold-downs, the l2proto notifier's
// retransmissions and the BFD engine's packets and detections each keep
// their deadlines in one.
package dueheap

// Entry is what a Heap holds: Before says whether the entry falls due
// before o (by time, then by whatever breaks a tie).
type Entry[T any] interface {
	Before(o T) bool
}

// Heap holds entries earliest first. The zero Heap is empty and ready; it
// is not safe for concurrent use.
type Heap[T Entry[T]] struct {
	items []T
	// Moved, if set, is told the index of each entry the heap places and
	// -1 for one it gives up (Pop, Remove), for callers that Fix or
	// Remove an entry by its index.
	Moved func(x T, i int)
}

// Len is the number of entries.
func (h *Heap[T]) Len() int { return len(h.items) }

// Peek returns the earliest entry (the heap must not be empty).
func (h *Heap[T]) Peek() T { return h.items[0] }

// Top returns the earliest entry in place (the heap must not be empty);
// after changing when it falls due, call Fix(0).
func (h *Heap[T]) Top() *T { return &h.items[0] }

// Push adds x.
func (h *Heap[T]) Push(x T) {
	h.items = append(h.items, x)
	h.place(len(h.items) - 1)
	h.up(len(h.items) - 1)
}

// Pop removes and returns the earliest entry (the heap must not be
// empty).
func (h *Heap[T]) Pop() T { return h.Remove(0) }

// Remove removes and returns the entry at index i.
func (h *Heap[T]) Remove(i int) T {
	n := len(h.items) - 1
	x := h.items[i]
	if i != n {
		h.swap(i, n)
	}
	var zero T
	h.items[n] = zero // no reference kept
	h.items = h.items[:n]
	if i != n {
		h.Fix(i)
	}
	if h.Moved != nil {
		h.Moved(x, -1)
	}
	return x
}

// Fix restores the order after the entry at index i changed when it
// falls due.
func (h *Heap[T]) Fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

// Clear removes every entry (Moved is not told).
func (h *Heap[T]) Clear() {
	clear(h.items)
	h.items = h.items[:0]
}

func (h *Heap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.items[i].Before(h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts the entry at i down and reports whether it moved.
func (h *Heap[T]) down(i int) bool {
	start, n := i, len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.items[r].Before(h.items[c]) {
			c = r
		}
		if !h.items[c].Before(h.items[i]) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}

func (h *Heap[T]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.place(i)
	h.place(j)
}

func (h *Heap[T]) place(i int) {
	if h.Moved != nil {
		h.Moved(h.items[i], i)
	}
}
