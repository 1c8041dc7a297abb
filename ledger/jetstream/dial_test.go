package jetstream

import (
	"flag"
	"testing"
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
	if !IsURL("nats://a:4222,nats://b:4222") || !IsURL("tls://a:4222") || IsURL("http://a") {
		t.Error("IsURL")
	}
}
