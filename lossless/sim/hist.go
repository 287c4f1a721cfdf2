package sim

import "math/bits"

// histSub is the number of buckets per power of two: quantiles are exact
// to 1/64 (1.6 %).
const histSub = 64

// hist is a log-linear histogram of non-negative integers (ns or bytes).
type hist struct {
	counts [64 * histSub]uint64
	n      uint64
	max    int64
	sum    float64
}

func bucketOf(v int64) int {
	if v < histSub {
		return int(v)
	}
	exp := 63 - bits.LeadingZeros64(uint64(v)) // v in [2^exp, 2^(exp+1))
	shift := exp - 6                           // histSub = 2^6
	return (shift+1)*histSub + int(v>>shift) - histSub
}

// lowOf is the smallest value of a bucket.
func lowOf(b int) int64 {
	if b < histSub {
		return int64(b)
	}
	shift := b/histSub - 1
	return int64(b%histSub+histSub) << shift
}

func (h *hist) add(v int64) {
	v = max(v, 0)
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += float64(v)
	h.max = max(h.max, v)
}

// quantile returns the lower bound of the bucket holding quantile q.
func (h *hist) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n-1))
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen > rank {
			return min(lowOf(b), h.max)
		}
	}
	return h.max
}

func (h *hist) mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}
