//go:build !linux

package server

import (
	"errors"
	"net"
)

// The relay needs the hub lock (boltstore.HubSupported): Linux only.

func checkPeer(*net.UnixConn, int) (int, error) { return 0, errors.ErrUnsupported }

func fileID(string) (dev, ino uint64, err error) { return 0, 0, errors.ErrUnsupported }

func fileOwner(string) (int, bool) { return 0, false }

// sockName is path: other systems' limits on it are theirs to report.
func sockName(path string) (string, func(), error) { return path, func() {}, nil }
