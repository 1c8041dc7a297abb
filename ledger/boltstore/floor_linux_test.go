package boltstore

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkCommitFloor measures, on the disk under the temp directory, what
// a durable commit costs in I/O alone, for the two designs issue 9's
// single-call rows compare, alternated op by op: a write-ahead log's (the
// SQLite peer's: its pages appended in one run, one fdatasync) and bbolt's
// (its pages wherever the freelist put them, one fdatasync; then the meta
// page, a second one). A thought_record commit writes 5-6 pages in 4 runs
// (strace of `logbook serve`: root leaf, events leaf and branch, the
// spaces' leaf, freelist); the log's are 2 pages in one run. On a disk
// whose cache has to be flushed (no FUA), each fdatasync is a flush. It
// also reports the kernel CPU each pattern takes (this thread's, as
// getrusage counts it): the floor under issue 9's CPU per call.
func BenchmarkCommitFloor(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "floor"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	const pages = 4096 // a 16 MiB file, written once so no write allocates
	if _, err := f.WriteAt(make([]byte, pages*4096), 0); err != nil {
		b.Fatal(err)
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		b.Fatal(err)
	}
	page := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var spent, sys [2]time.Duration
	walAt := int64(0)
	for b.Loop() {
		sys0 := threadSys()
		start := time.Now()
		walAt = (walAt + 2) % pages
		if _, err := f.WriteAt(append(page, page...), walAt*4096); err != nil {
			b.Fatal(err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		sys1 := threadSys()
		for range 5 {
			if _, err := f.WriteAt(page, (2+rng.Int64N(pages-2))*4096); err != nil {
				b.Fatal(err)
			}
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteAt(page, 0); err != nil {
			b.Fatal(err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
		spent[0] += mid.Sub(start)
		spent[1] += time.Since(mid)
		sys[0] += sys1 - sys0
		sys[1] += threadSys() - sys1
	}
	wal, bolt := spent[0]/time.Duration(b.N), spent[1]/time.Duration(b.N)
	b.ReportMetric(float64(wal.Microseconds()), "log-µs/commit")
	b.ReportMetric(float64(bolt.Microseconds()), "bbolt-µs/commit")
	b.ReportMetric(float64(bolt-wal)/1e3, "difference-µs")
	b.ReportMetric(float64(sys[0].Microseconds())/float64(b.N), "log-sys-µs/commit")
	b.ReportMetric(float64(sys[1].Microseconds())/float64(b.N), "bbolt-sys-µs/commit")
}

// threadSys is the kernel CPU time of the calling thread so far.
func threadSys() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Stime.Nano())
}
