// Package logscan reads the stderr the logbook processes of a soak run left
// for what their replies do not show: a Go panic or fatal error (the
// process died of it, which looks like one more kill), a panic a process
// recovered and logged (no input may make logbook panic), and a data race
// (a binary built with -race, which reports each race once and goes on).
package logscan

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// maxShown is how many findings Scan returns before it only counts them.
const maxShown = 20

// finding reports whether line is one of a crash, a recovered panic or a
// race report.
func finding(line string) bool {
	for _, p := range []string{"panic: ", "fatal error: ", "WARNING: DATA RACE"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	// a recovered panic, logged with its value as the attribute panic
	return strings.Contains(line, " panic=")
}

// Scan returns one line per finding in the files that match glob, each
// "file:line: text" (the report, a stack, follows it in the file), at most
// maxShown and then how many more; an unreadable file is a finding too.
func Scan(glob string) []string {
	files, err := filepath.Glob(glob)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", glob, err)}
	}
	sort.Strings(files)
	var out []string
	more := 0
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", f, err))
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for n := 1; sc.Scan(); n++ {
			if !finding(sc.Text()) {
				continue
			}
			if len(out) == maxShown {
				more++
				continue
			}
			out = append(out, fmt.Sprintf("%s:%d: %.200s", f, n, sc.Text()))
		}
		if err := sc.Err(); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", f, err))
		}
		fh.Close()
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("and %d more such lines", more))
	}
	return out
}
