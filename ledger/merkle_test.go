package ledger_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/logbook-dev/logbook/ledger"
)

// The Merkle code is checked against two implementations it shares nothing
// with: rfcTree, RFC 9162 §2.1 transcribed as recursion over a slice, and
// golang.org/x/mod/sumdb/tlog, whose RecordHash and NodeHash are the RFC's
// (SHA-256 with the 0x00 and 0x01 prefixes), so its roots and proofs must be
// ours byte for byte.

// rfcTree is RFC 9162 §2.1 read literally. Subtree roots are memoized so the
// exhaustive tests stay fast; the memo changes no result.
type rfcTree struct {
	leaves []ledger.Hash
	memo   map[[2]int]ledger.Hash
}

func newRFCTree(leaves []ledger.Hash) *rfcTree {
	return &rfcTree{leaves: leaves, memo: make(map[[2]int]ledger.Hash)}
}

// rfcSplit is the RFC's k: the largest power of two smaller than n > 1.
func rfcSplit(n int) int {
	k := 1
	for k*2 < n {
		k *= 2
	}
	return k
}

// mth is MTH(D[begin:end]) of §2.1.1.
func (t *rfcTree) mth(begin, end int) ledger.Hash {
	if h, ok := t.memo[[2]int{begin, end}]; ok {
		return h
	}
	var h ledger.Hash
	switch n := end - begin; n {
	case 0:
		h = ledger.EmptyRoot
	case 1:
		h = t.leaves[begin]
	default:
		k := rfcSplit(n)
		h = ledger.NodeHash(t.mth(begin, begin+k), t.mth(begin+k, end))
	}
	t.memo[[2]int{begin, end}] = h
	return h
}

// path is PATH(m, D[begin:end]) of §2.1.3.1, m relative to begin.
func (t *rfcTree) path(m, begin, end int) []ledger.Hash {
	n := end - begin
	if n == 1 {
		return nil
	}
	k := rfcSplit(n)
	if m < k {
		return append(t.path(m, begin, begin+k), t.mth(begin+k, end))
	}
	return append(t.path(m-k, begin+k, end), t.mth(begin, begin+k))
}

// proof is PROOF(m, D[0:n]) of §2.1.4.1.
func (t *rfcTree) proof(m, n int) []ledger.Hash { return t.subproof(m, 0, n, true) }

// subproof is SUBPROOF(m, D[begin:end], b), m relative to begin.
func (t *rfcTree) subproof(m, begin, end int, b bool) []ledger.Hash {
	n := end - begin
	if m == n {
		if b {
			return nil
		}
		return []ledger.Hash{t.mth(begin, end)}
	}
	k := rfcSplit(n)
	if m <= k {
		return append(t.subproof(m, begin, begin+k, b), t.mth(begin+k, end))
	}
	return append(t.subproof(m-k, begin+k, end, false), t.mth(begin, begin+k))
}

// rfcDepth is the height of the RFC tree of n leaves, by the recursion.
func rfcDepth(n int) int {
	if n <= 1 {
		return 0
	}
	k := rfcSplit(n)
	return 1 + max(rfcDepth(k), rfcDepth(n-k))
}

// nodeKey names a stored node.
type nodeKey struct {
	level uint
	index uint64
}

// memNodes is an in-memory node store, filled by AppendNodes as the ledger
// fills bbolt.
type memNodes struct {
	nodes map[nodeKey]ledger.Hash
	size  uint64
	reads int
}

func newMemNodes() *memNodes { return &memNodes{nodes: make(map[nodeKey]ledger.Hash)} }

var errAbsent = errors.New("node absent")

// append stores leaf as the next leaf, with the nodes AppendNodes completes.
func (s *memNodes) append(tb testing.TB, leaf ledger.Hash) {
	tb.Helper()
	nodes, err := ledger.AppendNodes(s.size, leaf, s.source(s.size))
	if err != nil {
		tb.Fatalf("AppendNodes(%d): %v", s.size, err)
	}
	for _, n := range nodes {
		k := nodeKey{n.Level, n.Index}
		if _, ok := s.nodes[k]; ok {
			tb.Fatalf("AppendNodes(%d) returned node (%d, %d) again", s.size, n.Level, n.Index)
		}
		s.nodes[k] = n.Hash
	}
	s.size++
}

// source is the store as the ledger would see it at the given size: a node
// whose leaves are not all below size is absent, so reading past the tree
// is an error rather than a silently right answer.
func (s *memNodes) source(size uint64) ledger.NodeSource {
	return func(level uint, index uint64) (ledger.Hash, error) {
		s.reads++
		if level >= 64 || index >= size>>level {
			return ledger.Hash{}, fmt.Errorf("(%d, %d) at size %d: %w", level, index, size, errAbsent)
		}
		h, ok := s.nodes[nodeKey{level, index}]
		if !ok {
			return ledger.Hash{}, fmt.Errorf("(%d, %d): %w", level, index, errAbsent)
		}
		return h, nil
	}
}

// maxSize is the largest tree every test checks exhaustively.
const maxSize = 300

// fixture is one tree of maxSize leaves built three ways.
type fixture struct {
	data   [][]byte
	leaves []ledger.Hash
	rfc    *rfcTree
	store  *memNodes
	tlog   []tlog.Hash // tlog's stored hashes, in its own layout
}

var (
	fixtureOnce sync.Once
	theFixture  *fixture
)

func leafData(i int) []byte { return fmt.Appendf(nil, "event %d", i) }

func getFixture(tb testing.TB) *fixture {
	tb.Helper()
	fixtureOnce.Do(func() {
		f := &fixture{store: newMemNodes()}
		for i := range maxSize {
			d := leafData(i)
			f.data = append(f.data, d)
			f.leaves = append(f.leaves, ledger.LeafHash(d))
			f.store.append(tb, ledger.LeafHash(d))
			hs, err := tlog.StoredHashes(int64(i), d, f.tlogReader())
			if err != nil {
				tb.Fatalf("tlog.StoredHashes(%d): %v", i, err)
			}
			f.tlog = append(f.tlog, hs...)
		}
		f.rfc = newRFCTree(f.leaves)
		theFixture = f
	})
	if theFixture == nil {
		tb.Fatal("fixture failed to build")
	}
	return theFixture
}

func (f *fixture) tlogReader() tlog.HashReader {
	return tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			if x < 0 || x >= int64(len(f.tlog)) {
				return nil, fmt.Errorf("tlog index %d out of range", x)
			}
			out[i] = f.tlog[x]
		}
		return out, nil
	})
}

func toTlog(hs []ledger.Hash) []tlog.Hash {
	out := make([]tlog.Hash, len(hs))
	for i, h := range hs {
		out[i] = tlog.Hash(h)
	}
	return out
}

func fromTlog(hs []tlog.Hash) []ledger.Hash {
	out := make([]ledger.Hash, len(hs))
	for i, h := range hs {
		out[i] = ledger.Hash(h)
	}
	return out
}

func mustHash(tb testing.TB, s string) ledger.Hash {
	tb.Helper()
	h, err := ledger.ParseHash(s)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func TestMerkleAppendNodes(t *testing.T) {
	f := getFixture(t)
	// Every completed aligned perfect subtree is stored, with the RFC root
	// of its leaves, and nothing else is.
	var want int
	for level := uint(0); 1<<level <= maxSize; level++ {
		for i := uint64(0); (i+1)<<level <= maxSize; i++ {
			want++
			got, ok := f.store.nodes[nodeKey{level, i}]
			if !ok {
				t.Errorf("node (%d, %d) not stored", level, i)
				continue
			}
			if w := f.rfc.mth(int(i<<level), int((i+1)<<level)); got != w {
				t.Errorf("node (%d, %d) = %s, want MTH = %s", level, i, got, w)
			}
		}
	}
	if len(f.store.nodes) != want {
		t.Errorf("%d nodes stored, want %d", len(f.store.nodes), want)
	}

	// The nodes come level 0 first, one per level, each completed by the
	// appended leaf; the reads are only left siblings.
	for _, index := range []uint64{0, 1, 2, 3, 6, 7, 15, 100, 127, 255, 299} {
		nodes, err := ledger.AppendNodes(index, f.leaves[index], f.store.source(index))
		if err != nil {
			t.Fatalf("AppendNodes(%d): %v", index, err)
		}
		if got, want := len(nodes), 1+bits.TrailingZeros64(^index); got != want {
			t.Errorf("AppendNodes(%d) gave %d nodes, want %d", index, got, want)
		}
		for j, n := range nodes {
			if n.Level != uint(j) || n.Index != index>>j || n.Hash != f.store.nodes[nodeKey{n.Level, n.Index}] {
				t.Errorf("AppendNodes(%d)[%d] = %+v, want level %d index %d", index, j, n, j, index>>j)
			}
		}
	}
}

func TestMerkleAppendNodesError(t *testing.T) {
	f := getFixture(t)
	// Leaf 7 completes three parents; without the stored node (1, 2) the
	// append must fail and say why.
	broken := func(level uint, index uint64) (ledger.Hash, error) {
		if level == 1 && index == 2 {
			return ledger.Hash{}, errAbsent
		}
		return f.store.source(7)(level, index)
	}
	nodes, err := ledger.AppendNodes(7, f.leaves[7], broken)
	if !errors.Is(err, errAbsent) || nodes != nil {
		t.Errorf("AppendNodes with a missing node = %v, %v; want nil, error wrapping %v", nodes, err, errAbsent)
	}
}

func TestMerkleRoot(t *testing.T) {
	f := getFixture(t)
	for size := range uint64(maxSize + 1) {
		f.store.reads = 0
		got, err := ledger.Root(size, f.store.source(size))
		if err != nil {
			t.Fatalf("Root(%d): %v", size, err)
		}
		if want := f.rfc.mth(0, int(size)); got != want {
			t.Errorf("Root(%d) = %s, want RFC MTH %s", size, got, want)
		}
		th, err := tlog.TreeHash(int64(size), f.tlogReader())
		if err != nil {
			t.Fatalf("tlog.TreeHash(%d): %v", size, err)
		}
		if got != ledger.Hash(th) {
			t.Errorf("Root(%d) = %s, want tlog's %s", size, got, th)
		}
		if want := bits.OnesCount64(size); f.store.reads != want {
			t.Errorf("Root(%d) read %d nodes, want one per one bit: %d", size, f.store.reads, want)
		}
	}
}

// minReads is the fewest stored nodes that determine MTH(D[begin:end]),
// found by brute force down the range's own tree: a subtree of it is stored
// exactly when it is perfect and aligned, and otherwise its children are
// needed.
func minReads(begin, end int) int {
	n := end - begin
	if n == 0 {
		return 0
	}
	if n&(n-1) == 0 && begin%n == 0 {
		return 1
	}
	k := rfcSplit(n)
	return minReads(begin, begin+k) + minReads(begin+k, end)
}

func TestMerkleRangeRoot(t *testing.T) {
	f := getFixture(t)
	check := func(begin, end, size uint64) {
		t.Helper()
		f.store.reads = 0
		got, err := ledger.RangeRoot(begin, end, f.store.source(size))
		if err != nil {
			t.Fatalf("RangeRoot(%d, %d): %v", begin, end, err)
		}
		// The range's root is the RFC root of a tree that holds just
		// those leaves, built from scratch.
		if want := newRFCTree(f.leaves[begin:end]).mth(0, int(end-begin)); got != want {
			t.Errorf("RangeRoot(%d, %d) = %s, want MTH of the sub-slice %s", begin, end, got, want)
		}
		if want := minReads(int(begin), int(end)); f.store.reads != want {
			t.Errorf("RangeRoot(%d, %d) read %d nodes, want the minimum %d", begin, end, f.store.reads, want)
		}
	}
	for end := range uint64(65) {
		for begin := range end + 1 {
			check(begin, end, end)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		a, b := r.Uint64N(maxSize+1), r.Uint64N(maxSize+1)
		check(min(a, b), max(a, b), maxSize)
	}
}

func TestMerkleRangeRootErrors(t *testing.T) {
	f := getFixture(t)
	for _, tc := range []struct {
		name       string
		begin, end uint64
		size       uint64 // leaves stored
		wantAbsent bool
	}{
		{"begin after end", 5, 4, maxSize, false},
		{"range past the tree", 0, 9, 8, true},
		{"unaligned range past the tree", 3, 9, 8, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ledger.RangeRoot(tc.begin, tc.end, f.store.source(tc.size))
			if err == nil {
				t.Fatalf("RangeRoot(%d, %d) at size %d succeeded", tc.begin, tc.end, tc.size)
			}
			if got := errors.Is(err, errAbsent); got != tc.wantAbsent {
				t.Errorf("RangeRoot(%d, %d): error %q wraps the source's error: %v, want %v", tc.begin, tc.end, err, got, tc.wantAbsent)
			}
		})
	}
}

func TestMerkleInclusionProof(t *testing.T) {
	f := getFixture(t)
	for size := uint64(1); size <= maxSize; size++ {
		for index := range size {
			f.store.reads = 0
			got, err := ledger.InclusionProof(index, size, f.store.source(size))
			if err != nil {
				t.Fatalf("InclusionProof(%d, %d): %v", index, size, err)
			}
			if want := f.rfc.path(int(index), 0, int(size)); !slices.Equal(got, want) {
				t.Fatalf("InclusionProof(%d, %d) =\n%v\nwant RFC PATH\n%v", index, size, got, want)
			}
			tp, err := tlog.ProveRecord(int64(size), int64(index), f.tlogReader())
			if err != nil {
				t.Fatalf("tlog.ProveRecord(%d, %d): %v", size, index, err)
			}
			if !slices.Equal(got, fromTlog(tp)) {
				t.Fatalf("InclusionProof(%d, %d) =\n%v\nwant tlog's\n%v", index, size, got, tp)
			}
			if limit := 2 * bits.Len64(size); f.store.reads > limit {
				t.Errorf("InclusionProof(%d, %d) read %d nodes, want at most %d", index, size, f.store.reads, limit)
			}
		}
	}
	for _, tc := range []struct{ index, size uint64 }{{0, 0}, {1, 1}, {300, 300}, {1 << 63, 5}} {
		if _, err := ledger.InclusionProof(tc.index, tc.size, f.store.source(maxSize)); err == nil {
			t.Errorf("InclusionProof(%d, %d) succeeded, want an error", tc.index, tc.size)
		}
	}
}

func TestMerkleConsistencyProof(t *testing.T) {
	f := getFixture(t)
	for size := uint64(1); size <= maxSize; size++ {
		for old := uint64(1); old <= size; old++ {
			f.store.reads = 0
			got, err := ledger.ConsistencyProof(old, size, f.store.source(size))
			if err != nil {
				t.Fatalf("ConsistencyProof(%d, %d): %v", old, size, err)
			}
			if want := f.rfc.proof(int(old), int(size)); !slices.Equal(got, want) {
				t.Fatalf("ConsistencyProof(%d, %d) =\n%v\nwant RFC PROOF\n%v", old, size, got, want)
			}
			tp, err := tlog.ProveTree(int64(size), int64(old), f.tlogReader())
			if err != nil {
				t.Fatalf("tlog.ProveTree(%d, %d): %v", size, old, err)
			}
			if !slices.Equal(got, fromTlog(tp)) {
				t.Fatalf("ConsistencyProof(%d, %d) =\n%v\nwant tlog's\n%v", old, size, got, tp)
			}
			if limit := 2*bits.Len64(size) + 1; f.store.reads > limit {
				t.Errorf("ConsistencyProof(%d, %d) read %d nodes, want at most %d", old, size, f.store.reads, limit)
			}
		}
	}
	for _, tc := range []struct{ old, new uint64 }{{0, 0}, {0, 5}, {6, 5}, {1 << 63, 1}} {
		if _, err := ledger.ConsistencyProof(tc.old, tc.new, f.store.source(maxSize)); err == nil {
			t.Errorf("ConsistencyProof(%d, %d) succeeded, want an error", tc.old, tc.new)
		}
	}
}

// The RFC 6962 reference tree, as published with the certificate-transparency
// and transparency-dev/merkle test suites (testonly/constants.go and
// proof/verify_test.go there): eight leaves, the root of every prefix, every
// stored node, and their inclusion and consistency proofs. RFC 9162 did not
// change the hashing, so the values stand for it too.
var (
	rfcLeafData = []string{
		"", "00", "10", "2021", "3031", "40414243",
		"5051525354555657", "606162636465666768696a6b6c6d6e6f",
	}
	rfcRoots = []string{ // by size, 0..8
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
		"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
		"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
		"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
		"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
		"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
		"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
		"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
	}
	rfcNodes = [][]string{ // by level, then index
		{
			"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
			"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
			"0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
			"07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
			"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
			"4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
			"b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
			"46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
		}, {
			"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
			"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
			"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
			"ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
		}, {
			"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
			"6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
		}, {
			"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
		},
	}
	rfcInclusion = []struct {
		index, size uint64
		proof       []string
	}{
		{0, 1, nil},
		{0, 8, []string{
			"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
			"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
			"6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
		}},
		{5, 8, []string{
			"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
			"ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
			"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
		}},
		{2, 3, []string{
			"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
		}},
		{1, 5, []string{
			"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
			"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
			"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
		}},
	}
	rfcConsistency = []struct {
		old, new uint64
		proof    []string
	}{
		{1, 1, nil},
		{1, 8, []string{
			"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
			"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
			"6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
		}},
		{6, 8, []string{
			"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
			"ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
			"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
		}},
		{2, 5, []string{
			"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
			"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
		}},
		{6, 7, []string{
			"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
			"b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
			"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
		}},
	}
)

// rfcReference builds the reference tree through AppendNodes.
func rfcReference(tb testing.TB) (*memNodes, []ledger.Hash) {
	tb.Helper()
	s := newMemNodes()
	var leaves []ledger.Hash
	for _, d := range rfcLeafData {
		b, err := hex.DecodeString(d)
		if err != nil {
			tb.Fatal(err)
		}
		leaves = append(leaves, ledger.LeafHash(b))
		s.append(tb, ledger.LeafHash(b))
	}
	return s, leaves
}

func mustHashes(tb testing.TB, ss []string) []ledger.Hash {
	tb.Helper()
	var out []ledger.Hash
	for _, s := range ss {
		out = append(out, mustHash(tb, s))
	}
	return out
}

func TestMerkleRFC6962ReferenceTree(t *testing.T) {
	s, leaves := rfcReference(t)
	for size, want := range rfcRoots {
		got, err := ledger.Root(uint64(size), s.source(uint64(size)))
		if err != nil {
			t.Fatalf("Root(%d): %v", size, err)
		}
		if got != mustHash(t, want) {
			t.Errorf("Root(%d) = %s, want %s", size, got, want)
		}
		var fr ledger.Frontier
		for _, l := range leaves[:size] {
			fr.Append(l)
		}
		if got := fr.Root(); got != mustHash(t, want) {
			t.Errorf("Frontier of %d leaves has root %s, want %s", size, got, want)
		}
	}
	for level, row := range rfcNodes {
		for index, want := range row {
			if got := s.nodes[nodeKey{uint(level), uint64(index)}]; got != mustHash(t, want) {
				t.Errorf("stored node (%d, %d) = %s, want %s", level, index, got, want)
			}
		}
	}
	for _, tc := range rfcInclusion {
		got, err := ledger.InclusionProof(tc.index, tc.size, s.source(tc.size))
		if err != nil {
			t.Fatalf("InclusionProof(%d, %d): %v", tc.index, tc.size, err)
		}
		if want := mustHashes(t, tc.proof); !slices.Equal(got, want) {
			t.Errorf("InclusionProof(%d, %d) = %v, want %v", tc.index, tc.size, got, want)
		}
	}
	for _, tc := range rfcConsistency {
		got, err := ledger.ConsistencyProof(tc.old, tc.new, s.source(tc.new))
		if err != nil {
			t.Fatalf("ConsistencyProof(%d, %d): %v", tc.old, tc.new, err)
		}
		if want := mustHashes(t, tc.proof); !slices.Equal(got, want) {
			t.Errorf("ConsistencyProof(%d, %d) = %v, want %v", tc.old, tc.new, got, want)
		}
	}
}

func TestFrontier(t *testing.T) {
	f := getFixture(t)
	var fr ledger.Frontier
	for size := 0; size <= maxSize; size++ {
		if size > 0 {
			fr.Append(f.leaves[size-1])
		}
		if fr.Size != uint64(size) {
			t.Fatalf("after %d appends Size = %d", size, fr.Size)
		}
		if got, want := fr.Root(), f.rfc.mth(0, size); got != want {
			t.Errorf("Frontier of %d leaves has root %s, want RFC MTH %s", size, got, want)
		}
		if got, want := fr.Depth(), rfcDepth(size); got != want {
			t.Errorf("Frontier of %d leaves has depth %d, want %d", size, got, want)
		}
		// Its nodes are the stored nodes of the tree's right border.
		var want []ledger.Hash
		begin := uint64(0)
		for level := 63; level >= 0; level-- {
			if uint64(size)&(1<<level) != 0 {
				want = append(want, f.store.nodes[nodeKey{uint(level), begin >> level}])
				begin += 1 << level
			}
		}
		if !slices.Equal(fr.Nodes, want) {
			t.Errorf("Frontier of %d leaves holds %v, want the border nodes %v", size, fr.Nodes, want)
		}
	}
}

func TestMerkleTreeDepth(t *testing.T) {
	for _, tc := range []struct {
		size uint64
		want int
	}{
		{0, 0}, {1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {8, 3}, {9, 4},
		{1 << 20, 20}, {1<<20 + 1, 21}, {1 << 63, 63}, {1<<63 + 1, 64}, {^uint64(0), 64},
	} {
		if got := ledger.TreeDepth(tc.size); got != tc.want {
			t.Errorf("TreeDepth(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
	for n := range maxSize + 1 {
		if got, want := ledger.TreeDepth(uint64(n)), rfcDepth(n); got != want {
			t.Errorf("TreeDepth(%d) = %d, want the RFC tree's height %d", n, got, want)
		}
	}
}

func ExampleFrontier() {
	// The RFC 6962 reference tree, leaf by leaf.
	var f ledger.Frontier
	for _, leaf := range []string{
		"", "00", "10", "2021", "3031", "40414243",
		"5051525354555657", "606162636465666768696a6b6c6d6e6f",
	} {
		b, _ := hex.DecodeString(leaf)
		f.Append(ledger.LeafHash(b))
	}
	fmt.Println(f.Size, f.Depth(), f.Root())
	// Output: 8 3 5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328
}

// benchSize is the tree the benchmarks read: 1<<20 leaves in a map, so the
// numbers are the math and the lookups, without a disk.
const benchSize = 1 << 20

var (
	benchOnce  sync.Once
	benchStore *memNodes
)

func benchNodes(b *testing.B) ledger.NodeSource {
	b.Helper()
	benchOnce.Do(func() {
		s := newMemNodes()
		for i := range benchSize {
			s.append(b, ledger.LeafHash(leafData(i)))
		}
		benchStore = s
	})
	if benchStore == nil {
		b.Fatal("benchmark tree failed to build")
	}
	benchStore.reads = 0
	return benchStore.source(benchSize)
}

// reportReads adds the node reads per operation to the benchmark's output.
func reportReads(b *testing.B, ops int) {
	b.ReportMetric(float64(benchStore.reads)/float64(ops), "reads/op")
}

func BenchmarkMerkleRoot(b *testing.B) {
	get := benchNodes(b)
	r := rand.New(rand.NewPCG(1, 1))
	sizes := make([]uint64, 1024)
	for i := range sizes {
		sizes[i] = 1 + r.Uint64N(benchSize)
	}
	var i int
	for b.Loop() {
		if _, err := ledger.Root(sizes[i%len(sizes)], get); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportReads(b, i)
}

func BenchmarkMerkleInclusionProof(b *testing.B) {
	get := benchNodes(b)
	r := rand.New(rand.NewPCG(1, 2))
	type query struct{ index, size uint64 }
	qs := make([]query, 1024)
	for i := range qs {
		size := 1 + r.Uint64N(benchSize)
		qs[i] = query{r.Uint64N(size), size}
	}
	var i int
	for b.Loop() {
		q := qs[i%len(qs)]
		if _, err := ledger.InclusionProof(q.index, q.size, get); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportReads(b, i)
}

func BenchmarkMerkleConsistencyProof(b *testing.B) {
	get := benchNodes(b)
	r := rand.New(rand.NewPCG(1, 3))
	type query struct{ old, new uint64 }
	qs := make([]query, 1024)
	for i := range qs {
		x, y := 1+r.Uint64N(benchSize), 1+r.Uint64N(benchSize)
		qs[i] = query{min(x, y), max(x, y)}
	}
	var i int
	for b.Loop() {
		q := qs[i%len(qs)]
		if _, err := ledger.ConsistencyProof(q.old, q.new, get); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportReads(b, i)
}

func BenchmarkMerkleRangeRoot(b *testing.B) {
	type span struct{ begin, end uint64 }
	r := rand.New(rand.NewPCG(1, 4))
	// unaligned draws spans of size leaves whose begin is an odd multiple
	// of align: a multiple of align and of no larger power of two.
	unaligned := func(size func() uint64, align uint64) []span {
		out := make([]span, 1024)
		for i := range out {
			n := size()
			begin := align + 2*align*r.Uint64N((benchSize-n-align)/(2*align)+1)
			out[i] = span{begin, begin + n}
		}
		return out
	}
	for _, bc := range []struct {
		name  string
		spans []span
	}{
		// begin a multiple of the largest power of two below the size,
		// as every RFC subtree is: O(log n).
		{"aligned", func() []span {
			out := make([]span, 1024)
			for i := range out {
				size := 2 + r.Uint64N(benchSize-1)
				k := uint64(1) << (bits.Len64(size-1) - 1)
				begin := r.Uint64N((benchSize-size)/k+1) * k
				out[i] = span{begin, begin + size}
			}
			return out
		}()},
		{"unaligned/odd-begin/1k-leaves", unaligned(func() uint64 { return 1000 }, 1)},
		{"unaligned/odd-begin/64k-leaves", unaligned(func() uint64 { return 1 << 16 }, 1)},
		{"unaligned/begin-64-aligned/64k-leaves", unaligned(func() uint64 { return 1 << 16 }, 64)},
		{"unaligned/begin-4096-aligned/random-size", unaligned(func() uint64 { return 4097 + r.Uint64N(benchSize/2) }, 4096)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			get := benchNodes(b)
			var i int
			for b.Loop() {
				s := bc.spans[i%len(bc.spans)]
				if _, err := ledger.RangeRoot(s.begin, s.end, get); err != nil {
					b.Fatal(err)
				}
				i++
			}
			reportReads(b, i)
		})
	}
}
