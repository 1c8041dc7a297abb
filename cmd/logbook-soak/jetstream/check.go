//go:build linux

package jetstream

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/logbook-dev/logbook/cmd/logbook-soak/logscan"
)

var markerRE = regexp.MustCompile(`soak-[A-Za-z0-9]+-\d+-\d+`)

// check checks the nodes' files (stopped) against the calls recorded and the
// stream's last seq, and returns the number of failures, each printed on a
// line beginning FAIL with what was lost, added or differs.
func check(nodes []*node, rec *recorder, kills map[string]int, last uint64) int {
	bad := 0
	for _, l := range logscan.Scan(filepath.Join(filepath.Dir(nodes[0].db), "node*.log")) {
		logf("FAIL a node crashed, logged a panic or raced: %s", l)
		bad++
	}
	roots := map[string][]int{}
	for _, n := range nodes {
		out, errs, code := runCmd("verify", "--db", n.db)
		if code != 0 {
			logf("FAIL verify node%d: exit %d: %s %s", n.i, code, out, errs)
			bad++
		}
		out, errs, code = runCmd("root", "--db", n.db)
		if code != 0 {
			logf("FAIL root node%d: exit %d: %s", n.i, code, errs)
			bad++
		}
		roots[strings.TrimSpace(out)] = append(roots[strings.TrimSpace(out)], n.i)
	}
	for r, ns := range roots {
		logf("root %q: nodes %v", r, ns)
	}
	if len(roots) != 1 {
		logf("FAIL the nodes disagree on head and root (above)")
		bad++
	}
	// the markers in node0's log (the others hold the same, if the roots agree)
	counts := map[string]int{}
	out, errs, code := runCmd("replay", "--db", nodes[0].db)
	if code != 0 {
		logf("FAIL replay node0: exit %d: %s", code, errs)
		bad++
	}
	events := 0
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		events++
		if strings.Contains(line, `"tool.called"`) {
			continue
		}
		for _, m := range markerRE.FindAllString(line, -1) {
			counts[m]++
		}
	}
	if last != 0 && uint64(events) != last {
		logf("FAIL node0 holds %d events, the stream %d", events, last)
		bad++
	}
	byKind := map[string]int{}
	for _, o := range rec.out {
		k := o.kind
		if strings.HasPrefix(k, "other") {
			k = k + " " + o.detail
		}
		byKind[k]++
		c := counts[o.marker]
		switch {
		case c > 1:
			logf("FAIL %s (%s on node%d, %s) is in the log %d times, not once", o.marker, o.tool, o.node, o.kind, c)
			bad++
		case o.kind == "ack" && c != 1:
			logf("FAIL %s (%s on node%d) was acknowledged and is not in the log: lost", o.marker, o.tool, o.node)
			bad++
		case o.kind == "refused" && c != 0:
			logf("FAIL %s (%s on node%d) was refused with ERR_STORAGE saying nothing was recorded, and is in the log: %s", o.marker, o.tool, o.node, o.detail)
			bad++
		case o.kind == "other:ERR_INTERNAL":
			logf("FAIL %s (%s on node%d) answered ERR_INTERNAL: %s", o.marker, o.tool, o.node, o.detail)
			bad++
		case strings.HasPrefix(o.kind, "other") && c != 0:
			logf("FAIL %s (%s on node%d) was refused (%s) and is in the log", o.marker, o.tool, o.node, o.kind)
			bad++
		case o.kind == "unknown" || o.kind == "transport":
			logf("outcome unknown to the agent: %s (%s on node%d), in the log %d times: %.200s", o.marker, o.tool, o.node, c, o.detail)
		}
	}
	known := map[string]bool{}
	for _, o := range rec.out {
		known[o.marker] = true
	}
	for m := range counts {
		if !known[m] {
			logf("FAIL marker %s is in the log, and no agent sent it", m)
			bad++
		}
	}
	perNode := map[string]int{}
	for _, o := range rec.out {
		perNode[fmt.Sprintf("node%d:%s", o.node, o.kind)]++
	}
	logf("PER NODE %v", perNode)
	refusedReasons := map[string]int{}
	for _, o := range rec.out {
		if o.kind == "refused" {
			refusedReasons[o.detail]++
		}
	}
	var ks []string
	for k, v := range byKind {
		ks = append(ks, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(ks)
	logf("SUMMARY events=%d streamLast=%d calls=%d %v kills=%v bad=%d", events, last, len(rec.out), ks, kills, bad)
	for r, n := range refusedReasons {
		logf("refused reason x%d: %.300s", n, r)
	}
	return bad
}
