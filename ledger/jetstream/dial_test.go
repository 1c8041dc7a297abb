package jetstream

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAddFlags: the flags set the stream's options and how to reach its
// servers; passwords come from the environment, never from a flag.
func TestAddFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	env := map[string]string{"LOGBOOK_NATS_PASSWORD": "pw", "LOGBOOK_NATS_SYS_PASSWORD": "syspw"}
	f := AddFlags(fs, func(k string) string { return env[k] })
	err := fs.Parse([]string{"--stream", "s", "--replicas", "1", "--allow-unreplicated", "--nats-user", "u",
		"--nats-sys-user", "sys", "--nats-tls-ca", "ca.pem", "--nats-creds", "c.creds"})
	if err != nil {
		t.Fatal(err)
	}
	want := Flags{Dial: Dial{User: "u", Password: "pw", SysUser: "sys", SysPassword: "syspw", TLSCA: "ca.pem", Creds: "c.creds"},
		Options: Options{Stream: "s", Replicas: 1, AllowUnreplicated: true}}
	if f.Dial != want.Dial || f.Options.Stream != "s" || f.Options.Replicas != 1 || !f.Options.AllowUnreplicated {
		t.Errorf("got %+v, want %+v", *f, want)
	}
	if fs.Parse([]string{"--nats-password", "x"}) == nil {
		t.Error("a password flag exists: passwords would show in argv")
	}
	// --replicas 0 asked for the default, 3, silently (Options reads 0 so).
	for _, bad := range []string{"0", "-1", "x", "1.5"} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		AddFlags(fs, func(string) string { return "" })
		if err := fs.Parse([]string{"--replicas", bad}); err == nil {
			t.Errorf("--replicas %s accepted", bad)
		}
	}
	if f := AddFlags(flag.NewFlagSet("x", flag.ContinueOnError), func(string) string { return "" }); f.Options.Replicas != 3 {
		t.Errorf("--replicas not given: %d, want 3", f.Options.Replicas)
	}
}

// TestCheckURLs: a store address is nats:// or tls:// URLs with a host;
// one carrying a user, password or token is refused (argv and logs would
// show it), and no error repeats it. (The URL went to nats.Connect as
// given, and its failure was reported as "connect to nats://app:s3cret@…".)
func TestCheckURLs(t *testing.T) {
	for _, ok := range []string{"nats://a:4222", "nats://a:4222,nats://b:4222", "tls://a:4222", "nats://a:4222, nats://[::1]:4222", "nats://a"} {
		if err := CheckURLs(ok); err != nil {
			t.Errorf("CheckURLs(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "http://a", "nats://a:4222,", "nats://app:s3cret@a:4222", "nats://a:4222,tls://s3cret@b:4222",
		"nats://app:s3cret@[::1", "nats://:4222", "nats://a:4222/s3cret", "nats://a:4222?s3cret", "s3cret"} {
		err := CheckURLs(bad)
		if err == nil {
			t.Errorf("CheckURLs(%q) accepted it", bad)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckURLs(%q): %v: repeats the secret", bad, err)
		}
	}
	_, _, err := Connect(context.Background(), Dial{URLs: "nats://app:s3cret@127.0.0.1:1"}, Options{Stream: "s"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Connect with a password in the URL: %v", err)
	}
}

// TestConnectFilesBounded: a credentials, CA, certificate or key file of
// more than 1 MiB (or /dev/zero) is refused, naming it, before nats.go
// reads it whole (before, /dev/zero as any of them took 2.8 GB in 3 s
// through the built binary, with no NATS server to reach).
func TestConnectFilesBounded(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []Dial{{Creds: big}, {SysCreds: big, SysUser: ""}, {TLSCA: big}, {TLSCert: big, TLSKey: big}} {
		d.URLs = "nats://127.0.0.1:1"
		_, _, err := Connect(context.Background(), d, Options{})
		if err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
			t.Errorf("%+v: %v, want the file refused as larger than 1 MiB", d, err)
		}
	}
	// What is not a regular file: /dev/zero was read without end, and
	// opening a named pipe no one writes waited for ever.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []Dial{{TLSCA: "/dev/zero"}, {Creds: fifo}, {TLSKey: fifo}} {
		d.URLs = "nats://127.0.0.1:1"
		_, _, err := Connect(context.Background(), d, Options{})
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%+v: %v, want the file refused as not a regular file", d, err)
		}
	}
}

// TestConnectRefusesHalfGivenLogins: a client certificate without its key
// (or a key without one), a credentials file beside a user (for the NATS
// user or the system user), a user whose password variable is not set,
// are refused before any server is dialled, naming the flags. (A
// certificate without its key reached nats.go, which said "error loading
// client certificate: open : no such file or directory"; a user without
// a password was sent with an empty one, "Authorization Violation"; a
// creds file and a user were both sent, the servers choosing.)
func TestConnectRefusesHalfGivenLogins(t *testing.T) {
	pem := filepath.Join(t.TempDir(), "f.pem")
	if err := os.WriteFile(pem, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		d    Dial
		want string
	}{
		{Dial{TLSCert: pem}, "--nats-tls-cert and --nats-tls-key go together"},
		{Dial{TLSKey: pem}, "--nats-tls-cert and --nats-tls-key go together"},
		{Dial{Creds: pem, User: "u", Password: "pw"}, "--nats-creds and --nats-user"},
		{Dial{SysCreds: pem, SysUser: "sys", SysPassword: "pw"}, "--nats-sys-creds and --nats-sys-user"},
		{Dial{User: "u"}, "LOGBOOK_NATS_PASSWORD is not set"},
		{Dial{User: "u", Password: "pw", SysUser: "sys"}, "LOGBOOK_NATS_SYS_PASSWORD is not set"},
	} {
		c.d.URLs = "nats://127.0.0.1:1"
		_, _, err := Connect(context.Background(), c.d, Options{Stream: "s", OpenWait: time.Nanosecond})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: %v, want %q", i, err, c.want)
		}
	}
}

// TestConnectChecksTheStreamFirst: a stream name JetStream refuses, or a
// replica count below 1 (or below 3 without AllowUnreplicated) or above 5, is refused
// before any server is dialled (attack5: with no server up, migrate
// --stream a.b asked again for OpenWait, then said only that no server
// answered; --replicas -1 reached the servers; attack9: --replicas 7 too,
// refused by them, "maximum replicas is 5", after OpenWait if none was up).
func TestConnectChecksTheStreamFirst(t *testing.T) {
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Stream: "a.b"}, `stream name "a.b"`},
		{Options{Stream: "a b"}, `stream name "a b"`},
		{Options{Stream: ""}, `stream name ""`},
		{Options{Stream: strings.Repeat("s", 65)}, "stream name"},
		{Options{Stream: "s", Replicas: -1, AllowUnreplicated: true}, "-1 replicas"},
		{Options{Stream: "s", Replicas: 1}, "1 replicas; a ledger needs 3"},
		{Options{Stream: "s", Replicas: 7}, "7 replicas; NATS keeps a stream on at most 5 servers"},
	} {
		c.opts.OpenWait = time.Nanosecond // nothing listens: dialling fails at once
		_, _, err := Connect(context.Background(), Dial{URLs: "nats://127.0.0.1:1"}, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opts, err, c.want)
		}
	}
}

// TestConnectSaysWhatToCheck: a login the servers refuse names the flags
// and variables that give it (the NATS user's or the system user's), and
// tls:// to a server without TLS says to use nats://. (Each said only
// "nats: Authorization Violation" or "nats: secure connection not
// available".)
func TestConnectSaysWhatToCheck(t *testing.T) {
	c := sharedCluster(t)
	url := c.url(0)
	for _, tc := range []struct {
		d    Dial
		want string
	}{
		{Dial{URLs: url, User: "app", Password: "wrong"}, "check --nats-user with LOGBOOK_NATS_PASSWORD, or --nats-creds"},
		{Dial{URLs: url, User: "app", Password: "app", SysUser: "sys", SysPassword: "wrong"}, "check --nats-sys-user with LOGBOOK_NATS_SYS_PASSWORD"},
		{Dial{URLs: "tls" + strings.TrimPrefix(url, "nats"), User: "app", Password: "app"}, "use nats://"},
	} {
		_, _, err := Connect(context.Background(), tc.d, Options{Stream: "hint", OpenWait: time.Nanosecond})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "wrong") {
			t.Errorf("%s: %v; want %q, and no password", tc.d.URLs, err, tc.want)
		}
	}
}

// A password the environment gives without its user is sent to no server:
// Connect says so in the log, and says nothing of one that is used.
func TestConnectNotesUnusedPasswords(t *testing.T) {
	for i, c := range []struct {
		d    Dial
		want []string
	}{
		{Dial{Password: "pw"}, []string{"LOGBOOK_NATS_PASSWORD is set but not used"}},
		{Dial{SysPassword: "pw", User: "u", Password: "pw"}, []string{"LOGBOOK_NATS_SYS_PASSWORD is set but not used"}},
		{Dial{Password: "pw", SysPassword: "pw"}, []string{"LOGBOOK_NATS_PASSWORD is set but not used", "LOGBOOK_NATS_SYS_PASSWORD is set but not used"}},
		{Dial{User: "u", Password: "pw", SysUser: "s", SysPassword: "pw"}, nil},
		{Dial{}, nil},
	} {
		c.d.URLs = "nats://127.0.0.1:1"
		var logged []string
		logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
		if _, _, err := Connect(context.Background(), c.d, Options{Stream: "s", OpenWait: time.Nanosecond, Logf: logf}); err == nil {
			t.Fatalf("case %d: connected to nothing", i)
		}
		var notes []string
		for _, l := range logged {
			if strings.Contains(l, "is set but not used") {
				notes = append(notes, l)
			}
		}
		if len(notes) != len(c.want) {
			t.Fatalf("case %d: logged %q, want %q", i, notes, c.want)
		}
		for j, w := range c.want {
			if !strings.HasPrefix(notes[j], w) {
				t.Errorf("case %d: logged %q, want %q", i, notes[j], w)
			}
		}
	}
}
