// Package goverbs is RDMA in pure Go: the verbs programming model on a
// software RDMA NIC that speaks standard RoCEv2 on the wire, so the same
// code runs in tests anywhere and talks to Linux Soft-RoCE and RoCE
// hardware. See README.md for the layout; this package holds no code, only
// the project-wide tests (layering_test.go).
package goverbs
