// Package devinfo prints goverbs devices the way rdma-core's ibv_devinfo
// and ibv_devices and iproute2's "rdma statistic" print kernel devices, so
// scripts written for those tools read goverbs output too.
package devinfo

import (
	"fmt"
	"io"

	"github.com/goverbs/goverbs/verbs"
)

// guidStr formats a GUID as ibv_devinfo does: four groups of 16 bits.
func guidStr(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48&0xffff, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}

func mtuStr(m verbs.MTU) string { return fmt.Sprintf("%d (%d)", m.Bytes(), uint8(m)) }

// DevInfo writes the non-verbose ibv_devinfo block of d; port 0 means all
// ports (goverbs devices have one). It fails like the C tool for a port
// the device lacks.
func DevInfo(w io.Writer, d *verbs.Device, port int) error {
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
		fmt.Fprintln(w)
	}
	return nil
}

// Devices writes the ibv_devices table.
func Devices(w io.Writer, devs []*verbs.Device) {
	fmt.Fprintf(w, "    %-16s\t    node GUID\n", "device")
	fmt.Fprintf(w, "    %-16s\t----------------\n", "------")
	for _, d := range devs {
		fmt.Fprintf(w, "    %-16s\t%016x\n", d.Name(), d.Query().NodeGUID)
	}
}

// Stat writes the counters of d on one line, as "rdma statistic show link
// DEV/1" does: "link DEV/1 name value name value ...", rxe's counter names
// first.
func Stat(w io.Writer, d *verbs.Device) {
	c := d.Counters()
	fmt.Fprintf(w, "link %s/1", d.Name())
	for i := range verbs.NumCounters {
		fmt.Fprintf(w, " %s %d", verbs.Counter(i), c[i])
	}
	fmt.Fprintln(w)
}
