#!/bin/sh
# iNOF lossless profile "default" for Linux hosts (platform mlx5): iproute2 dcb, mlx5 ECN sysfs, RDMA-CM configfs.
set -e
inof_rc=0
# inof_rdma_port DEV prints DEV's RDMA-CM configfs port directory, creating
# its RDMA device's group. It returns 1 (and says so) when DEV has no RDMA
# device, 2 when RDMA-CM's configfs is missing.
inof_rdma_port() {
	ibdev=$(ls /sys/class/net/"$1"/device/infiniband 2>/dev/null | head -n 1)
	if [ -z "$ibdev" ]; then echo "inof: $1 has no RDMA device: RDMA-CM defaults and RoCE MTU not checked" >&2; return 1; fi
	if [ ! -d /sys/kernel/config/rdma_cm ]; then echo "inof: /sys/kernel/config/rdma_cm missing (modprobe rdma_cm; mount -t configfs none /sys/kernel/config)" >&2; return 2; fi
	port=$(( $(cat /sys/class/net/"$1"/dev_port 2>/dev/null || echo 0) + 1 ))
	mkdir -p /sys/kernel/config/rdma_cm/"$ibdev"
	echo /sys/kernel/config/rdma_cm/"$ibdev"/ports/"$port"
}
# inof_check_roce_mtu DEV MTU fails the script (at its end) when DEV's MTU
# gives RDMA-CM another RoCE path MTU (the MTU less 96 B of RoCEv2 headers).
inof_check_roce_mtu() {
	mtu=$(cat /sys/class/net/"$1"/mtu)
	for ib in 4096 2048 1024 512 256; do if [ $((mtu - 96)) -ge $ib ]; then break; fi; done
	if [ "$ib" -ne "$2" ]; then echo "inof: $1 has MTU $mtu: RDMA-CM uses a RoCE path MTU of $ib, the profile says $2" >&2; inof_rc=1; fi
}

# ens1f0 (port class server: 100000 Mb/s, 5 m, MTU 9100)
dcb apptrust set dev ens1f0 order dscp || echo "inof: apptrust: optional step failed (mlx5 has no apptrust operation and iproute2 before 6.2 no apptrust object; mlx5 trusts DSCP once the DSCP APP entries below exist)" >&2
# all 64 DSCPs, so none keeps the NIC's default DSCP/8 priority (mlx5 switches to DSCP trust with the first entry)
dcb app replace dev ens1f0 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:3 25:0 26:0 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb ets set dev ens1f0 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0
# mlx5 reads the PFC delay as the cable length in metres and sizes the lossless buffer from it;
# expect a lossless buffer of at least 65080 B (NIC xoff 55852 B); switch side: headroom 74284 B (xoff 55852 B: switch model 45056 B, NIC model 55852 B; xon 18432 B).
dcb pfc set dev ens1f0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay 5
dcb buffer set dev ens1f0 prio-buffer 0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0
if [ -d /sys/class/net/ens1f0/ecn ]; then
	echo 1 > /sys/class/net/ens1f0/ecn/roce_np/enable/3 || echo "inof: /sys/class/net/ens1f0/ecn/roce_np/enable/3: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens1f0/ecn/roce_rp/enable/3 || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/enable/3: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 48 > /sys/class/net/ens1f0/ecn/roce_np/cnp_dscp || echo "inof: /sys/class/net/ens1f0/ecn/roce_np/cnp_dscp: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 6 > /sys/class/net/ens1f0/ecn/roce_np/cnp_802p_prio || echo "inof: /sys/class/net/ens1f0/ecn/roce_np/cnp_802p_prio: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 2 > /sys/class/net/ens1f0/ecn/roce_np/min_time_between_cnps || echo "inof: /sys/class/net/ens1f0/ecn/roce_np/min_time_between_cnps: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 300 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_time_reset || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/rpg_time_reset: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 32767 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_byte_reset || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/rpg_byte_reset: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_threshold || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/rpg_threshold: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 5 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_ai_rate || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/rpg_ai_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 50 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_hai_rate || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/rpg_hai_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 11 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_gd || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/rpg_gd: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 50 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_min_dec_fac || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/rpg_min_dec_fac: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens1f0/ecn/roce_rp/rpg_min_rate || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/rpg_min_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1019 > /sys/class/net/ens1f0/ecn/roce_rp/dce_tcp_g || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/dce_tcp_g: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens1f0/ecn/roce_rp/dce_tcp_rtt || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/dce_tcp_rtt: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 4 > /sys/class/net/ens1f0/ecn/roce_rp/rate_reduce_monitor_period || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/rate_reduce_monitor_period: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1023 > /sys/class/net/ens1f0/ecn/roce_rp/initial_alpha_value || echo "inof: /sys/class/net/ens1f0/ecn/roce_rp/initial_alpha_value: optional DCQCN step failed (the NIC keeps its value)" >&2
else
	echo "inof: ens1f0 has no mlx5 ecn/ directory: DCQCN not set" >&2
fi
if rdma=$(inof_rdma_port ens1f0); then
	echo "RoCE v2" > "$rdma/default_roce_mode"
	# ToS 96 = DSCP 24 for RDMA-CM connections that set none (nvme-rdma without --tos)
	echo "96" > "$rdma/default_roce_tos"
	inof_check_roce_mtu ens1f0 4096
elif [ $? -eq 2 ]; then
	inof_rc=1
fi

# ens1f1 (port class server: 100000 Mb/s, 5 m, MTU 9100)
dcb apptrust set dev ens1f1 order dscp || echo "inof: apptrust: optional step failed (mlx5 has no apptrust operation and iproute2 before 6.2 no apptrust object; mlx5 trusts DSCP once the DSCP APP entries below exist)" >&2
# all 64 DSCPs, so none keeps the NIC's default DSCP/8 priority (mlx5 switches to DSCP trust with the first entry)
dcb app replace dev ens1f1 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:3 25:0 26:0 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb ets set dev ens1f1 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0
# mlx5 reads the PFC delay as the cable length in metres and sizes the lossless buffer from it;
# expect a lossless buffer of at least 65080 B (NIC xoff 55852 B); switch side: headroom 74284 B (xoff 55852 B: switch model 45056 B, NIC model 55852 B; xon 18432 B).
dcb pfc set dev ens1f1 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay 5
dcb buffer set dev ens1f1 prio-buffer 0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0
if [ -d /sys/class/net/ens1f1/ecn ]; then
	echo 1 > /sys/class/net/ens1f1/ecn/roce_np/enable/3 || echo "inof: /sys/class/net/ens1f1/ecn/roce_np/enable/3: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens1f1/ecn/roce_rp/enable/3 || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/enable/3: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 48 > /sys/class/net/ens1f1/ecn/roce_np/cnp_dscp || echo "inof: /sys/class/net/ens1f1/ecn/roce_np/cnp_dscp: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 6 > /sys/class/net/ens1f1/ecn/roce_np/cnp_802p_prio || echo "inof: /sys/class/net/ens1f1/ecn/roce_np/cnp_802p_prio: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 2 > /sys/class/net/ens1f1/ecn/roce_np/min_time_between_cnps || echo "inof: /sys/class/net/ens1f1/ecn/roce_np/min_time_between_cnps: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 300 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_time_reset || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/rpg_time_reset: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 32767 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_byte_reset || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/rpg_byte_reset: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_threshold || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/rpg_threshold: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 5 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_ai_rate || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/rpg_ai_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 50 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_hai_rate || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/rpg_hai_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 11 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_gd || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/rpg_gd: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 50 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_min_dec_fac || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/rpg_min_dec_fac: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens1f1/ecn/roce_rp/rpg_min_rate || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/rpg_min_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1019 > /sys/class/net/ens1f1/ecn/roce_rp/dce_tcp_g || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/dce_tcp_g: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens1f1/ecn/roce_rp/dce_tcp_rtt || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/dce_tcp_rtt: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 4 > /sys/class/net/ens1f1/ecn/roce_rp/rate_reduce_monitor_period || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/rate_reduce_monitor_period: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1023 > /sys/class/net/ens1f1/ecn/roce_rp/initial_alpha_value || echo "inof: /sys/class/net/ens1f1/ecn/roce_rp/initial_alpha_value: optional DCQCN step failed (the NIC keeps its value)" >&2
else
	echo "inof: ens1f1 has no mlx5 ecn/ directory: DCQCN not set" >&2
fi
if rdma=$(inof_rdma_port ens1f1); then
	echo "RoCE v2" > "$rdma/default_roce_mode"
	# ToS 96 = DSCP 24 for RDMA-CM connections that set none (nvme-rdma without --tos)
	echo "96" > "$rdma/default_roce_tos"
	inof_check_roce_mtu ens1f1 4096
elif [ $? -eq 2 ]; then
	inof_rc=1
fi

# ens2f0 (port class leaf: 100000 Mb/s, 40 m, MTU 9100)
dcb apptrust set dev ens2f0 order dscp || echo "inof: apptrust: optional step failed (mlx5 has no apptrust operation and iproute2 before 6.2 no apptrust object; mlx5 trusts DSCP once the DSCP APP entries below exist)" >&2
# all 64 DSCPs, so none keeps the NIC's default DSCP/8 priority (mlx5 switches to DSCP trust with the first entry)
dcb app replace dev ens2f0 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:3 25:0 26:0 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb ets set dev ens2f0 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0
# mlx5 reads the PFC delay as the cable length in metres and sizes the lossless buffer from it;
# expect a lossless buffer of at least 72680 B (NIC xoff 63452 B); switch side: headroom 81884 B (xoff 63452 B: switch model 49152 B, NIC model 63452 B; xon 18432 B).
dcb pfc set dev ens2f0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay 40
dcb buffer set dev ens2f0 prio-buffer 0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0
if [ -d /sys/class/net/ens2f0/ecn ]; then
	echo 1 > /sys/class/net/ens2f0/ecn/roce_np/enable/3 || echo "inof: /sys/class/net/ens2f0/ecn/roce_np/enable/3: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens2f0/ecn/roce_rp/enable/3 || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/enable/3: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 48 > /sys/class/net/ens2f0/ecn/roce_np/cnp_dscp || echo "inof: /sys/class/net/ens2f0/ecn/roce_np/cnp_dscp: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 6 > /sys/class/net/ens2f0/ecn/roce_np/cnp_802p_prio || echo "inof: /sys/class/net/ens2f0/ecn/roce_np/cnp_802p_prio: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 2 > /sys/class/net/ens2f0/ecn/roce_np/min_time_between_cnps || echo "inof: /sys/class/net/ens2f0/ecn/roce_np/min_time_between_cnps: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 300 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_time_reset || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/rpg_time_reset: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 32767 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_byte_reset || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/rpg_byte_reset: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_threshold || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/rpg_threshold: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 5 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_ai_rate || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/rpg_ai_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 50 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_hai_rate || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/rpg_hai_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 11 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_gd || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/rpg_gd: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 50 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_min_dec_fac || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/rpg_min_dec_fac: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens2f0/ecn/roce_rp/rpg_min_rate || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/rpg_min_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1019 > /sys/class/net/ens2f0/ecn/roce_rp/dce_tcp_g || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/dce_tcp_g: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens2f0/ecn/roce_rp/dce_tcp_rtt || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/dce_tcp_rtt: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 4 > /sys/class/net/ens2f0/ecn/roce_rp/rate_reduce_monitor_period || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/rate_reduce_monitor_period: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1023 > /sys/class/net/ens2f0/ecn/roce_rp/initial_alpha_value || echo "inof: /sys/class/net/ens2f0/ecn/roce_rp/initial_alpha_value: optional DCQCN step failed (the NIC keeps its value)" >&2
else
	echo "inof: ens2f0 has no mlx5 ecn/ directory: DCQCN not set" >&2
fi
if rdma=$(inof_rdma_port ens2f0); then
	echo "RoCE v2" > "$rdma/default_roce_mode"
	# ToS 96 = DSCP 24 for RDMA-CM connections that set none (nvme-rdma without --tos)
	echo "96" > "$rdma/default_roce_tos"
	inof_check_roce_mtu ens2f0 4096
elif [ $? -eq 2 ]; then
	inof_rc=1
fi

# ens3f0 (port class spine: 100000 Mb/s, 300 m, MTU 9100)
dcb apptrust set dev ens3f0 order dscp || echo "inof: apptrust: optional step failed (mlx5 has no apptrust operation and iproute2 before 6.2 no apptrust object; mlx5 trusts DSCP once the DSCP APP entries below exist)" >&2
# all 64 DSCPs, so none keeps the NIC's default DSCP/8 priority (mlx5 switches to DSCP trust with the first entry)
dcb app replace dev ens3f0 dscp-prio 0:0 1:0 2:0 3:0 4:0 5:0 6:0 7:0 8:0 9:0 10:0 11:0 12:0 13:0 14:0 15:0 16:0 17:0 18:0 19:0 20:0 21:0 22:0 23:0 24:3 25:0 26:0 27:0 28:0 29:0 30:0 31:0 32:0 33:0 34:0 35:0 36:0 37:0 38:0 39:0 40:0 41:0 42:0 43:0 44:0 45:0 46:0 47:0 48:6 49:0 50:0 51:0 52:0 53:0 54:0 55:0 56:0 57:0 58:0 59:0 60:0 61:0 62:0 63:0
dcb ets set dev ens3f0 tc-tsa 0:ets 1:ets 2:ets 3:ets 4:ets 5:ets 6:strict 7:ets tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0 prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:6 7:0
# mlx5 reads the PFC delay as the cable length in metres and sizes the lossless buffer from it;
# expect a lossless buffer of at least 128880 B (NIC xoff 119652 B); switch side: headroom 138084 B (xoff 119652 B: switch model 83968 B, NIC model 119652 B; xon 18432 B).
dcb pfc set dev ens3f0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay 300
dcb buffer set dev ens3f0 prio-buffer 0:0 1:0 2:0 3:1 4:0 5:0 6:0 7:0
if [ -d /sys/class/net/ens3f0/ecn ]; then
	echo 1 > /sys/class/net/ens3f0/ecn/roce_np/enable/3 || echo "inof: /sys/class/net/ens3f0/ecn/roce_np/enable/3: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens3f0/ecn/roce_rp/enable/3 || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/enable/3: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 48 > /sys/class/net/ens3f0/ecn/roce_np/cnp_dscp || echo "inof: /sys/class/net/ens3f0/ecn/roce_np/cnp_dscp: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 6 > /sys/class/net/ens3f0/ecn/roce_np/cnp_802p_prio || echo "inof: /sys/class/net/ens3f0/ecn/roce_np/cnp_802p_prio: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 2 > /sys/class/net/ens3f0/ecn/roce_np/min_time_between_cnps || echo "inof: /sys/class/net/ens3f0/ecn/roce_np/min_time_between_cnps: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 300 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_time_reset || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/rpg_time_reset: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 32767 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_byte_reset || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/rpg_byte_reset: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_threshold || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/rpg_threshold: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 5 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_ai_rate || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/rpg_ai_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 50 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_hai_rate || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/rpg_hai_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 11 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_gd || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/rpg_gd: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 50 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_min_dec_fac || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/rpg_min_dec_fac: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens3f0/ecn/roce_rp/rpg_min_rate || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/rpg_min_rate: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1019 > /sys/class/net/ens3f0/ecn/roce_rp/dce_tcp_g || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/dce_tcp_g: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1 > /sys/class/net/ens3f0/ecn/roce_rp/dce_tcp_rtt || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/dce_tcp_rtt: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 4 > /sys/class/net/ens3f0/ecn/roce_rp/rate_reduce_monitor_period || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/rate_reduce_monitor_period: optional DCQCN step failed (the NIC keeps its value)" >&2
	echo 1023 > /sys/class/net/ens3f0/ecn/roce_rp/initial_alpha_value || echo "inof: /sys/class/net/ens3f0/ecn/roce_rp/initial_alpha_value: optional DCQCN step failed (the NIC keeps its value)" >&2
else
	echo "inof: ens3f0 has no mlx5 ecn/ directory: DCQCN not set" >&2
fi
if rdma=$(inof_rdma_port ens3f0); then
	echo "RoCE v2" > "$rdma/default_roce_mode"
	# ToS 96 = DSCP 24 for RDMA-CM connections that set none (nvme-rdma without --tos)
	echo "96" > "$rdma/default_roce_tos"
	inof_check_roce_mtu ens3f0 4096
elif [ $? -eq 2 ]; then
	inof_rc=1
fi

# Not set on hosts: ECN marking (Kmin/Kmax/Pmax) is a switch setting; hosts react to marks with DCQCN
# Not set on hosts: no PFC watchdog on hosts (dcb has none; detection 200 ms, restoration 200 ms, action drop are switch settings)
exit $inof_rc
