//go:build linux

// Package ports gives the soak's servers their loopback ports.
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
)

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Free is a loopback port nothing listens on now, outside the kernel's
// ephemeral range, and never given before by this process. A port from
// bind(0), freed again, may be handed by the kernel to any other socket —
// an outgoing connection of a node or an agent — before the server binds
// it, or while a killed server is down before its restart on the same
// port; the kernel never picks a port outside its ephemeral range by
// itself. (ledger/jetstream's test cluster picks its ports the same way:
// the soak imports no logbook package.)
func Free() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	lo, hi := outsideEphemeral()
	if lo == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	start := rand.IntN(hi - lo)
	for k := range hi - lo {
		p := lo + (start+k)%(hi-lo)
		if given[p] {
			continue
		}
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			l.Close()
			given[p] = true
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free loopback port in [%d, %d)", lo, hi)
}

// outsideEphemeral is a range [lo, hi) below or above the kernel's
// ephemeral range (ip_local_port_range), or 0, 0 if it cannot tell or the
// range leaves too little room on either side.
func outsideEphemeral() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil {
		return 0, 0
	}
	switch {
	case first >= 12000:
		return 10000, first
	case last <= 63000:
		return last + 1, 65536
	}
	return 0, 0
}
