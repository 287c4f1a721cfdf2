package dueheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// item falls due at at; seq breaks ties; index is where the heap keeps it.
type item struct {
	at, seq int
	index   int
}

func (a *item) Before(b *item) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func newHeap() *Heap[*item] {
	return &Heap[*item]{Moved: func(x *item, i int) { x.index = i }}
}

// check verifies the heap order and the indexes Moved reported.
func check(t *testing.T, h *Heap[*item]) {
	t.Helper()
	for i, x := range h.items {
		if x.index != i {
			t.Fatalf("entry %+v at %d", x, i)
		}
		if i > 0 && x.Before(h.items[(i-1)/2]) {
			t.Fatalf("entry %d before its parent", i)
		}
	}
}

// TestOrder: whatever the pushes, removals and changes, Pop returns the
// entries earliest first, ties in sequence, and every index is right.
func TestOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		h := newHeap()
		var all []*item
		for i := range rng.IntN(64) {
			x := &item{at: rng.IntN(16), seq: i}
			all = append(all, x)
			h.Push(x)
			check(t, h)
		}
		// Move some later or earlier, remove some.
		for range rng.IntN(16) {
			if h.Len() == 0 {
				break
			}
			i := rng.IntN(h.Len())
			if rng.IntN(2) == 0 {
				x := h.Remove(i)
				if x.index != -1 {
					t.Fatalf("removed entry keeps index %d", x.index)
				}
				all = slices.DeleteFunc(all, func(y *item) bool { return y == x })
			} else {
				h.items[i].at = rng.IntN(16)
				h.Fix(i)
			}
			check(t, h)
		}
		slices.SortFunc(all, func(a, b *item) int {
			if a.Before(b) {
				return -1
			}
			return 1
		})
		for i, want := range all {
			if got := h.Pop(); got != want {
				t.Fatalf("round %d: pop %d = %+v, want %+v", round, i, got, want)
			}
			check(t, h)
		}
		if h.Len() != 0 {
			t.Fatalf("round %d: %d entries left", round, h.Len())
		}
	}
}

// value is an entry held by value, as the BFD engine's are, with no Moved.
type value struct{ at int }

func (a value) Before(b value) bool { return a.at < b.at }

// TestTopFix: the top entry changed in place and fixed goes where it
// belongs; a zero Heap works without Moved.
func TestTopFix(t *testing.T) {
	var h Heap[value]
	for _, at := range []int{5, 1, 3} {
		h.Push(value{at})
	}
	if top := h.Peek(); top.at != 1 || h.Top().at != 1 {
		t.Fatalf("top %+v", top)
	}
	h.Top().at = 4
	h.Fix(0)
	var got []int
	for h.Len() > 0 {
		got = append(got, h.Pop().at)
	}
	if !slices.Equal(got, []int{3, 4, 5}) {
		t.Fatalf("popped %v", got)
	}
	h.Push(value{2})
	h.Clear()
	if h.Len() != 0 {
		t.Fatal("Clear left entries")
	}
}

func BenchmarkPushPop(b *testing.B) {
	var h Heap[value]
	for i := range 256 {
		h.Push(value{i * 7919 % 256})
	}
	b.ResetTimer()
	for i := range b.N {
		x := h.Pop()
		x.at += 256 + i%7
		h.Push(x)
	}
}
