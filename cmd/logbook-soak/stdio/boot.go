//go:build linux

package stdio

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
)

// A reboot, as logbook sees one: every process of the ledger SIGKILLed at
// once, then the next ones started in another boot. logbook tells a dead
// process (whose commits the page cache holds whole) from a stopped machine
// by the kernel's boot id, /proc/sys/kernel/random/boot_id: each process
// after the k-th reboot is started in a mount namespace of its own where a
// file of the run's directory, boot-K, is bound over that path. What a real
// stop of the machine also does, lose or tear the pages not yet written, it
// does not (boltstore's TestJournalPowerLoss builds that); what it checks is
// that recovery by the first writer of the new boot, from the journal the
// killed processes left, keeps every acknowledged call, from real processes
// killed at any instant.

const (
	bootIDPath = "/proc/sys/kernel/random/boot_id"
	// envBootFile and envBootExec ask this program, started in a mount
	// namespace of its own, to bind the file over bootIDPath and to exec the
	// binary (ExecInBoot).
	envBootFile = "LOGBOOK_SOAK_BOOT_FILE"
	envBootExec = "LOGBOOK_SOAK_BOOT_EXEC"
)

// bootFile is the boot id file of the current boot, "" for the machine's
// (read by runBin without bootMu).
var bootFile atomic.Value // string

// newBoot writes the boot id of reboot k and makes every process started
// from now on see it.
func newBoot(k int) error {
	var b [16]byte
	rand.Read(b[:])
	f := filepath.Join(*outDir, fmt.Sprintf("boot-%d", k))
	if err := os.WriteFile(f, fmt.Appendf(nil, "%x-%x-%x-%x-%x\n", b[:4], b[4:6], b[6:8], b[8:10], b[10:]), 0o644); err != nil {
		return err
	}
	bootFile.Store(f)
	return nil
}

// inBoot makes c, a command of the logbook binary, start in the current
// boot: this program, in a mount namespace of its own, binds the boot's
// file over the boot id and execs the binary.
func inBoot(c *exec.Cmd) {
	f, _ := bootFile.Load().(string)
	if f == "" {
		return
	}
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	c.Env = append(c.Env, envBootFile+"="+f, envBootExec+"="+c.Path)
	c.Path = self
	c.SysProcAttr.Unshareflags |= syscall.CLONE_NEWNS // and / made private by Go
}

// ExecInBoot, when this process was started by inBoot, binds its boot file
// over the boot id and execs the logbook binary with its arguments (it does
// not return then; exit 2 if that fails); otherwise it returns at once.
// main, and TestMain of a test that runs reboots, call it first.
func ExecInBoot() {
	file, bin := os.Getenv(envBootFile), os.Getenv(envBootExec)
	if file == "" || bin == "" {
		return
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, envBootFile+"=") && !strings.HasPrefix(e, envBootExec+"=") {
			env = append(env, e)
		}
	}
	if err := syscall.Mount(file, bootIDPath, "", syscall.MS_BIND, ""); err != nil {
		fmt.Fprintf(os.Stderr, "logbook-soak: bind %s over %s: %v\n", file, bootIDPath, err)
		os.Exit(2)
	}
	err := syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), env)
	fmt.Fprintf(os.Stderr, "logbook-soak: exec %s: %v\n", bin, err)
	os.Exit(2)
}

// checkBoot tells whether this program can start the logbook binary in
// another boot, by running its version there.
func checkBoot() error {
	f, err := os.CreateTemp("", "logbook-soak-boot-")
	if err != nil {
		return err
	}
	f.WriteString("logbook-soak-check-boot\n")
	f.Close()
	defer os.Remove(f.Name())
	bootFile.Store(f.Name())
	defer bootFile.Store("")
	o, e, ec := runBin("version")
	if ec != 0 {
		return fmt.Errorf("-reboots: logbook cannot be started in another boot (a mount namespace binding a file over %s; root needed): exit %d: %s %s", bootIDPath, ec, o, e)
	}
	return nil
}

// lastBoot is the last reboot of the run in the directory (its boot-K
// files), 0 if it had none.
func lastBoot() int {
	files, _ := filepath.Glob(filepath.Join(*outDir, "boot-*"))
	last := 0
	for _, f := range files {
		var k int
		if _, err := fmt.Sscanf(filepath.Base(f), "boot-%d", &k); err == nil && k > last {
			last = k
		}
	}
	return last
}
