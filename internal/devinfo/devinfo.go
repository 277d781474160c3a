// Package devinfo prints goverbs devices the way rdma-core's ibv_devinfo
// and ibv_devices and iproute2's "rdma statistic" print kernel devices, so
// scripts written for those tools read goverbs output too.
package devinfo

import (
	"fmt"
	"io"
	"net/netip"

	"github.com/goverbs/goverbs/verbs"
)

// guidStr formats a GUID as ibv_devinfo does: four groups of 16 bits.
func guidStr(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48&0xffff, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}

func mtuStr(m verbs.MTU) string { return fmt.Sprintf("%d (%d)", m.Bytes(), uint8(m)) }

// DevInfo writes the ibv_devinfo block of d, with -v's attributes when
// verbose is set; port 0 means all ports (goverbs devices have one). It
// fails like the C tool for a port the device lacks.
func DevInfo(w io.Writer, d *verbs.Device, port int, verbose bool) error {
	a := d.Query()
	if port > a.PhysPortCnt {
		return fmt.Errorf("Invalid port requested for device")
	}
	fmt.Fprintf(w, "hca_id:\t%s\n", d.Name())
	// Soft-RoCE reports the InfiniBand transport over an Ethernet link.
	fmt.Fprintf(w, "\ttransport:\t\t\t%s (%d)\n", "InfiniBand", 0)
	if a.FWVer != "" {
		fmt.Fprintf(w, "\tfw_ver:\t\t\t\t%s\n", a.FWVer)
	}
	fmt.Fprintf(w, "\tnode_guid:\t\t\t%s\n", guidStr(a.NodeGUID))
	fmt.Fprintf(w, "\tsys_image_guid:\t\t\t%s\n", guidStr(a.SysImageGUID))
	fmt.Fprintf(w, "\tvendor_id:\t\t\t0x%04x\n", a.VendorID)
	fmt.Fprintf(w, "\tvendor_part_id:\t\t\t%d\n", a.VendorPartID)
	fmt.Fprintf(w, "\thw_ver:\t\t\t\t0x%X\n", a.HWVer)
	fmt.Fprintf(w, "\tphys_port_cnt:\t\t\t%d\n", a.PhysPortCnt)
	if verbose {
		deviceAttrs(w, &a)
	}
	for p := 1; p <= a.PhysPortCnt; p++ {
		if port != 0 && p != port {
			continue
		}
		pa, err := d.QueryPort(uint8(p))
		if err != nil {
			return fmt.Errorf("Failed to query port %d props", p)
		}
		fmt.Fprintf(w, "\t\tport:\t%d\n", p)
		fmt.Fprintf(w, "\t\t\tstate:\t\t\t%s (%d)\n", pa.State, uint8(pa.State))
		fmt.Fprintf(w, "\t\t\tmax_mtu:\t\t%s\n", mtuStr(pa.MaxMTU))
		fmt.Fprintf(w, "\t\t\tactive_mtu:\t\t%s\n", mtuStr(pa.ActiveMTU))
		fmt.Fprintf(w, "\t\t\tsm_lid:\t\t\t%d\n", 0)
		fmt.Fprintf(w, "\t\t\tport_lid:\t\t%d\n", 0)
		fmt.Fprintf(w, "\t\t\tport_lmc:\t\t0x%02x\n", 0)
		fmt.Fprintf(w, "\t\t\tlink_layer:\t\t%s\n", pa.LinkLayer)
		if verbose {
			if err := portAttrs(w, d, &pa); err != nil {
				return err
			}
		}
		fmt.Fprintln(w)
	}
	return nil
}

// Device capability flags (enum ibv_device_cap_flags) goverbs has, in the
// order ibv_devinfo lists them.
var capFlags = []struct {
	bit  uint32
	name string
}{
	{1 << 1, "BAD_PKEY_CNTR"}, // the port's bad_pkey_cntr counts drop_bad_pkey
	{1 << 10, "PORT_ACTIVE_EVENT"},
	{1 << 11, "SYS_IMAGE_GUID"},
	{1 << 12, "RC_RNR_NAK_GEN"},
	{1 << 13, "SRQ_RESIZE"},
	{1 << 17, "MEM_WINDOW"},
	{1 << 21, "MEM_MGT_EXTENSIONS"}, // as rxe: LOCAL_INV, SEND_WITH_INV, type 2 windows (fast registration has no user verb)
	{1 << 24, "MEM_WINDOW_TYPE_2B"},
}

// deviceAttrs writes ibv_devinfo -v's device attributes in rdma-core 44's
// layout. What goverbs lacks (end-to-end contexts, multicast, on-demand
// paging, TSO, RSS, rate limits, tag matching) reads 0 or unsupported, as
// the C tool shows it for devices without it.
func deviceAttrs(w io.Writer, a *verbs.DeviceAttr) {
	var flags uint32
	for _, f := range capFlags {
		flags |= f.bit
	}
	atomic := "ATOMIC_NONE (0)"
	if a.AtomicCapHCA {
		atomic = "ATOMIC_HCA (1)"
	}
	p := func(format string, v ...any) { fmt.Fprintf(w, format+"\n", v...) }
	p("\tmax_mr_size:\t\t\t0x%x", a.MaxMRSize)
	p("\tpage_size_cap:\t\t\t0x%x", a.PageSizeCap)
	p("\tmax_qp:\t\t\t\t%d", a.MaxQP)
	p("\tmax_qp_wr:\t\t\t%d", a.MaxQPWR)
	p("\tdevice_cap_flags:\t\t0x%08x", flags)
	for _, f := range capFlags {
		p("\t\t\t\t\t%s", f.name)
	}
	p("\tmax_sge:\t\t\t%d", a.MaxSGE)
	p("\tmax_sge_rd:\t\t\t%d", a.MaxSGE)
	p("\tmax_cq:\t\t\t\t%d", a.MaxCQ)
	p("\tmax_cqe:\t\t\t%d", a.MaxCQE)
	p("\tmax_mr:\t\t\t\t%d", a.MaxMR)
	p("\tmax_pd:\t\t\t\t%d", a.MaxPD)
	p("\tmax_qp_rd_atom:\t\t\t%d", a.MaxQPRdAtom)
	p("\tmax_ee_rd_atom:\t\t\t0")
	p("\tmax_res_rd_atom:\t\t%d", a.MaxQPRdAtom*a.MaxQP)
	p("\tmax_qp_init_rd_atom:\t\t%d", a.MaxQPInitRdAtom)
	p("\tmax_ee_init_rd_atom:\t\t0")
	p("\tatomic_cap:\t\t\t%s", atomic)
	p("\tmax_ee:\t\t\t\t0")
	p("\tmax_rdd:\t\t\t0")
	p("\tmax_mw:\t\t\t\t%d", a.MaxMW)
	for _, name := range []string{"\tmax_raw_ipv6_qp:\t\t",
		"\tmax_raw_ethy_qp:\t\t", "\tmax_mcast_grp:\t\t\t", "\tmax_mcast_qp_attach:\t\t", "\tmax_total_mcast_qp_attach:\t",
		"\tmax_ah:\t\t\t\t", "\tmax_fmr:\t\t\t"} {
		p("%s0", name)
	}
	p("\tmax_srq:\t\t\t%d", a.MaxSRQ)
	p("\tmax_srq_wr:\t\t\t%d", a.MaxSRQWR)
	p("\tmax_srq_sge:\t\t\t%d", a.MaxSRQSGE)
	p("\tmax_pkeys:\t\t\t1")
	p("\tlocal_ca_ack_delay:\t\t%d", a.LocalCAAckDelay)
	p("\tgeneral_odp_caps:")
	for _, t := range []string{"rc", "uc", "ud", "xrc"} {
		p("\t%s_odp_caps:\n\t\t\t\t\tNO SUPPORT", t)
	}
	p("\tcompletion_timestamp_mask not supported")
	p("\tcore clock not supported")
	p("\tdevice_cap_flags_ex:\t\t0x%X", flags)
	p("\ttso_caps:\n\t\tmax_tso:\t\t\t0")
	p("\trss_caps:\n\t\tmax_rwq_indirection_tables:\t\t\t0\n\t\tmax_rwq_indirection_table_size:\t\t\t0")
	p("\t\trx_hash_function:\t\t\t\t0x0\n\t\trx_hash_fields_mask:\t\t\t\t0x0")
	p("\tmax_wq_type_rq:\t\t\t0")
	p("\tpacket_pacing_caps:\n\t\tqp_rate_limit_min:\t0kbps\n\t\tqp_rate_limit_max:\t0kbps")
	p("\ttag matching not supported")
	p("\tnum_comp_vectors:\t\t1")
}

// portAttrs writes ibv_devinfo -v's port attributes and GID table. A
// software device knows no link speed: it reports 1X at 2.5 Gb/s, what the
// kernel reports for an Ethernet device whose speed it cannot learn.
func portAttrs(w io.Writer, d *verbs.Device, pa *verbs.PortAttr) error {
	p := func(format string, v ...any) { fmt.Fprintf(w, format+"\n", v...) }
	p("\t\t\tmax_msg_sz:\t\t0x%x", pa.MaxMsgSz)
	p("\t\t\tport_cap_flags:\t\t0x%08x", 0)
	p("\t\t\tport_cap_flags2:\t0x%04x", 0)
	p("\t\t\tmax_vl_num:\t\t1 (1)")
	p("\t\t\tbad_pkey_cntr:\t\t0x%x", pa.BadPKeyCntr)
	p("\t\t\tqkey_viol_cntr:\t\t0x0")
	p("\t\t\tsm_sl:\t\t\t0")
	p("\t\t\tpkey_tbl_len:\t\t%d", pa.PKeyTblLen)
	p("\t\t\tgid_tbl_len:\t\t%d", pa.GIDTblLen)
	p("\t\t\tsubnet_timeout:\t\t0")
	p("\t\t\tinit_type_reply:\t0")
	p("\t\t\tactive_width:\t\t1X (1)")
	p("\t\t\tactive_speed:\t\t2.5 Gbps (1)")
	p("\t\t\tphys_state:\t\tLINK_UP (5)")
	for i := range pa.GIDTblLen {
		gid, err := d.QueryGID(1, i)
		if err != nil {
			return fmt.Errorf("Failed to query gid to port 1, index %d", i)
		}
		p("\t\t\tGID[%3d]:\t\t%s, RoCE v2", i, netip.AddrFrom16(gid))
	}
	return nil
}

// Devices writes the ibv_devices table.
func Devices(w io.Writer, devs []*verbs.Device) {
	fmt.Fprintf(w, "    %-16s\t   node GUID\n", "device")
	fmt.Fprintf(w, "    %-16s\t----------------\n", "------")
	for _, d := range devs {
		fmt.Fprintf(w, "    %-16s\t%016x\n", d.Name(), d.Query().NodeGUID)
	}
}

// Stat writes the counters of d on one line, as "rdma statistic show link
// DEV/1" does: "link DEV/1 name value name value ... " (each item followed
// by a space), rxe's counter names first.
func Stat(w io.Writer, d *verbs.Device) {
	c := d.Counters()
	fmt.Fprintf(w, "link %s/1 ", d.Name())
	for i := range verbs.NumCounters {
		fmt.Fprintf(w, "%s %d ", verbs.Counter(i), c[i])
	}
	fmt.Fprintln(w)
}
