package pingpong

import (
	"fmt"
	"io"

	"github.com/goverbs/goverbs/verbs"
)

// What ud_pingpong adds to the ping-pong (doc/tools.md §1.7).
const (
	// qkey is the Q_Key of ud_pingpong's QP and of every send it makes.
	qkey = 0x11111111
	// grhSize is the network header at the start of each receive buffer
	// of a UD QP, which ud_pingpong allocates in front of the message.
	grhSize = 40
)

// connectUD moves the UD QP to RTR and RTS, sending from my's PSN, and
// makes the address handle of rem's device, with ud_pingpong's hop limit
// 1.
func (s *session) connectUD(my, rem *dest) error {
	rtr := verbs.QPAttr{State: verbs.QPStateRTR}
	if err := s.qp.Modify(&rtr, verbs.QPAttrState); err != nil {
		return fmt.Errorf("Failed to modify QP to RTR: %w", err)
	}
	rts := verbs.QPAttr{State: verbs.QPStateRTS, SQPSN: my.psn}
	if err := s.qp.Modify(&rts, verbs.QPAttrState|verbs.QPAttrSQPSN); err != nil {
		return fmt.Errorf("Failed to modify QP to RTS: %w", err)
	}
	if rem.gid.IsZero() {
		return fmt.Errorf("Failed to create AH: %w", errNoGID)
	}
	a := pathTo(rem, &s.cfg)
	var err error
	if s.ah, err = s.pd.CreateAH(&a); err != nil {
		return fmt.Errorf("Failed to create AH: %w", err)
	}
	return nil
}

// printLocal prints this side's address line: ud_pingpong's has an extra
// space after its label and a colon before the GID.
func printLocal(w io.Writer, d *dest, t verbs.QPType) {
	if t != verbs.QPTypeUD {
		printDest(w, "  local address: ", d)
		return
	}
	fmt.Fprintf(w, "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x: GID %s\n", d.lid, d.qpn, d.psn, d.gid)
}
