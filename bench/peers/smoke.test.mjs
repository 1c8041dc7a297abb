// smoke.test.mjs checks, through the benchmark's own client code path
// (servers.mjs), that the peers answer what the benchmark times: the SQLite
// peer records thoughts whose stored rows chain and hash as its answers say,
// in a WAL database, and rejects a task that does not exist; server-memory
// takes an observation. `make bench-peers` runs it before the benchmark.
//
// Usage: node --test smoke.test.mjs
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';

import Database from 'better-sqlite3';

import { thoughtHash } from './chain.mjs';
import { connect, makeServers } from './servers.mjs';

const servers = makeServers('/nonexistent/logbook'); // logbook itself is not launched here
const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-peers-smoke-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('the SQLite peer chains its thoughts and keeps them in a WAL database', async () => {
  const s = servers.sqlite;
  const c = await connect(s.launch(dir, 'smoke-agent'), 'smoke');
  try {
    const task = await s.subject(c.client, 'smoke');
    assert.match(task, /^T-0001$/);
    const call = (args) => c.client.callTool({ name: 'thought_record', arguments: args });
    const first = (await call({ task_id: task, type: 'plan', content: 'first', metadata: { b: 1, a: [2] }, tests_run: ['x'] })).structuredContent;
    const second = (await call({ task_id: task, type: 'decision', content: 'second' })).structuredContent;
    assert.equal(first.ok, true);
    assert.equal(second.ok, true);
    assert.equal(first.data.previous_hash, null);
    assert.equal(first.data.chain_position, 1);
    assert.equal(second.data.previous_hash, first.data.hash);
    assert.equal(second.data.chain_position, 2);
    assert.equal(second.data.recorded_by, 'smoke-agent');

    const missing = await call({ task_id: 'T-0042', type: 'plan', content: 'nowhere' });
    assert.equal(missing.isError, true);
    assert.equal(missing.structuredContent.error.code, 'ERR_TASK_NOT_FOUND');

    const db = new Database(path.join(dir, 'peer.db'), { readonly: true });
    try {
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
      const rows = db.prepare('SELECT t.*, ? AS task_id FROM thoughts t ORDER BY chain_position').all(task);
      assert.equal(rows.length, 2);
      let prev = null;
      for (const [i, r] of rows.entries()) {
        r.thought_id = `Θ-${String(r.n).padStart(4, '0')}`;
        for (const k of ['tests_run', 'blockers', 'metadata']) r[k] = r[k] === null ? null : JSON.parse(r[k]);
        assert.equal(r.previous_hash, prev, `row ${i + 1} links to the row before it`);
        assert.equal(r.hash, thoughtHash(prev, r), `row ${i + 1}'s hash is recomputed from what is stored`);
        prev = r.hash;
      }
      assert.equal(rows[1].hash, second.data.hash);
    } finally {
      db.close();
    }
    assert.equal(await s.count([c], [task], dir), 2);
  } finally {
    await c.close();
  }
});

test('server-memory takes an observation through the same client', async () => {
  const s = servers.memory;
  const c = await connect(s.launch(dir, 'smoke-agent'), 'smoke');
  try {
    const entity = await s.subject(c.client, 'smoke');
    await s.thought(c.client, entity, 7);
    await s.fill(c.client, entity, 3); // a batch of 3 more, numbers 0–2 (a repeat would fail: server-memory drops it)
    assert.equal(await s.count([c], [entity], dir), 4);
  } finally {
    await c.close();
  }
});
