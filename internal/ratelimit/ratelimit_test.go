package ratelimit

import (
	"testing"
	"time"
)

func TestLimitOnePerInterval(t *testing.T) {
	l := Limit{Every: time.Hour}
	if !l.Allow() {
		t.Fatal("the first event was refused")
	}
	for range 3 {
		if l.Allow() {
			t.Fatal("a second event within the interval passed")
		}
	}
	var zero Limit
	for range 3 {
		if !zero.Allow() {
			t.Fatal("the zero Limit refused an event")
		}
	}
}
