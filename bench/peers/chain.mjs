// chain.mjs is the hash chain of the SQLite peer's thoughts, shared by the
// server (which computes it inside the write transaction) and the smoke test
// (which recomputes it from the stored rows).
import { createHash } from 'node:crypto';

// canonical is JSON with object keys sorted at every depth, so the same row
// always hashes the same whatever order its fields were built in.
export function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

// rowContent is what a thought's hash commits to: every stored column but
// the hash itself.
export function rowContent(r) {
  return {
    thought_id: r.thought_id, task_id: r.task_id, type: r.type, content: r.content,
    session_id: r.session_id ?? null, branch: r.branch ?? null, commit_sha: r.commit_sha ?? null,
    tests_run: r.tests_run ?? null, blockers: r.blockers ?? null, metadata: r.metadata ?? null,
    recorded_at: r.recorded_at, recorded_by: r.recorded_by, chain_position: r.chain_position,
  };
}

// thoughtHash is SHA-256 over the previous row's hash (empty for a task's
// first thought) and the row's canonical content.
export function thoughtHash(previousHash, row) {
  return createHash('sha256').update(previousHash ?? '').update('\n').update(canonical(rowContent(row))).digest('hex');
}
