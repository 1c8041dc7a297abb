package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/ledger"
	"github.com/logbook-dev/logbook/ledger/boltstore"
	"golang.org/x/sys/unix"
)

// A ledger on a file system that is really full (a small tmpfs, which
// needs root to mount; the tests skip without): calls get ERR_STORAGE
// saying the disk is full, leave nothing, wait no longer than their
// deadline, and succeed again once space is freed, without a restart; the
// ledger, and a copy taken while full, verify; the journal beside it stays
// its size and is taken by the next open.

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted at
// the end of the test, or skips the test where it cannot (not root).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// mountLoop makes a file system of size bytes (mkfs.fstype) in a file and
// mounts it (a loop device) on a new directory, unmounted at the end of
// the test, or skips the test where it cannot (not root, no mkfs.fstype,
// no loop device).
func mountLoop(t *testing.T, fstype string, size int64) string {
	t.Helper()
	img, dir := filepath.Join(t.TempDir(), fstype+".img"), filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	// -f forces mkfs.btrfs, -F mkfs.ext4 (each refuses the other's flag).
	if _, err := exec.Command("mkfs."+fstype, "-q", "-f", img).CombinedOutput(); err != nil {
		if out, err := exec.Command("mkfs."+fstype, "-q", "-F", img).CombinedOutput(); err != nil {
			t.Skipf("cannot make a %s file system: %v %s", fstype, err, out)
		}
	}
	if out, err := exec.Command("mount", "-o", "loop", img, dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a %s file system (needs root and a loop device): %v %s", fstype, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("unmount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file in dir until the file system has no space left,
// and returns its name: removing it frees the space.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for n := len(block); n > 0; n /= 2 {
		for {
			if _, err = f.Write(block[:n]); err != nil {
				break
			}
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("fill the disk: %v", err)
		}
	}
	return name
}

// thoughtCount is how many thought.recorded events the ledger at db holds.
func thoughtCount(t *testing.T, db string) int {
	t.Helper()
	l, err := boltstore.Open(db, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n := 0
	err = l.View(func(tx *boltstore.Tx) error {
		return tx.Scan(1, tx.Head().Seq+1, func(r ledger.Record) error {
			if r.Type == "thought.recorded" {
				n++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// answer is a thought_record's answer: its envelope's parts.
type answer struct {
	OK            bool
	Code          string
	Data, Details json.RawMessage
}

// callDeadline is how long a call on a full disk is waited for: a bound
// for a hung call, not a measure (a loaded machine may take seconds).
const callDeadline = e2eTimeout

// fillAndFree fills the disk at mnt while each of calls, one agent's
// thought_record each, runs until it has had 10 calls refused in a row;
// every answer must come within callDeadline (a call that returns an error
// had none), OK or ERR_STORAGE saying the disk is full (its outcome
// unknown, on a copy-on-write file system, where taking back a journal
// record needs room too). Then, the agents idle, a copy of the ledger at
// db must verify; the filler removed, each agent's next 5 calls must
// succeed. It returns the acknowledged thoughts, and how many calls'
// outcome was unknown.
func fillAndFree(t *testing.T, mnt, db string, calls []func(content string) (answer, error)) (acks []ack, unknown int) {
	t.Helper()
	filler := fillDisk(t, mnt)
	var mu sync.Mutex
	full := 0
	call := func(i int, content string) (ok bool) {
		a, err := calls[i](content)
		if err != nil {
			t.Errorf("agent %d: %v", i, err)
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case a.OK:
			var k ack
			if err := json.Unmarshal(a.Data, &k); err != nil || k.Seq == 0 {
				t.Errorf("agent %d: answer %s: %v", i, a.Data, err)
			}
			acks = append(acks, k)
			return true
		case a.Code == "ERR_STORAGE":
			full++
			diskFullReason(t, fmt.Sprintf("agent %d", i), a.Details)
			if strings.Contains(string(a.Details), "may or may not be in the ledger") {
				unknown++
			}
		default:
			t.Errorf("agent %d on a full disk: %s %s", i, a.Code, a.Details)
		}
		return false
	}
	content := strings.Repeat("the disk is full ", 100)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n, refused := 0, 0; refused < 10 && n < 2000 && !t.Failed(); n++ {
				if call(i, content) {
					refused = 0
				} else {
					refused++
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d thoughts acknowledged, %d calls refused on the full disk (%d of them of unknown outcome)", len(acks), full, unknown)
	if full == 0 {
		t.Fatal("no call was refused: the disk never filled")
	}
	copied := filepath.Join(t.TempDir(), "copy.db")
	copyFile(t, db, copied)
	wantExit(t, run(t, "verify", "--db", copied), 0, "verify a copy taken while the disk was full")

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 5 {
				if !call(i, fmt.Sprintf("room again %d", n)) {
					t.Errorf("agent %d: call %d after the space was freed refused", i, n)
				}
			}
		}()
	}
	wg.Wait()
	if fi, err := os.Stat(db + ".journal"); err != nil || fi.Size() > 1<<20 {
		t.Errorf("the journal: %v, %d bytes", err, fi.Size())
	}
	return acks, unknown
}

// checkFullLedger checks the ledger at db once its process is gone: every
// acknowledged thought in it as told, no other (a refused call left none;
// one of unknown outcome may have), and it verifies (checkAcks).
func checkFullLedger(t *testing.T, db string, acks []ack, unknown int) {
	t.Helper()
	checkAcks(t, db, acks)
	if n := thoughtCount(t, db); n < len(acks) || n > len(acks)+unknown {
		t.Errorf("%d thoughts in the ledger, %d acknowledged, %d of unknown outcome: a refused call left one", n, len(acks), unknown)
	}
}

// TestDiskFullServer: `logbook server` holds its file (a journal
// generation runs across its commits) while four agents write over HTTP
// until the file system it is on (a tmpfs, an ext4 in a loop device) is
// full (fillAndFree); SIGKILLed after, it
// leaves a ledger holding every acknowledged thought and no other, which
// verifies.
func TestDiskFullServer(t *testing.T) {
	t.Parallel()
	t.Run("tmpfs", func(t *testing.T) { diskFullServer(t, mountTmpfs(t, 8<<20)) })
	t.Run("ext4", func(t *testing.T) { diskFullServer(t, mountLoop(t, "ext4", 32<<20)) })
	// Copy on write: an overwrite needs room too (the journal's records,
	// its header).
	t.Run("btrfs", func(t *testing.T) { diskFullServer(t, mountLoop(t, "btrfs", 128<<20)) })
}

func diskFullServer(t *testing.T, mnt string) {
	db := filepath.Join(mnt, "ledger.db")
	srv := startHTTPServer(t, db)
	calls := make([]func(string) (answer, error), 4)
	for i := range calls {
		token, _ := addToken(t, db, "--agent", fmt.Sprintf("agent-%d", i))
		cs, err := connectHTTP(t, srv.url, token, "diskfull", "")
		if err != nil {
			t.Fatal(err)
		}
		var created struct {
			TaskID string `json:"task_id"`
		}
		mustOK(t, cs, "task_create", map[string]any{"title": "fill the disk", "project": "full"}, &created)
		calls[i] = func(content string) (answer, error) {
			ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
			defer cancel()
			env, err := callHTTPCtx(ctx, cs, "thought_record", map[string]any{"task_id": created.TaskID, "type": "analysis", "content": content})
			return answer{env.OK, env.Error.Code, env.Data, env.Error.Details}, err
		}
	}
	acks, unknown := fillAndFree(t, mnt, db, calls)
	srv.kill()
	checkFullLedger(t, db, acks, unknown)
}

// TestDiskFullServe: two `logbook serve` processes on one ledger (the
// second commits through the first, the hub), an agent on each, write
// until the tmpfs it is on is full (fillAndFree); closed, they leave a
// ledger holding every acknowledged thought and no other, which verifies.
func TestDiskFullServe(t *testing.T) {
	t.Parallel()
	mnt := mountTmpfs(t, 8<<20)
	db := filepath.Join(mnt, "ledger.db")
	var servers []*e2eServer
	calls := make([]func(string) (answer, error), 2)
	for i := range calls {
		srv := startE2E(t, e2eConfig{DB: db, Agent: fmt.Sprintf("agent-%d", i)})
		servers = append(servers, srv)
		srv.initialize("2025-11-25")
		var created struct {
			TaskID string `json:"task_id"`
		}
		srv.ok("task_create", map[string]any{"title": "fill the disk", "project": "full"}, &created)
		calls[i] = func(content string) (answer, error) {
			ch := srv.callToolAsync("thought_record", e2eJSON(t, map[string]any{"task_id": created.TaskID, "type": "analysis", "content": content}))
			select {
			case m, ok := <-ch:
				if !ok {
					return answer{}, errors.New("the process exited")
				}
				r := parseE2EReply(t, "thought_record", m)
				a := answer{OK: r.Env.OK, Code: r.code(), Data: r.Env.Data}
				if r.Env.Error != nil {
					a.Details = r.Env.Error.Details
				}
				return a, nil
			case <-time.After(callDeadline):
				return answer{}, fmt.Errorf("no answer within %v", callDeadline)
			}
		}
	}
	acks, unknown := fillAndFree(t, mnt, db, calls)
	for _, srv := range servers {
		srv.closeStdin()
		<-srv.exited
	}
	checkFullLedger(t, db, acks, unknown)
}

// TestDiskFullServerKilled: `logbook server` SIGKILLed while the disk is
// full (its journal generation running) leaves a ledger that verifies on
// the full disk, and that a new server opens there (settling the journal
// writes nothing that needs room); it answers OK or ERR_STORAGE saying the
// disk is full, then OK once the filler is removed. Every acknowledged
// thought is in the ledger and no other.
func TestDiskFullServerKilled(t *testing.T) {
	t.Parallel()
	mnt := mountTmpfs(t, 8<<20)
	db := filepath.Join(mnt, "ledger.db")
	srv := startHTTPServer(t, db)
	token, _ := addToken(t, db, "--agent", "agent")
	var acks []ack
	var task string
	// call makes one thought_record through srv, and says whether it was
	// refused as the disk being full.
	call := func(srv *httpServer) (refused bool) {
		cs, err := connectHTTP(t, srv.url, token, "diskfull", "")
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if task == "" {
			var created struct {
				TaskID string `json:"task_id"`
			}
			mustOK(t, cs, "task_create", map[string]any{"title": "fill the disk", "project": "full"}, &created)
			task = created.TaskID
		}
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		env, err := callHTTPCtx(ctx, cs, "thought_record", map[string]any{"task_id": task, "type": "analysis", "content": strings.Repeat("full ", 400)})
		switch {
		case err != nil:
			t.Fatalf("thought_record: %v", err)
		case env.OK:
			var a ack
			if err := json.Unmarshal(env.Data, &a); err != nil || a.Seq == 0 {
				t.Fatalf("answer %s: %v", env.Data, err)
			}
			acks = append(acks, a)
		case env.Error.Code == "ERR_STORAGE":
			diskFullReason(t, "thought_record", env.Error.Details)
			return true
		default:
			t.Fatalf("thought_record on a full disk: %s %s", env.Error.Code, env.Error.Details)
		}
		return false
	}
	call(srv)
	filler := fillDisk(t, mnt)
	refused := 0
	for i := 0; i < 2000 && refused < 5; i++ {
		if call(srv) {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no call was refused: the disk never filled")
	}
	srv.kill()
	wantExit(t, run(t, "verify", "--db", db), 0, "verify on the full disk after a SIGKILL")
	srv = startHTTPServer(t, db)
	call(srv)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if call(srv) {
		t.Fatal("a call after the space was freed refused")
	}
	srv.kill()
	checkFullLedger(t, db, acks, 0)
}

// TestFaultDiskFull: the ledger's file cannot grow (RLIMIT_FSIZE on the
// server): calls that need more room get ERR_STORAGE saying the disk is
// full (it said "the ledger could not commit") and leave nothing,
// the server stays up, and once there is room again calls succeed. Every
// acknowledged thought is in the ledger, which verifies.
func TestFaultDiskFull(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "full.db")
	w := &writer{t: t, db: db, name: "filler"}
	srv := startE2E(t, e2eConfig{DB: db, Agent: "filler"})
	w.srv = srv
	srv.initialize("2025-11-25")
	var created struct {
		TaskID string `json:"task_id"`
	}
	srv.ok("task_create", map[string]any{"title": "fill the disk", "project": "faults"}, &created)
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	limit := uint64(fi.Size() + 256<<10)
	if err := unix.Prlimit(srv.cmd.Process.Pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limit, Max: unix.RLIM_INFINITY}, nil); err != nil {
		t.Skipf("cannot limit the server's file size: %v", err)
	}
	content := strings.Repeat("the disk fills up ", 200)
	var acks []ack
	full := 0
	for i := 0; i < 5000 && full < 20; i++ {
		r := srv.call("thought_record", map[string]any{"task_id": created.TaskID, "type": "analysis", "content": content})
		switch r.code() {
		case "OK":
			var a ack
			r.data(t, &a)
			acks = append(acks, a)
		case "ERR_STORAGE":
			full++
			diskFullReason(t, "thought_record", r.Env.Error.Details)
		default:
			t.Fatalf("a call on a full disk: %s", r.Result)
		}
	}
	if full == 0 {
		t.Fatalf("the file never filled (%d thoughts written under a %d-byte limit)", len(acks), limit)
	}
	if err := unix.Prlimit(srv.cmd.Process.Pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}, nil); err != nil {
		t.Fatal(err)
	}
	var a ack
	srv.ok("thought_record", map[string]any{"task_id": created.TaskID, "type": "analysis", "content": "room again"}, &a)
	acks = append(acks, a)
	t.Logf("%d thoughts acknowledged, %d calls refused on a full disk", len(acks), full)
	srv.closeStdin()
	<-srv.exited
	checkAcks(t, db, acks)
}

// diskFullReason checks that an ERR_STORAGE answer's reason says the disk
// is full.
func diskFullReason(t *testing.T, who string, details json.RawMessage) {
	t.Helper()
	var d struct {
		Reason string `json:"reason"`
	}
	json.Unmarshal(details, &d)
	if !strings.Contains(d.Reason, "disk is full") {
		t.Errorf("%s: ERR_STORAGE on a full disk with the reason %q, which does not say the disk is full", who, d.Reason)
	}
}
