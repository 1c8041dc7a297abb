package boltstore

import (
	"os"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// bbolt grows a file by truncating it longer (by allocSize past the pages
// it needs), which leaves a hole there: the pages later commits add past
// the last used one land in blocks the file system has yet to allocate,
// and on ext4 each such commit's fdatasync must then also commit the
// allocation to the journal. Writing into blocks already written costs
// only the data. So before a commit adds pages, fillTail writes zeros over
// what of the file past bbolt's high-water mark is still a hole: once per
// growth of the file, in the commit after it, and every later commit until
// the next growth overwrites. With 64 concurrent appenders, which add about
// four pages a commit, that took Append from a median 0.57 to 0.675 of raw
// bbolt's events/s (BenchmarkAppendVsRaw/64, 5 and 7 runs alternated with
// the binary before); one call at a time reuses freed pages and rarely
// reaches the hole.
//
// The file's bytes do not change (a hole reads as zeros), nor its size.
// Past the high-water mark bbolt keeps nothing, and no other writer is in
// the file while this process commits; the zeros go in the commit's own
// transaction, before bbolt writes its pages, and its fdatasync makes them
// durable with them. A crash midway leaves zeros and holes past the mark,
// which nothing reads.

// fillMax bounds the zeros one commit writes: a file grown in bigger steps
// (by an older binary's 16 MiB, or a rebuild's copy) is filled over
// several commits.
const fillMax = 4 << 20

var zeros [256 << 10]byte

// fillTail writes zeros over the holes of o's file between btx's
// high-water mark and o.size, the file's size when the commit began. It
// is best effort: a file it cannot fill (no SEEK_HOLE, no space left) is
// only slower to commit to.
func (l *Store) fillTail(o *openFile, btx *bolt.Tx) {
	if o.size <= o.filled || l.opts.NoSync {
		return
	}
	fd := int(o.file.Fd())
	hole, err := unix.Seek(fd, max(btx.Size(), o.filled), unix.SEEK_HOLE)
	if err != nil || hole >= o.size {
		o.filled = o.size // nothing to fill until the file grows again
		return
	}
	end := min(o.size, hole+fillMax)
	for off := hole; off < end; {
		n, err := unix.Pwrite(fd, zeros[:min(int64(len(zeros)), end-off)], off)
		if err != nil {
			return
		}
		off += int64(n)
	}
	o.filled = end
}

// ReadAhead asks the kernel to read the whole ledger file into its page
// cache, in the background, for a command about to read all of it (verify,
// rebuild). bbolt maps the file for random access (no read-ahead), so on
// a file not in the cache each page it touches was one small read: a
// rebuild of 1M events took 3.4 s instead of 1.0 s. It is best effort: a
// file it cannot advise on is read as before.
func (l *Store) ReadAhead() {
	f, err := os.Open(l.path)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	// The kernel reads at most its read-ahead window per call.
	for off := int64(0); off < fi.Size(); off += readAheadStep {
		if unix.Fadvise(int(f.Fd()), off, readAheadStep, unix.FADV_WILLNEED) != nil {
			return
		}
	}
}

const readAheadStep = 128 << 10

// pendRoom is the room a file system must have, and the file's size
// limit leave, for commits to be left pending (pending.go): bbolt's commit
// of them, later, must not fail for want of room after their calls were
// answered.
const pendRoom = 64 << 20

// roomFor tells whether o's file has pendRoom to grow by: free space on
// its file system, under the process's file size limit (two system calls a
// commit). A quota is not seen: a pending commit refused by one is
// recovered from the journal by the file's next open.
func (l *Store) roomFor(o *openFile) bool {
	var st unix.Statfs_t
	var lim unix.Rlimit
	if unix.Fstatfs(int(o.file.Fd()), &st) != nil || unix.Getrlimit(unix.RLIMIT_FSIZE, &lim) != nil {
		return false
	}
	return st.Bavail*uint64(st.Bsize) >= pendRoom &&
		(lim.Cur == unix.RLIM_INFINITY || lim.Cur >= uint64(o.size)+pendRoom)
}
