package devinfo

import (
	"github.com/goverbs/goverbs/internal/golden"

	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/conn/memconn"
	"github.com/goverbs/goverbs/verbs"
)

// device opens a device on a fixed address of an in-memory fabric, so its
// GUID and output are the same on every run.
func device(t *testing.T) *verbs.Device {
	net := memconn.NewNetwork(memconn.Options{})
	b, err := net.Listen(netip.MustParseAddrPort("10.77.0.1:4791"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := verbs.OpenDevice(verbs.DeviceConfig{Name: "goverbs0", Bind: b, LinkMTU: 1500})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestDevInfo(t *testing.T) {
	var out bytes.Buffer
	if err := DevInfo(&out, device(t), 0); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "ibv_devinfo.golden", out.Bytes())
	if err := DevInfo(&out, device(t), 2); err == nil {
		t.Error("port 2 accepted")
	}
}

func TestDevices(t *testing.T) {
	var out bytes.Buffer
	Devices(&out, []*verbs.Device{device(t)})
	golden.Check(t, "ibv_devices.golden", out.Bytes())
}

func TestStat(t *testing.T) {
	var out bytes.Buffer
	Stat(&out, device(t))
	golden.Check(t, "stat.golden", out.Bytes())
	if !strings.HasPrefix(out.String(), "link goverbs0/1 sent_pkts 0 rcvd_pkts 0 duplicate_request 0") {
		t.Errorf("not in rdma statistic's shape: %q", out.String())
	}
}
