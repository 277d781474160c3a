// Package ib is the verbs vocabulary shared by the public verbs package and
// the engine: the key and queue pair number types, the enums and flag sets
// of libibverbs (rdma-core's verbs header) with their libibverbs values,
// and the QP state-transition table of the Linux RDMA core. Nothing here
// travels on the wire (that is internal/wire); the values are the familiar
// C ones so that code, logs and errors read like their C counterparts.
//
// Where each comes from, in doc/protocol.md: MTUs §5.1, GIDs §1.3, work
// completions §10, work requests §10.5, the QP state machine §11 and access
// flags §12.1. The package imports only the standard library.
package ib
