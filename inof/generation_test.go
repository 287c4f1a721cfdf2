package inof

import (
	"errors"
	"testing"
	"time"
)

func TestClockMonotonicAndObserve(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	c := NewClock(func() time.Time { return now })
	a := c.Next()
	if b := c.Next(); b != a+1 {
		t.Fatalf("same millisecond: %d then %d", a, b)
	}
	if got := GenerationTime(a); !got.Equal(now) {
		t.Fatalf("GenerationTime = %v, want %v", got, now)
	}
	ahead := GenerationAt(now.Add(time.Minute))
	if err := c.Observe(ahead); err != nil {
		t.Fatalf("one minute ahead refused: %v", err)
	}
	if n := c.Next(); n <= ahead {
		t.Fatalf("Next %d not above observed %d", n, ahead)
	}
	far := GenerationAt(now.Add(MaxGenerationSkew + time.Second))
	if err := c.Observe(far); !errors.Is(err, ErrFutureGeneration) {
		t.Fatalf("far-future generation: err %v", err)
	}
	if n := c.Next(); n >= far {
		t.Fatalf("a refused generation moved the clock to %d", n)
	}
}

func TestTombstoneExpired(t *testing.T) {
	now := time.UnixMilli(10_000_000_000)
	if TombstoneExpired(GenerationAt(now.Add(-TombstoneLifetime+time.Second)), now) {
		t.Fatal("expired a second early")
	}
	if !TombstoneExpired(GenerationAt(now.Add(-TombstoneLifetime-time.Second)), now) {
		t.Fatal("not expired a second late")
	}
}

func TestClockAdvanceTrustsOwnGenerations(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	c := NewClock(func() time.Time { return now })
	own := GenerationAt(now.Add(time.Hour)) // written before the wall clock stepped back
	c.Advance(own)
	if n := c.Next(); n <= own {
		t.Fatalf("Next %d not above our own earlier generation %d", n, own)
	}
}
