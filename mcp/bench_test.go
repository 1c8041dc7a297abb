package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/commands"
	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"github.com/logbook-dev/logbook/skills"
	bolt "go.etcd.io/bbolt"
)

// The benchmarks here drive Server.Run in-process over io.Pipe with a real
// commands.Service on a real (fsync'd) ledger file: the whole server path of
// a tool call without process and pipe overhead, so that
//
//	go test -run '^$' -bench BenchmarkServer -cpuprofile cpu.out ./mcp
//
// profiles what the binary does per call, with the collector tuned as
// logbook serve tunes it (TuneCollector). cmd/logbook's BenchmarkStdio
// measures the same through the real binary.

// BenchmarkServerInflight8 keeps 8 tool calls in flight on one session, as
// BenchmarkStdio/inflight8 does, so calls share group commits.
func BenchmarkServerInflight8(b *testing.B) {
	for _, tool := range []string{"task_create", "task_get"} {
		b.Run(tool, func(b *testing.B) {
			c := startBenchSession(b)
			args := fmt.Sprintf(`{"task_id":%q}`, c.task)
			if tool == "task_create" {
				args = `{"title":"parallel","project":"bench"}`
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			cpu := readCPU()
			for range 8 {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if !c.call(tool, args) {
							b.Errorf("%s: call failed", tool)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			cpu.report(b)
		})
	}
}

// BenchmarkServerCall makes one call at a time.
func BenchmarkServerCall(b *testing.B) {
	for _, tool := range []string{"task_create", "task_get", "thought_record"} {
		b.Run(tool, func(b *testing.B) {
			c := startBenchSession(b)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := readCPU()
			for i := range b.N {
				var args string
				switch tool {
				case "task_create":
					args = fmt.Sprintf(`{"title":"bench %d","project":"bench"}`, i)
				case "task_get":
					args = fmt.Sprintf(`{"task_id":%q,"include_thought_trail":true}`, c.task)
				case "thought_record":
					args = fmt.Sprintf(`{"task_id":%q,"type":"analysis","content":"thought %d"}`, c.task, i)
				}
				if !c.call(tool, args) {
					b.Fatalf("%s: call failed", tool)
				}
			}
			cpu.report(b)
		})
	}
}

// BenchmarkServerCallFloor is what one durable commit of one event costs
// below everything a call adds (JSON-RPC, validation, projections, the
// reply), as BenchmarkServerCall measures it: one 300-byte write made
// durable and nothing else (a pwrite and an fdatasync into a file written
// before, as the journal writes its record: the least any durable call
// can cost), raw bbolt putting one 400-byte value per commit, synced as
// bbolt syncs (two fdatasyncs), and a ledger appending one event of 400
// bytes per commit (the journal: one fdatasync). BenchmarkServerCall's
// cpu-µs/op and B/op, less these, is what logbook's call adds to the
// engine it stands on.
func BenchmarkServerCallFloor(b *testing.B) {
	b.Cleanup(TuneCollector(os.Getenv, MemoryLimit))
	value := make([]byte, 400)
	b.Run("fdatasync", func(b *testing.B) {
		const size = 1 << 20
		f, err := os.Create(filepath.Join(b.TempDir(), "durable"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(make([]byte, size), 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		record := value[:300]
		b.ReportAllocs()
		cpu := readCPU()
		var off int64
		for range b.N {
			if _, err := f.WriteAt(record, off); err != nil {
				b.Fatal(err)
			}
			if err := datasync(f); err != nil {
				b.Fatal(err)
			}
			if off += int64(len(record)); off+int64(len(record)) > size {
				off = 0
			}
		}
		cpu.report(b)
	})
	b.Run("bbolt-put", func(b *testing.B) {
		db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		b.ReportAllocs()
		cpu := readCPU()
		for i := range b.N {
			err := db.Update(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists([]byte("events"))
				if err != nil {
					return err
				}
				bk.FillPercent = 1
				return bk.Put(binary.BigEndian.AppendUint64(nil, uint64(i)), value)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b)
	})
	b.Run("append", func(b *testing.B) {
		l, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{Create: true})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		// An event of 400 bytes as stored: its payload a msgpack bin8 of
		// filler (2 header bytes), as long as the envelope leaves room for.
		e := ledger.Event{Type: "bench.appended", Version: 1, Actor: "bench", Subjects: []string{"T-1"}, Seq: 1 << 20, Time: time.Now()}
		raw, err := e.Encode()
		if err != nil {
			b.Fatal(err)
		}
		n := len(value) - len(raw) + 1 - 2 // (the empty payload's nil counted one byte)
		e.Payload = append([]byte{0xc4, byte(n)}, value[:n]...)
		e.Seq, e.Time = 0, time.Time{}
		b.ReportAllocs()
		cpu := readCPU()
		for range b.N {
			if err := l.Update(func(tx *boltstore.Tx) error { _, err := tx.Append(e); return err }); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b)
	})
}

// BenchmarkThoughtManyTasks is BenchmarkServerCall's thought_record on a
// ledger that holds 3,000 tasks: a call's cost depends on the size of the
// spaces it writes to (bbolt copies the nodes on the path to each key it
// puts), which a ledger of one task hides.
func BenchmarkThoughtManyTasks(b *testing.B) {
	c := startBenchSession(b)
	for i := range 3000 {
		if !c.call("task_create", fmt.Sprintf(`{"title":"other %d","project":"bench"}`, i)) {
			b.Fatal("task_create failed")
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := readCPU()
	for i := range b.N {
		if !c.call("thought_record", fmt.Sprintf(`{"task_id":%q,"type":"analysis","content":"thought %d"}`, c.task, i)) {
			b.Fatal("thought_record failed")
		}
	}
	cpu.report(b)
}

// cpuUse is the CPU time the process has used, in user space and in the
// kernel (system calls: a commit's fdatasyncs and writes are counted here):
// per call, a measure that the machine's other load disturbs less than the
// wall clock.
type cpuUse struct{ user, sys time.Duration }

func readCPU() cpuUse {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return cpuUse{}
	}
	return cpuUse{time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())}
}

// report reports the CPU used since c per op: cpu-µs/op (user and system),
// cpu-user-µs/op and cpu-sys-µs/op.
func (c cpuUse) report(b *testing.B) {
	now := readCPU()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	user, sys := now.user-c.user, now.sys-c.sys
	b.ReportMetric(per(user+sys), "cpu-µs/op")
	b.ReportMetric(per(user), "cpu-user-µs/op")
	b.ReportMetric(per(sys), "cpu-sys-µs/op")
}

// benchSession is a client of Server.Run over pipes that may have many calls
// in flight: a reader goroutine hands each response to its caller by id.
type benchSession struct {
	in      *io.PipeWriter
	writeMu sync.Mutex
	nextID  atomic.Int64

	mu      sync.Mutex
	waiting map[int64]benchWait

	task string // a task with a few thoughts
}

func startBenchSession(b *testing.B) *benchSession {
	b.Helper()
	// The collector as logbook serve sets it, so that the figures are those
	// of the binary as shipped (GOGC and GOMEMLIMIT, if set, still rule).
	b.Cleanup(TuneCollector(os.Getenv, MemoryLimit))
	l, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := commands.New(l, commands.Options{Agent: "bench", Skills: &skills.Set{}})
	if err != nil {
		b.Fatal(err)
	}
	srv := New(svc, Options{Logger: slog.New(slog.DiscardHandler)})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := srv.Run(ctx, inR, outW)
		outW.Close()
		done <- err
	}()
	c := &benchSession{in: inW, waiting: make(map[int64]benchWait)}
	go c.readReplies(outR)
	b.Cleanup(func() {
		inW.Close()
		if err := <-done; err != nil {
			b.Errorf("Run: %v", err)
		}
		cancel()
		l.Close()
	})

	init := make(chan benchReply, 1)
	c.mu.Lock()
	c.waiting[0] = benchWait{ch: init, line: true}
	c.mu.Unlock()
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if r := <-init; !bytes.Contains(r.line, []byte(`,"result":{`)) {
		b.Fatal("initialize failed")
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var created struct {
		Data struct {
			TaskID string `json:"task_id"`
		} `json:"data"`
	}
	reply, ok := c.callReply("task_create", `{"title":"benchmarked","project":"bench","labels":["a","b"]}`)
	if !ok || json.Unmarshal(reply, &created) != nil || created.Data.TaskID == "" {
		b.Fatalf("task_create: %s", reply)
	}
	c.task = created.Data.TaskID
	for i := range 3 {
		if !c.call("thought_record", fmt.Sprintf(`{"task_id":%q,"type":"plan","content":"step %d"}`, c.task, i)) {
			b.Fatal("thought_record failed")
		}
	}
	return c
}

func (c *benchSession) send(line string) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	io.WriteString(c.in, line+"\n")
}

// call makes one tool call and reports whether its envelope was ok.
func (c *benchSession) call(tool, args string) bool {
	_, ok := c.callEnvelope(tool, args, false)
	return ok
}

// benchReply is what the reader hands a caller: the response line, and
// whether the call succeeded (a result whose envelope is ok).
type benchReply struct {
	ok   bool
	line []byte
}

// benchWait is a caller waiting for its reply, and whether it wants the
// line (to read the envelope).
type benchWait struct {
	ch   chan benchReply
	line bool
}

func (c *benchSession) callReply(tool, args string) (json.RawMessage, bool) {
	return c.callEnvelope(tool, args, true)
}

// callEnvelope makes one tool call and reports whether its envelope was
// ok, and with envelope the envelope.
func (c *benchSession) callEnvelope(tool, args string, envelope bool) (json.RawMessage, bool) {
	id := c.nextID.Add(1)
	ch := make(chan benchReply, 1)
	c.mu.Lock()
	c.waiting[id] = benchWait{ch: ch, line: envelope}
	c.mu.Unlock()
	c.send(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
	r := <-ch
	if !envelope {
		return nil, r.ok
	}
	var resp struct {
		Result struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if r.line != nil && json.Unmarshal(r.line, &resp) != nil {
		return nil, false
	}
	return resp.Result.StructuredContent, r.ok
}

// readReplies hands each response line to its caller. It reads only what
// it must of a line — the id, and whether the envelope is ok — so that the
// client's side of the benchmark costs little of the CPU it measures (a
// caller that wants the envelope decodes the line: callReply). The lines
// are the server's, in the form appendResultLine writes (checked against the SDK
// in direct_test.go): {"jsonrpc":"2.0","id":<id>,"result":{...}}.
func (c *benchSession) readReplies(out io.Reader) {
	r := bufio.NewReaderSize(out, 1<<20)
	const head = `{"jsonrpc":"2.0","id":`
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			c.mu.Lock()
			for _, w := range c.waiting {
				w.ch <- benchReply{}
			}
			c.waiting = map[int64]benchWait{}
			c.mu.Unlock()
			go io.Copy(io.Discard, out)
			return
		}
		rest, found := bytes.CutPrefix(line, []byte(head))
		end := bytes.IndexByte(rest, ',')
		if !found || end < 0 {
			continue
		}
		id, err := strconv.ParseInt(string(rest[:end]), 10, 64)
		if err != nil {
			continue
		}
		c.mu.Lock()
		w, found := c.waiting[id]
		delete(c.waiting, id)
		c.mu.Unlock()
		if found {
			// An ok envelope: a result (not an error) whose structured
			// content starts so; the text content holds it escaped.
			r := benchReply{ok: bytes.Contains(rest, []byte(`"structuredContent":{"ok":true`))}
			if w.line {
				r.line = bytes.Clone(line)
			}
			w.ch <- r
		}
	}
}
