package audit

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/ledger"
	"golang.org/x/mod/sumdb/note"
)

// Checkpoint is the body of a C2SP tlog-checkpoint (c2sp.org/tlog-checkpoint):
//
//	<origin>\n<size>\n<base64 root>\n
//
// signed as a note (golang.org/x/mod/sumdb/note) with an Ed25519 key.
// Published outside the ledger file, it pins the log's size and RFC 9162
// root at that moment: any later rewrite or truncation of those events is
// provable against it (boltaudit.Verify with a checkpoint).
type Checkpoint struct {
	Origin string
	Size   uint64
	Root   ledger.Hash
}

// Text is the note body that is signed.
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
}

// ParseCheckpoint reads the first three lines of a checkpoint body;
// extension lines after them are allowed and ignored. A body that is not
// origin, size and root is a *Problem of kind CheckpointMalformed, and so
// is one of size 0 (errNoEvents): every log extends the empty one.
func ParseCheckpoint(text string) (Checkpoint, error) {
	var c Checkpoint
	bad := func(format string, args ...any) error {
		return &Problem{Kind: CheckpointMalformed, Detail: fmt.Sprintf(format, args...)}
	}
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 || lines[0] == "" {
		return c, bad("want origin, size and root lines")
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || (len(lines[1]) > 1 && lines[1][0] == '0') {
		return c, bad("size line %q", lines[1])
	}
	if size == 0 {
		return c, bad("size 0: %s", errNoEvents)
	}
	root, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(root) != len(c.Root) {
		return c, bad("root line %q: want base64 of 32 bytes", lines[2])
	}
	c.Origin, c.Size = lines[0], size
	copy(c.Root[:], root)
	return c, nil
}

// errNoEvents is why no checkpoint is of size 0.
var errNoEvents = errors.New("a checkpoint of no events proves nothing (every log extends the empty one)")

// Sign returns the signed note of c: its text, a blank line and the
// signature line. An origin that is not one non-empty line of UTF-8 with no
// control character (what note.Open takes back: a note that holds one
// could never be verified; nor a bidirectional one, unshown) is an *OptionError; a checkpoint of size 0,
// which ParseCheckpoint refuses, an error saying so.
func (c Checkpoint) Sign(s note.Signer) ([]byte, error) {
	if c.Size == 0 {
		return nil, fmt.Errorf("the ledger has no events: %w; sign one once it has some", errNoEvents)
	}
	if c.Origin == "" || !utf8.ValidString(c.Origin) || strings.ContainsFunc(c.Origin, unshown) {
		return nil, BadOption("origin", "%q: must be one non-empty line of UTF-8 text with no control characters (bidirectional ones included)", c.Origin)
	}
	return note.Sign(&note.Note{Text: c.Text()}, s)
}

// OpenCheckpoint checks the signature of a signed checkpoint msg with v and
// parses its body. A signature that does not verify is a *Problem of kind
// CheckpointSignature, a body that does not parse one of kind
// CheckpointMalformed.
func OpenCheckpoint(msg []byte, v note.Verifier) (Checkpoint, error) {
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, &Problem{Kind: CheckpointSignature, Detail: "signature: " + err.Error(), Err: err}
	}
	return ParseCheckpoint(n.Text)
}

// ReadCheckpoint reads the signed checkpoint file path and checks its
// signature with the verifier key in the file verifierPath. A file that
// cannot be read is the os error; a key that does not parse is an error
// naming its file; a signature that does not verify, or a body that does
// not parse, is OpenCheckpoint's *Problem.
func ReadCheckpoint(path, verifierPath string) (Checkpoint, error) {
	vk, err := ReadFile(verifierPath, maxNoteBytes, "a verifier key")
	if err != nil {
		return Checkpoint{}, err
	}
	v, err := ParseVerifierKey(string(vk))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%s is not a verifier key: %w", verifierPath, err)
	}
	msg, err := ReadFile(path, maxNoteBytes, "a checkpoint")
	if err != nil {
		return Checkpoint{}, err
	}
	return OpenCheckpoint(msg, v)
}

// maxNoteBytes bounds what is read of a key or checkpoint file: each is a
// few lines (a checkpoint's extension lines too).
const maxNoteBytes = 1 << 20

// ReadFile reads the regular file path, at most max bytes: a larger one
// is an error saying it is not what (a proof file, a checkpoint), never
// read on until memory runs out, and so is what is not a regular file (a
// device that never ends, /dev/zero; a named pipe, whose opening waited
// for a writer, deaf to SIGTERM). The file is opened without blocking and
// checked as opened, so what is read is what was checked.
func ReadFile(path string, max int64, what string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file: not %s", path, what)
	}
	return ReadAtMost(f, max, path, what)
}

// ReadAtMost reads r to its end, at most max bytes; name is where it
// comes from, in the error past max.
func ReadAtMost(r io.Reader, max int64, name, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s is larger than %d bytes: not %s", name, max, what)
	}
	return b, err
}

// ReadSigner reads the signer key file path (as Keys.Write writes it). A
// file that cannot be read is the os error; one that holds no signer key
// is an error naming it.
func ReadSigner(path string) (note.Signer, error) {
	text, err := ReadFile(path, maxNoteBytes, "a signer key")
	if err != nil {
		return nil, err
	}
	s, err := ParseSignerKey(string(text))
	if err != nil {
		return nil, fmt.Errorf("%s is not a signer key: %w", path, err)
	}
	return s, nil
}

// ParseSignerKey reads a signer key as a key file holds it (surrounding
// white space ignored).
func ParseSignerKey(text string) (note.Signer, error) {
	return note.NewSigner(strings.TrimSpace(text))
}

// ParseVerifierKey reads a verifier key as a key file holds it.
func ParseVerifierKey(text string) (note.Verifier, error) {
	return note.NewVerifier(strings.TrimSpace(text))
}

// ValidKeyName is the note package's rule for key names, which
// note.GenerateKey does not check but NewVerifier does: well-formed UTF-8,
// no Unicode spaces, no '+'; and no control character, which note.Open
// refuses anywhere in a note (the name is on every signature line), nor
// one that would show the auditor other text (unshown).
func ValidKeyName(name string) bool {
	if name == "" || !utf8.ValidString(name) || strings.Contains(name, "+") {
		return false
	}
	return !strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unshown(r) })
}

// unshown: a character a name or origin may not hold, one that note.Open
// refuses (a C0 control) or that shows the auditor's terminal other text
// than it holds (DEL, a C1 control, a bidirectional control: an override
// shows "on" as "no", as SafeJSON says).
func unshown(r rune) bool {
	return r < 0x20 || r == 0x7f || isC1OrBidi(r)
}

// Keys is a new Ed25519 note key pair in the note text formats.
type Keys struct {
	Signer   string // secret: signs checkpoints
	Verifier string // public: what auditors are given
}

// NewKeys generates a key pair named name; a name ValidKeyName refuses is
// an *OptionError.
func NewKeys(name string) (Keys, error) {
	if !ValidKeyName(name) {
		return Keys{}, BadOption("name", "%q: want a non-empty name without spaces, control characters or '+' (e.g. example.com/logbook)", name)
	}
	sk, vk, err := note.GenerateKey(rand.Reader, name)
	return Keys{Signer: sk, Verifier: vk}, err
}

// Write creates the two key files, which must not exist (an error wrapping
// fs.ErrExist says which does): the signer key readable by its owner only.
// On error neither file is left behind.
func (k Keys) Write(signerPath, verifierPath string) error {
	if filepath.Clean(signerPath) == filepath.Clean(verifierPath) {
		return fmt.Errorf("the signer and the verifier key would be the same file %s", signerPath)
	}
	if err := writeKey(signerPath, k.Signer, 0o600); err != nil {
		return err
	}
	if err := writeKey(verifierPath, k.Verifier, 0o644); err != nil {
		os.Remove(signerPath)
		return err
	}
	return nil
}

func writeKey(path, key string, mode os.FileMode) error {
	err := WriteNew(path, []byte(key+"\n"), mode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("refusing to overwrite the key %s: %w", path, fs.ErrExist)
	}
	return err
}

// WriteNew creates the file path holding data, synced. It never replaces
// anything there: a file, a directory, or a symbolic link, even one to
// nowhere, which it does not follow (O_EXCL), is an error wrapping
// fs.ErrExist. If the write fails, the file is removed.
func WriteNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
