#!/bin/sh
# iNOF lossless profile "default" for Linux hosts: iproute2 dcb and mlx5 ECN sysfs.
set -e

# ens1f0 (port class server: 100000 Mb/s, 5 m, MTU 9100)
dcb apptrust set dev ens1f0 order dscp
dcb app replace dev ens1f0 dscp-prio 24:3 48:6
dcb ets set dev ens1f0 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0
# mlx5 reads the PFC delay as the cable length in metres and sizes the lossless buffer from it;
# expect a lossless buffer of at least 65080 B (NIC xoff 55852 B); switch side: headroom 80896 B (xoff 62464 B: switch model 62464 B, NIC model 55852 B; xon 18432 B).
dcb pfc set dev ens1f0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay 5
dcb buffer set dev ens1f0 prio-buffer 0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0
echo 1 > /sys/class/net/ens1f0/ecn/roce_np/enable/3
echo 1 > /sys/class/net/ens1f0/ecn/roce_rp/enable/3
echo 48 > /sys/class/net/ens1f0/ecn/roce_np/cnp_dscp
echo 6 > /sys/class/net/ens1f0/ecn/roce_np/cnp_802p_prio
echo 2 > /sys/class/net/ens1f0/ecn/roce_np/min_time_between_cnps
echo 300 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_time_reset
echo 32767 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_byte_reset
echo 1 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_threshold
echo 5 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_ai_rate
echo 50 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_hai_rate
echo 11 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_gd
echo 50 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_min_dec_fac
echo 1 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_min_rate
echo 1019 > /sys/class/net/ens1f0/ecn/roce_rp/dce_tcp_g
echo 1 > /sys/class/net/ens1f0/ecn/roce_rp/dce_tcp_rtt
echo 4 > /sys/class/net/ens1f0/ecn/roce_rp/rate_reduce_monitor_period
echo 1023 > /sys/class/net/ens1f0/ecn/roce_rp/initial_alpha_value

# ens1f1 (port class server: 100000 Mb/s, 5 m, MTU 9100)
dcb apptrust set dev ens1f1 order dscp
dcb app replace dev ens1f1 dscp-prio 24:3 48:6
dcb ets set dev ens1f1 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0
# mlx5 reads the PFC delay as the cable length in metres and sizes the lossless buffer from it;
# expect a lossless buffer of at least 65080 B (NIC xoff 55852 B); switch side: headroom 80896 B (xoff 62464 B: switch model 62464 B, NIC model 55852 B; xon 18432 B).
dcb pfc set dev ens1f1 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay 5
dcb buffer set dev ens1f1 prio-buffer 0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0
echo 1 > /sys/class/net/ens1f1/ecn/roce_np/enable/3
echo 1 > /sys/class/net/ens1f1/ecn/roce_rp/enable/3
echo 48 > /sys/class/net/ens1f1/ecn/roce_np/cnp_dscp
echo 6 > /sys/class/net/ens1f1/ecn/roce_np/cnp_802p_prio
echo 2 > /sys/class/net/ens1f1/ecn/roce_np/min_time_between_cnps
echo 300 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_time_reset
echo 32767 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_byte_reset
echo 1 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_threshold
echo 5 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_ai_rate
echo 50 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_hai_rate
echo 11 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_gd
echo 50 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_min_dec_fac
echo 1 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_min_rate
echo 1019 > /sys/class/net/ens1f1/ecn/roce_rp/dce_tcp_g
echo 1 > /sys/class/net/ens1f1/ecn/roce_rp/dce_tcp_rtt
echo 4 > /sys/class/net/ens1f1/ecn/roce_rp/rate_reduce_monitor_period
echo 1023 > /sys/class/net/ens1f1/ecn/roce_rp/initial_alpha_value

# ens2f0 (port class leaf: 100000 Mb/s, 40 m, MTU 9100)
dcb apptrust set dev ens2f0 order dscp
dcb app replace dev ens2f0 dscp-prio 24:3 48:6
dcb ets set dev ens2f0 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0
# mlx5 reads the PFC delay as the cable length in metres and sizes the lossless buffer from it;
# expect a lossless buffer of at least 72680 B (NIC xoff 63452 B); switch side: headroom 88064 B (xoff 69632 B: switch model 69632 B, NIC model 63452 B; xon 18432 B).
dcb pfc set dev ens2f0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay 40
dcb buffer set dev ens2f0 prio-buffer 0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0
echo 1 > /sys/class/net/ens2f0/ecn/roce_np/enable/3
echo 1 > /sys/class/net/ens2f0/ecn/roce_rp/enable/3
echo 48 > /sys/class/net/ens2f0/ecn/roce_np/cnp_dscp
echo 6 > /sys/class/net/ens2f0/ecn/roce_np/cnp_802p_prio
echo 2 > /sys/class/net/ens2f0/ecn/roce_np/min_time_between_cnps
echo 300 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_time_reset
echo 32767 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_byte_reset
echo 1 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_threshold
echo 5 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_ai_rate
echo 50 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_hai_rate
echo 11 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_gd
echo 50 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_min_dec_fac
echo 1 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_min_rate
echo 1019 > /sys/class/net/ens2f0/ecn/roce_rp/dce_tcp_g
echo 1 > /sys/class/net/ens2f0/ecn/roce_rp/dce_tcp_rtt
echo 4 > /sys/class/net/ens2f0/ecn/roce_rp/rate_reduce_monitor_period
echo 1023 > /sys/class/net/ens2f0/ecn/roce_rp/initial_alpha_value

# ens3f0 (port class spine: 100000 Mb/s, 300 m, MTU 9100)
dcb apptrust set dev ens3f0 order dscp
dcb app replace dev ens3f0 dscp-prio 24:3 48:6
dcb ets set dev ens3f0 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0
# mlx5 reads the PFC delay as the cable length in metres and sizes the lossless buffer from it;
# expect a lossless buffer of at least 128880 B (NIC xoff 119652 B); switch side: headroom 140288 B (xoff 121856 B: switch model 121856 B, NIC model 119652 B; xon 18432 B).
dcb pfc set dev ens3f0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay 300
dcb buffer set dev ens3f0 prio-buffer 0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0
echo 1 > /sys/class/net/ens3f0/ecn/roce_np/enable/3
echo 1 > /sys/class/net/ens3f0/ecn/roce_rp/enable/3
echo 48 > /sys/class/net/ens3f0/ecn/roce_np/cnp_dscp
echo 6 > /sys/class/net/ens3f0/ecn/roce_np/cnp_802p_prio
echo 2 > /sys/class/net/ens3f0/ecn/roce_np/min_time_between_cnps
echo 300 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_time_reset
echo 32767 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_byte_reset
echo 1 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_threshold
echo 5 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_ai_rate
echo 50 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_hai_rate
echo 11 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_gd
echo 50 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_min_dec_fac
echo 1 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_min_rate
echo 1019 > /sys/class/net/ens3f0/ecn/roce_rp/dce_tcp_g
echo 1 > /sys/class/net/ens3f0/ecn/roce_rp/dce_tcp_rtt
echo 4 > /sys/class/net/ens3f0/ecn/roce_rp/rate_reduce_monitor_period
echo 1023 > /sys/class/net/ens3f0/ecn/roce_rp/initial_alpha_value

# Not set on hosts: ECN marking (Kmin/Kmax/Pmax) is done by switches;
# the PFC watchdog (detection 200 ms, restoration 200 ms, action drop) has no dcb setting.
