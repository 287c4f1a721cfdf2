package sim

import "time"

// maxSeriesPoints bounds the plot series.
const maxSeriesPoints = 4000

// collector gathers statistics while the run goes.
type collector struct {
	latency         [numClasses]hist
	queue, storageQ hist
	ticks, perPoint int64
	progressEvery   int64
	xoff, xoffTotal int64
	xon, cnpsTotal  int64
	maxHdrm         int64
	series          Series
}

func newCollector(s Scenario, end int64) collector {
	ticks := end / ps(s.SampleEvery)
	c := collector{
		perPoint:      max(1, ticks/maxSeriesPoints),
		progressEvery: max(1, ticks/100),
	}
	c.series.FlowGbps = make([][]float64, len(s.Flows))
	return c
}

// onTick samples the queues, adds a plot point every perPoint ticks and
// reports progress.
func (r *run) onTick() {
	c := &r.stats
	c.ticks++
	every := ps(r.s.SampleEvery)
	if r.now >= r.warm {
		c.queue.add(r.sw.q[ClassStorage].bytes + r.sw.q[ClassOther].bytes)
		c.storageQ.add(r.sw.q[ClassStorage].bytes)
	}
	if c.ticks%c.perPoint == 0 {
		span := float64(c.perPoint*every) / 1e12
		c.series.TimeUs = append(c.series.TimeUs, float64(r.now)/1e6)
		c.series.QueueBytes = append(c.series.QueueBytes, float64(r.sw.q[ClassStorage].bytes+r.sw.q[ClassOther].bytes))
		for i := range r.senders {
			s := &r.senders[i]
			c.series.FlowGbps[i] = append(c.series.FlowGbps[i], float64(s.window)*8/span/1e9)
			s.window = 0
		}
	}
	if r.s.Progress != nil && c.ticks%c.progressEvery == 0 {
		r.s.Progress(time.Duration(r.now/1000), r.s.Duration)
	}
	r.push(event{at: r.now + every, kind: evTick})
}

// result assembles the Result once the run is over.
func (r *run) result() Result {
	secs := float64(r.end-r.warm) / 1e12
	res := Result{
		Scenario:         r.s.Name,
		LinkGbps:         float64(r.s.LinkMbps) / 1000,
		Measured:         r.s.Duration - r.s.Warmup,
		Classes:          make([]ClassResult, numClasses),
		Queue:            queueStats(&r.stats.queue),
		StorageQueue:     queueStats(&r.stats.storageQ),
		PauseFrames:      r.stats.xoff,
		PauseFramesTotal: r.stats.xoffTotal,
		ResumeFrames:     r.stats.xon,
		CNPsTotal:        r.stats.cnpsTotal,
		MaxHeadroomBytes: r.stats.maxHdrm,
		Events:           r.events,
		Series:           r.stats.series,
	}
	res.Queue.Max = max(res.Queue.Max, r.sw.maxQueue)
	rates := make([][]float64, numClasses)
	all := make([]float64, 0, len(r.senders))
	var pausedPs, storagePorts int64
	for i := range r.senders {
		s := &r.senders[i]
		r.closePause(s, r.end)
		fr := FlowResult{
			Class:       s.cls,
			Gbps:        float64(s.delivered) * 8 / secs / 1e9,
			GoodputGbps: float64(s.goodput) * 8 / secs / 1e9,
			Drops:       s.drops,
			CNPs:        s.cnps,
		}
		if s.cls == ClassStorage {
			fr.FinalRateGbps = s.rp.rc / 1e9
			pausedPs += s.pausedPs
			storagePorts++
		} else {
			fr.FinalRateGbps = s.tcp.cwnd * 8 / (float64(s.tcp.srtt) / 1e12) / 1e9
		}
		res.Flows = append(res.Flows, fr)
		res.CNPs += s.cnps
		res.EgressGbps += fr.Gbps
		all = append(all, fr.Gbps)
		rates[s.cls] = append(rates[s.cls], fr.Gbps)
		cr := &res.Classes[s.cls]
		cr.Flows++
		cr.Gbps += fr.Gbps
		cr.GoodputGbps += fr.GoodputGbps
		cr.Drops += s.drops
	}
	for c := range res.Classes {
		cr := &res.Classes[c]
		cr.Class = Class(c)
		cr.Jain = jain(rates[c])
		cr.LatencyP50 = time.Duration(r.stats.latency[c].quantile(0.5))
		cr.LatencyP99 = time.Duration(r.stats.latency[c].quantile(0.99))
	}
	res.JainAll = jain(all)
	res.Utilisation = res.EgressGbps / res.LinkGbps
	if storagePorts > 0 {
		res.PausedFraction = float64(pausedPs) / float64(storagePorts*(r.end-r.warm))
	}
	return res
}
