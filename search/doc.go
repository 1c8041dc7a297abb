// Package search is a full-text index of the knowledge agents keep (thoughts,
// findings, learnings, memory), kept as a projection: its postings and
// statistics live in a key/value Space the caller hands over, normally a
// ledger space written in the same transaction as the events it indexes.
//
// Ranking is BM25 (k1 = 1.2, b = 0.75) summed over the query terms. Terms come
// from a Unicode-aware tokenizer with a small English stop-word list and the
// Snowball English stemmer (github.com/kljensen/snowball), so "failing tests"
// matches "test failed"; dotted or underscored identifiers (go.mod,
// snake_case) are kept whole as well as split into their parts.
//
// Why not bleve: bleve keeps its own index files beside the ledger, so the
// index could not be folded in the same commit as the events, rebuilt from the
// log into identical bytes, or read as of an earlier sequence number. Here the
// index is plain keys in the ledger file.
//
// Invariants:
//   - Documents are added in log order (Add refuses a seq below the last
//     document's), so document numbers rise with seqs.
//   - Adding the same documents (and removing the same ids) in the same order
//     yields byte-identical keys and values, so a rebuild equals the live index.
//   - Statistics are incremental: Add costs O(terms in the document); Remove
//     too, plus, per term, a walk back over the keys of its sealed blocks newer
//     than the document's (none for a recent document), decoding one block;
//     Search reads only the statistics and postings of the query terms, the
//     document table's blocks of the documents it scores, and the events of
//     the hits it returns; as of a seq, also the table's blocks and the query
//     terms' postings of the documents added after that seq (read back from
//     the end: what was recorded since costs, not the whole index).
//   - Results are deterministic: equal scores are ordered by seq, newest first,
//     then by insertion order.
//
// Time travel: Filter.AsOfSeq hides documents added after that seq, from the
// hits and from BM25's figures (document count, mean length, each term's
// document frequency), so a search as of a seq scores the same whatever is
// added later. A removed document (a superseded learning, an old memory
// version) is gone from the index and from its figures, so a removal does
// change what a search as of an earlier seq scores; to see the index as it
// stood before a removal, rebuild up to that seq.
//
// The index copies no text: a document's fields stay in the ledger event
// that recorded it, which Docs reads by seq for a hit's snippet and for the
// terms of a document being removed.
//
// Layout of the space (integers are uvarints unless noted):
//
//	"s"                          docs, total length, next doc number, next project number
//	"t" len(term) term           document frequency of term, then its open block of
//	                             postings (base, block), where new postings go
//	"p" term 0x00 base(8 bytes)  a sealed block of term's postings (posting.go): doc gap
//	                             and tf of each
//	"d" block(8 bytes)           a block of the document table (doctable.go): kind,
//	                             project, length and seq of each document numbered
//	                             in it, removed or not, in records of one size
//	"i" len(id) id               doc number (not for thoughts, never removed by id)
//	"j" project                  project number
package search
