package lossless

import "fmt"

// SysfsSetting is one mlx5 ECN/DCQCN value, its path relative to
// /sys/class/net/<if>/ecn.
type SysfsSetting struct {
	Path  string
	Value uint32
}

// ECNSysfs lists what hosts write under /sys/class/net/<if>/ecn: the
// notification point and reaction point enables for each lossless priority,
// then the CNP marking and the DCQCN parameters.
func (p Profile) ECNSysfs() []SysfsSetting {
	var out []SysfsSetting
	for _, prio := range p.LosslessPriorities {
		out = append(out,
			SysfsSetting{fmt.Sprintf("roce_np/enable/%d", prio), 1},
			SysfsSetting{fmt.Sprintf("roce_rp/enable/%d", prio), 1})
	}
	d := p.DCQCN
	return append(out,
		SysfsSetting{"roce_np/cnp_dscp", uint32(p.CNP.DSCP)},
		SysfsSetting{"roce_np/cnp_802p_prio", uint32(p.CNP.Priority)},
		SysfsSetting{"roce_np/min_time_between_cnps", d.MinTimeBetweenCNPs},
		SysfsSetting{"roce_rp/rpg_time_reset", d.RPGTimeReset},
		SysfsSetting{"roce_rp/rpg_byte_reset", d.RPGByteReset},
		SysfsSetting{"roce_rp/rpg_threshold", d.RPGThreshold},
		SysfsSetting{"roce_rp/rpg_ai_rate", d.RPGAIRate},
		SysfsSetting{"roce_rp/rpg_hai_rate", d.RPGHAIRate},
		SysfsSetting{"roce_rp/rpg_gd", d.RPGGD},
		SysfsSetting{"roce_rp/rpg_min_dec_fac", d.RPGMinDecFac},
		SysfsSetting{"roce_rp/rpg_min_rate", d.RPGMinRate},
		SysfsSetting{"roce_rp/dce_tcp_g", d.DCETCPG},
		SysfsSetting{"roce_rp/dce_tcp_rtt", d.DCETCPRTT},
		SysfsSetting{"roce_rp/rate_reduce_monitor_period", d.RateReduceMonitorPeriod},
		SysfsSetting{"roce_rp/initial_alpha_value", d.InitialAlphaValue},
	)
}
