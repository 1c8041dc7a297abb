//go:build linux

package stdio

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// -perm: the ledger file (file) or its directory (dir) made read-only and
// writable again while the agents write. root ignores modes, so every
// logbook process of such a run, the checks' included, runs as the user
// nobody, who is given the run's directory.

// nobody is the user the logbook processes run as (-perm), nil for the
// harness's own.
var nobody *syscall.Credential

// setupPerm checks -perm and gives the run's directory, and the ledger's,
// to the user nobody.
func setupPerm() error {
	if *perm != "file" && *perm != "dir" {
		return fmt.Errorf("-perm %q: file or dir", *perm)
	}
	if *reboots > 0 {
		return fmt.Errorf("-perm with -reboots: a process of another boot binds its boot id as root, and -perm's run as nobody")
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("-perm needs root (to run logbook as the user nobody, for whom modes count)")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return err
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("the user nobody: uid %q, gid %q", u.Uid, u.Gid)
	}
	for _, d := range []string{*outDir, filepath.Dir(*db)} {
		err := filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		})
		if err != nil {
			return err
		}
	}
	nobody = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return nil
}

// dirFirst, for -perm dir, makes the ledger with no journal beside it and
// its directory read-only before the agents start, so that the first
// processes find no journal and cannot make one (nor a socket) until the
// directory is writable again.
func dirFirst() error {
	c := command("serve", "--db", *db, "--agent", "setup")
	c.Stdin = strings.NewReader("")
	if o, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("logbook serve, to make the ledger: %v: %s", err, o)
	}
	if err := os.Remove(*db + ".journal"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Chmod(filepath.Dir(*db), 0o555); err != nil {
		return err
	}
	st.chmods.Add(1)
	return nil
}

// togglePerm makes the ledger file or its directory read-only and writable
// again, each for 0.5–2 s, until stop; it leaves it writable. A directory
// is read-only already (dirFirst).
func togglePerm(stop <-chan struct{}) {
	path, ro, rw, i := *db, os.FileMode(0o444), os.FileMode(0o644), 0
	if *perm == "dir" {
		path, ro, rw, i = filepath.Dir(*db), 0o555, 0o755, 1
	}
	defer os.Chmod(path, rw)
	for ; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(500+rnd(1500)) * time.Millisecond):
		}
		mode := rw
		if i%2 == 0 {
			mode = ro
		}
		// The file may not exist yet (no process has opened the ledger).
		if err := os.Chmod(path, mode); err == nil && mode == ro {
			st.chmods.Add(1)
		}
	}
}
