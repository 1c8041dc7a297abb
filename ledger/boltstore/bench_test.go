package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	bolt "go.etcd.io/bbolt"
)

// Every benchmark whose unit of work is an event reports "events/s", and its
// ns/op is per event, so `make bench` can set it beside the raw bbolt
// baseline measured in the same run:
//
//	BenchmarkAppend          vs BenchmarkRawBoltPut1   (one durable commit per event)
//	BenchmarkAppendParallel  vs BenchmarkRawBoltPut64  (64 appenders / 64 puts per commit)
//	BenchmarkVerify          vs BenchmarkRawBoltScan   (read and SHA-256 every stored record)
//	proofs and range roots   vs BenchmarkRawBoltGet    (one read: opening the file for it, or in a tx)
//
// BenchmarkAppendVsRaw runs the first two pairs alternately, operation by
// operation, for ratios that a busy machine's noise falls on alike.
//
// The large ledgers (benchLedger) are built once and kept in the system's
// temp directory, keyed by size and format, so repeated runs do not rebuild
// them.

// benchRecordSize is the size of a stored event in the benchmarks, and of the
// raw records of the baselines.
const benchRecordSize = 300

// benchEvent is an event whose stored form is benchRecordSize bytes (for
// sequence numbers of the same msgpack width).
var benchEvent = func() ledger.Event {
	e := ledger.Event{Type: "bench.appended", Version: 1, Actor: "A-bench", Subjects: []string{"T-0001", "Θ-0001"}}
	e.Seq, e.Time = 1<<20, time.Now()
	raw, err := e.Encode()
	if err != nil {
		panic(err)
	}
	// The payload is a bin8 (2 header bytes) of filler.
	e.Payload = make([]byte, benchRecordSize-len(raw)+1-2)
	for i := range e.Payload {
		e.Payload[i] = byte(i)
	}
	e.Seq, e.Time = 0, time.Time{}
	return e
}()

func appendBench(tx *Tx) error {
	_, err := tx.Append(benchEvent)
	return err
}

func reportEvents(b *testing.B, events int) {
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppend: one event per durable commit, one appender.
func BenchmarkAppend(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	w0 := l.pagesWritten()
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Update(appendBench); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportEvents(b, b.N)
	reportPages(b, l, w0, b.N, b.N)
}

// reportPages closes l and reports the pages its commits wrote since it had
// written w0, per commit (bbolt's count, meta pages included: what the
// fsyncs carry), and the Merkle nodes' bytes in the file per event.
func reportPages(b *testing.B, l *Store, w0 int64, commits, events int) {
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(l.pagesWritten()-w0)/float64(commits), "pages/commit")
	db, err := bolt.Open(l.Path(), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var merkle int
	db.View(func(btx *bolt.Tx) error {
		merkle = btx.Bucket(bucketMerkle).Stats().LeafInuse
		return nil
	})
	b.ReportMetric(float64(merkle)/float64(events), "merkle-B/event")
}

// rawWritten is how many pages db's commits have written.
func rawWritten(db *bolt.DB) int64 {
	st := db.Stats()
	return st.TxStats.GetWrite()
}

// rawPages reports the pages db's commits wrote since it had written w0,
// per commit.
func rawPages(b *testing.B, db *bolt.DB, w0 int64, commits int) {
	b.ReportMetric(float64(rawWritten(db)-w0)/float64(commits), "pages/commit")
}

// BenchmarkAppendFormat: BenchmarkAppend on a held file of each format,
// side by side in one run, with the pages each commit writes (bbolt's own
// count: what the fsync has to carry) and the Merkle nodes' bytes in the
// file per event.
func BenchmarkAppendFormat(b *testing.B) {
	for format := uint64(1); format <= FormatVersion; format++ {
		b.Run(fmt.Sprintf("format=%d", format), func(b *testing.B) {
			l, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{Create: true, Hold: true, Format: format})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			w0 := l.pagesWritten()
			b.ReportAllocs()
			for b.Loop() {
				if err := l.Update(appendBench); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportEvents(b, b.N)
			reportPages(b, l, w0, b.N, b.N)
		})
	}
}

// BenchmarkAppendParallel: 64 goroutines append one event per Update each;
// group commit shares the fsyncs. ns/op is per event.
func BenchmarkAppendParallel(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	w0 := l.pagesWritten()
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	commits := 0 // written by the committer only
	count := func(tx *Tx) error {
		if len(tx.appended) == 0 {
			commits++
		}
		return appendBench(tx)
	}
	for range 64 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := l.Update(count); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	reportEvents(b, b.N)
	b.ReportMetric(float64(b.N)/float64(commits), "events/commit")
	reportPages(b, l, w0, commits, b.N)
}

// BenchmarkAppendThink: 16 callers that each pause 1 ms between calls, as
// agents over HTTP do (a reply goes back over the network before the next
// call comes): a commit must not keep the calls it has waiting long for
// callers that are not coming back at once. "µs/call" is an Update's mean
// latency; ns/op is per call.
func BenchmarkAppendThink(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var next atomic.Int64
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	b.ResetTimer()
	for range 16 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				start := time.Now()
				if err := l.Update(appendBench); err != nil {
					errs <- err
					return
				}
				total.Add(int64(time.Since(start)))
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(total.Load())/float64(b.N)/1e3, "µs/call")
}

// BenchmarkAppendShared8: 8 Stores on one file — each its own open file,
// so for the file lock they are 8 processes, as 8 agents' `logbook serve`
// are — each appending one event per Update, one at a time. It measures the
// handing of the file from one process to the next. ns/op is per event;
// p99-µs is an Update's 99th percentile.
func BenchmarkAppendShared8(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.db")
	stores := make([]*Store, 8)
	for i := range stores {
		l, err := Open(path, Options{Create: i == 0, LockTimeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		stores[i] = l
	}
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	lat := make([][]time.Duration, len(stores))
	errs := make(chan error, len(stores))
	for i, l := range stores {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				start := time.Now()
				if err := l.Update(appendBench); err != nil {
					errs <- err
					return
				}
				lat[i] = append(lat[i], time.Since(start))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	reportEvents(b, b.N)
}

// openRawBolt opens a plain bbolt file, kept open the way an ordinary bbolt
// program keeps it (until the benchmark ends), with one bucket.
func openRawBolt(b *testing.B) *bolt.DB {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Update(func(btx *bolt.Tx) error { _, err := btx.CreateBucket([]byte("raw")); return err }); err != nil {
		b.Fatal(err)
	}
	return db
}

// rawPuts commits records [first, first+n) in one transaction.
func rawPuts(db *bolt.DB, rec []byte, first, n uint64) error {
	return db.Update(func(btx *bolt.Tx) error {
		bk := btx.Bucket([]byte("raw"))
		bk.FillPercent = 1
		for seq := first; seq < first+n; seq++ {
			if err := bk.Put(u64(seq), rec); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkRawBoltPut1 is the baseline of BenchmarkAppend: the same size of
// record, one plain bbolt put per commit.
func BenchmarkRawBoltPut1(b *testing.B) {
	db := openRawBolt(b)
	rec := make([]byte, benchRecordSize)
	w0 := rawWritten(db)
	b.ReportAllocs()
	seq := uint64(0)
	for b.Loop() {
		seq++
		if err := rawPuts(db, rec, seq, 1); err != nil {
			b.Fatal(err)
		}
	}
	reportEvents(b, b.N)
	rawPages(b, db, w0, b.N)
}

// BenchmarkRawBoltPut1Reopen is BenchmarkRawBoltPut1 with the file opened
// (and flocked) for each commit and closed after it, as Store does so that
// other processes can write between transactions: what that design costs
// plain bbolt, apart from the ledger's own work.
func BenchmarkRawBoltPut1Reopen(b *testing.B) {
	db := openRawBolt(b)
	path := db.Path()
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	open := lockedOpener(5*time.Second, true)
	rec := make([]byte, benchRecordSize)
	b.ReportAllocs()
	seq := uint64(0)
	for b.Loop() {
		seq++
		db, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType, OpenFile: open})
		if err == nil {
			err = errors.Join(rawPuts(db, rec, seq, 1), db.Close())
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	reportEvents(b, b.N)
}

// BenchmarkRawBoltPut64 is the baseline of BenchmarkAppendParallel: 64 puts
// per commit. ns/op is per record.
func BenchmarkRawBoltPut64(b *testing.B) {
	db := openRawBolt(b)
	rec := make([]byte, benchRecordSize)
	w0 := rawWritten(db)
	b.ReportAllocs()
	b.ResetTimer()
	commits := 0
	for seq := uint64(1); seq <= uint64(b.N); seq += 64 {
		if err := rawPuts(db, rec, seq, min(64, uint64(b.N)+1-seq)); err != nil {
			b.Fatal(err)
		}
		commits++
	}
	b.StopTimer()
	reportEvents(b, b.N)
	rawPages(b, db, w0, commits)
}

// openVsRaw opens the Store and the raw bbolt file one BenchmarkAppendVsRaw
// pair compares, and the raw side's record.
func openVsRaw(b *testing.B) (*Store, *bolt.DB, []byte) {
	l, err := Open(filepath.Join(b.TempDir(), "bench.db"), Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l, openRawBolt(b), make([]byte, benchRecordSize)
}

// BenchmarkAppendVsRaw measures each Append benchmark against its raw
// bbolt baseline alternately in one benchmark, so that a shared machine's
// noise (other processes' fsyncs above all) falls on both alike: "1" is
// BenchmarkAppend against BenchmarkRawBoltPut1, one operation of each in
// turn; "64" is BenchmarkAppendParallel against BenchmarkRawBoltPut64 in
// rounds of 1024 events. It reports both rates and the ratio; ns/op is
// per pair of events (one of each).
func BenchmarkAppendVsRaw(b *testing.B) {
	report := func(b *testing.B, spent [2]time.Duration, events int) {
		a, r := float64(events)/spent[0].Seconds(), float64(events)/spent[1].Seconds()
		b.ReportMetric(a, "append-ev/s")
		b.ReportMetric(r, "raw-ev/s")
		b.ReportMetric(a/r, "ratio")
	}
	b.Run("1", func(b *testing.B) {
		l, db, rec := openVsRaw(b)
		var spent [2]time.Duration
		seq := uint64(0)
		for b.Loop() {
			seq++
			start := time.Now()
			if err := l.Update(appendBench); err != nil {
				b.Fatal(err)
			}
			mid := time.Now()
			if err := rawPuts(db, rec, seq, 1); err != nil {
				b.Fatal(err)
			}
			spent[0] += mid.Sub(start)
			spent[1] += time.Since(mid)
		}
		report(b, spent, b.N)
	})
	b.Run("64", func(b *testing.B) {
		l, db, rec := openVsRaw(b)
		const round = 1024
		var spent [2]time.Duration
		seq, events, commits := uint64(1), 0, 0
		count := func(tx *Tx) error {
			if len(tx.appended) == 0 {
				commits++ // run by the committer only, one call at a time
			}
			return appendBench(tx)
		}
		w0, r0 := l.pagesWritten(), rawWritten(db)
		for events < b.N {
			start := time.Now()
			var next atomic.Int64
			var wg sync.WaitGroup
			var failed atomic.Pointer[error]
			for range 64 {
				wg.Go(func() {
					for next.Add(1) <= round {
						if err := l.Update(count); err != nil {
							failed.Store(&err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err := failed.Load(); err != nil {
				b.Fatal(*err)
			}
			mid := time.Now()
			for end := seq + round; seq < end; seq += 64 {
				if err := rawPuts(db, rec, seq, 64); err != nil {
					b.Fatal(err)
				}
			}
			spent[0] += mid.Sub(start)
			spent[1] += time.Since(mid)
			events += round
		}
		report(b, spent, events)
		b.ReportMetric(float64(events)/float64(commits), "events/commit")
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(l.pagesWritten()-w0)/float64(commits), "pages/commit")
		b.ReportMetric(float64(rawWritten(db)-r0)/float64(events/64), "raw-pages/commit")
	})
}

// benchLedger returns the path of a ledger of size benchEvent events, built
// once and cached in the temp directory. Building appends in large batches;
// a cached file is trusted if its head has the right size (delete
// $TMPDIR/logbook-bench to rebuild).
func benchLedger(b *testing.B, size uint64) string {
	return benchLedgerFormat(b, size, FormatVersion)
}

// benchLedgerFormat is benchLedger in the given file format.
func benchLedgerFormat(b *testing.B, size uint64, format uint64) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "logbook-bench")
	base := 0
	if format >= 2 {
		base = baseLevel
	}
	path := filepath.Join(dir, fmt.Sprintf("ledger-f%d-b%d-e%d-r%d-n%d.db", format, base, ledger.EnvelopeVersion, benchRecordSize, size))
	if l, err := Open(path, Options{ReadOnly: true}); err == nil {
		var head ledger.Head
		err := l.View(func(tx *Tx) error { head = tx.Head(); return nil })
		if err == nil && head.Seq == size {
			warm(b, path)
			return path
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	// Build under a unique name and rename, so concurrent runs never see a
	// half-built file.
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	os.Remove(tmp)
	start := time.Now()
	l, err := Open(tmp, Options{Create: true, Format: format})
	if err != nil {
		b.Fatal(err)
	}
	const batch = 1 << 16
	for done := uint64(0); done < size; done += batch {
		n := min(batch, size-done)
		err := l.Update(func(tx *Tx) error {
			for range n {
				if err := appendBench(tx); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			l.Close()
			os.Remove(tmp)
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	os.Remove(journalPath(tmp)) // retired at Close: nothing to recover
	b.Logf("built %d-event ledger %s in %v", size, path, time.Since(start).Round(time.Millisecond))
	warm(b, path)
	return path
}

// warmed holds the paths whose file this process has read once.
var warmed sync.Map

// warm reads the file once, so that benchmarks measure a ledger in the page
// cache, the way a live one is, rather than the disk.
func warm(b *testing.B, path string) {
	if _, done := warmed.LoadOrStore(path, true); done {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		b.Fatal(err)
	}
}

func openBenchLedger(b *testing.B, size uint64) *Store {
	b.Helper()
	l, err := Open(benchLedger(b, size), Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// Sizes of the big ledgers. The proof ledger is not a power of two, so its
// tree has a ragged right border.
const (
	verifySmall = 100_000
	proofSize   = 1_000_000
)

// BenchmarkVerify verifies a whole ledger per op, at 100k and 1M events;
// ns/event and events/s are per event. B/op is all the heap Verify
// allocates in a run, which bounds how far its heap can grow; B/event is the
// same per event. Both staying flat (B/op) or falling (B/event) from 100k to
// 1M events is the evidence that memory does not grow with the ledger: the
// file is read through bbolt's mmap, in short read transactions.
func BenchmarkVerify(b *testing.B) {
	for _, size := range []uint64{verifySmall, proofSize} {
		b.Run(fmt.Sprintf("events=%d", size), func(b *testing.B) {
			l := openBenchLedger(b, size)
			defer l.Close()
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for b.Loop() {
				rep, err := l.Verify(context.Background(), VerifyOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Size != size {
					b.Fatalf("verified %d events, want %d", rep.Size, size)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			events := float64(b.N) * float64(size)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
			b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/events, "B/event")
		})
	}
}

// BenchmarkRawBoltScan is the baseline of BenchmarkVerify: read every stored
// event with a plain bbolt cursor (one read transaction per 65536, as Verify
// chunks) and SHA-256 it, nothing else.
func BenchmarkRawBoltScan(b *testing.B) {
	for _, size := range []uint64{verifySmall, proofSize} {
		b.Run(fmt.Sprintf("events=%d", size), func(b *testing.B) {
			path := benchLedger(b, size)
			b.ResetTimer()
			for b.Loop() {
				var n uint64
				for begin := uint64(1); begin <= size; begin += 1 << 16 {
					db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
					if err != nil {
						b.Fatal(err)
					}
					err = db.View(func(btx *bolt.Tx) error {
						c := btx.Bucket([]byte("events")).Cursor()
						end := begin + 1<<16
						for k, v := c.Seek(u64(begin)); k != nil && binary.BigEndian.Uint64(k) < end; k, v = c.Next() {
							ledger.LeafHash(v)
							n++
						}
						return nil
					})
					db.Close()
					if err != nil {
						b.Fatal(err)
					}
				}
				if n != size {
					b.Fatalf("scanned %d, want %d", n, size)
				}
			}
			events := float64(b.N) * float64(size)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
			b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkRawBoltGet is the baseline of the read benchmarks below: one
// random key of the 1M-event file read with plain bbolt, "view" opening the
// file read-only under a shared lock for it and closing it again, as each
// Store.View does, and "tx" inside one open read transaction.
func BenchmarkRawBoltGet(b *testing.B) {
	path := benchLedger(b, proofSize)
	get := func(btx *bolt.Tx, rng *rand.Rand) error {
		if btx.Bucket([]byte("events")).Get(u64(1+rng.Uint64N(proofSize))) == nil {
			return ErrNotFound
		}
		return nil
	}
	b.Run("view", func(b *testing.B) {
		open := lockedOpener(5*time.Second, true)
		rng := rand.New(rand.NewPCG(1, 2))
		b.ReportAllocs()
		for b.Loop() {
			db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, OpenFile: open})
			if err != nil {
				b.Fatal(err)
			}
			err = db.View(func(btx *bolt.Tx) error { return get(btx, rng) })
			db.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tx", func(b *testing.B) {
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		rng := rand.New(rand.NewPCG(1, 2))
		b.ReportAllocs()
		err = db.View(func(btx *bolt.Tx) error {
			for b.Loop() {
				if err := get(btx, rng); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
}

// readBench runs op in its own Store.View per iteration ("view", what a
// caller pays) and, inside one long View ("tx"), per iteration (the tree
// walk and its node reads alone).
func readBench(b *testing.B, size uint64, op func(tx *Tx, rng *rand.Rand) error) {
	l := openBenchLedger(b, size)
	defer l.Close()
	b.Run("view", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		b.ReportAllocs()
		for b.Loop() {
			if err := l.View(func(tx *Tx) error { return op(tx, rng) }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tx", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		b.ReportAllocs()
		err := l.View(func(tx *Tx) error {
			for b.Loop() {
				if err := op(tx, rng); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkInclusionProof: a random event of the 1M-event log.
func BenchmarkInclusionProof(b *testing.B) {
	readBench(b, proofSize, func(tx *Tx, rng *rand.Rand) error {
		_, err := tx.InclusionProof(1+rng.Uint64N(proofSize), proofSize)
		return err
	})
}

// BenchmarkConsistencyProof: from a random earlier size to the 1M-event log.
func BenchmarkConsistencyProof(b *testing.B) {
	readBench(b, proofSize, func(tx *Tx, rng *rand.Rand) error {
		_, err := tx.ConsistencyProof(1+rng.Uint64N(proofSize-1), proofSize)
		return err
	})
}

// BenchmarkRangeRoot. "aligned": random ranges whose begin is a multiple of
// the largest power of two not above their length (every subtree of an RFC
// tree and every prefix is one): O(log n) stored nodes. "unaligned": begin
// odd, the worst case, where no stored node above the leaves belongs to the
// range's tree and every leaf hash is read: O(n), reported for n = 1,000 and
// n = 100,000 so the slope shows.
func BenchmarkRangeRoot(b *testing.B) {
	b.Run("aligned", func(b *testing.B) {
		readBench(b, proofSize, func(tx *Tx, rng *rand.Rand) error {
			n := 1 + rng.Uint64N(proofSize/2)
			block := uint64(1) << (bits.Len64(n) - 1)
			begin := block * rng.Uint64N((proofSize-n)/block+1)
			_, err := tx.RangeRoot(begin+1, begin+n+1)
			return err
		})
	})
	for _, n := range []uint64{1_000, 100_000} {
		b.Run(fmt.Sprintf("unaligned-n=%d", n), func(b *testing.B) {
			readBench(b, proofSize, func(tx *Tx, rng *rand.Rand) error {
				begin := 1 | rng.Uint64N(proofSize-n) // odd leaf index
				_, err := tx.RangeRoot(begin+1, begin+n+1)
				return err
			})
		})
	}
}

// BenchmarkReadFormat times each read of the tree on a ledger of each
// format of the same 1M events, alternating them at every operation (same
// arguments, one long read transaction each), so the machine's noise falls
// on all alike: "f1-ns", "f2-ns", … per operation. Formats 2 and 3 hash
// their nodes below level 4 from the events (at most 15 per border walked)
// where format 1 reads them; format 3 seeks its nodes in one bucket.
func BenchmarkReadFormat(b *testing.B) {
	ops := []struct {
		name string
		op   func(tx *Tx, x uint64) error
	}{
		{"root", func(tx *Tx, x uint64) error { _, err := tx.Root(1 + x%proofSize); return err }},
		{"inclusion", func(tx *Tx, x uint64) error { _, err := tx.InclusionProof(1+x%proofSize, proofSize); return err }},
		{"consistency", func(tx *Tx, x uint64) error { _, err := tx.ConsistencyProof(1+x%(proofSize-1), proofSize); return err }},
		{"rangeroot-unaligned-n=1000", func(tx *Tx, x uint64) error {
			begin := 1 | x%(proofSize-1000)
			_, err := tx.RangeRoot(begin+1, begin+1001)
			return err
		}},
	}
	stores := openFormats(b)
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			spent := make([]time.Duration, len(stores))
			txs := make([]*Tx, 0, len(stores))
			var run func(i int) error
			run = func(i int) error {
				if i < len(stores) {
					return stores[i].View(func(tx *Tx) error { txs = append(txs, tx); return run(i + 1) })
				}
				rng := rand.New(rand.NewPCG(1, 2))
				for b.Loop() {
					x := rng.Uint64()
					for i, tx := range txs {
						start := time.Now()
						if err := o.op(tx, x); err != nil {
							return err
						}
						spent[i] += time.Since(start)
					}
				}
				return nil
			}
			if err := run(0); err != nil {
				b.Fatal(err)
			}
			for i := range stores {
				b.ReportMetric(float64(spent[i].Nanoseconds())/float64(b.N), fmt.Sprintf("f%d-ns", i+1))
			}
		})
	}
}

// openFormats opens, read-only, a bench ledger of each format (1 to
// FormatVersion) of the same events, closed when the benchmark ends.
func openFormats(b *testing.B) []*Store {
	var stores []*Store
	for f := uint64(1); f <= FormatVersion; f++ {
		l, err := Open(benchLedgerFormat(b, proofSize, f), Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		stores = append(stores, l)
	}
	return stores
}

// BenchmarkVerifyFormat: Verify of a ledger of each format of the same 1M
// events, alternated op by op: "f1-ns/event", "f2-ns/event", …, and the
// heap each run allocated ("f1-B/op", …).
func BenchmarkVerifyFormat(b *testing.B) {
	stores := openFormats(b)
	spent := make([]time.Duration, len(stores))
	alloc := make([]uint64, len(stores))
	for b.Loop() {
		for i, l := range stores {
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			start := time.Now()
			rep, err := l.Verify(context.Background(), VerifyOptions{})
			spent[i] += time.Since(start)
			runtime.ReadMemStats(&ms1)
			alloc[i] += ms1.TotalAlloc - ms0.TotalAlloc
			if err != nil || rep.Size != proofSize {
				b.Fatalf("verify format %d: %d events, %v", i+1, rep.Size, err)
			}
		}
	}
	for i := range stores {
		b.ReportMetric(float64(spent[i].Nanoseconds())/float64(b.N)/proofSize, fmt.Sprintf("f%d-ns/event", i+1))
		b.ReportMetric(float64(alloc[i])/float64(b.N), fmt.Sprintf("f%d-B/op", i+1))
	}
}
