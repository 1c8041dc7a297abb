// smoke.test.mjs checks, through the benchmark's own client code path
// (servers.mjs), that the peers answer what the benchmark times: the SQLite
// peer records thoughts whose stored rows chain and hash as its answers say,
// in a WAL database, and rejects a task that does not exist; server-memory
// takes an observation; the SQLite peer's reads answer what logbook's do.
// `make bench-peers` runs it before the benchmark.
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

test('the SQLite peer answers the reads the benchmark times', async () => {
  const s = servers.sqlite;
  const c = await connect(s.launch(mkdtempSync(path.join(dir, 'reads-')), 'smoke-agent'), 'smoke');
  try {
    const mk = (args) => s.call(c.client, 'task_create', { project: 'p', ...args });
    const a = (await mk({ title: 'Cache the manifests', description: 'Invalidate on ETag change', priority: 'high', labels: ['infra', 'x'] })).task_id;
    const b = (await mk({ title: 'Retry the upload', priority: 'low', labels: ['x'], assignee: 'bob' })).task_id;
    for (const content of ['one', 'two', 'three']) await s.call(c.client, 'thought_record', { task_id: a, type: 'plan', content });
    const got = await s.call(c.client, 'task_get', { task_id: a, include_thought_trail: true, include_dependents: true });
    assert.deepEqual(got.thought_trail, ['Θ-0001', 'Θ-0002', 'Θ-0003']);
    assert.deepEqual(got.dependents, []);
    assert.deepEqual(got.labels, ['infra', 'x']);
    const ids = async (args) => (await s.call(c.client, 'task_list', args)).tasks.map((t) => t.task_id);
    assert.deepEqual(await ids({ sort_by: 'created', sort_order: 'asc' }), [a, b]);
    assert.deepEqual(await ids({ label: 'infra' }), [a]);
    assert.deepEqual(await ids({ priority: ['low'], assignee: 'bob' }), [b]);
    assert.deepEqual(await ids({ search: 'etag CACHE' }), [a]);
    assert.deepEqual(await ids({ search: '50%' }), []);
    const page = await s.call(c.client, 'task_list', { sort_by: 'created', limit: 1, offset: 1 });
    assert.deepEqual([page.total_count, page.returned_count, page.tasks[0].task_id], [2, 1, a]);
    const listed = await s.call(c.client, 'thought_record_list', { task_id: a, limit: 2 });
    assert.deepEqual([listed.thought_count, listed.thoughts.map((t) => t.content)], [3, ['one', 'two']]);
    const missing = await c.client.callTool({ name: 'task_get', arguments: { task_id: 'T-0042' } });
    assert.equal(missing.structuredContent.error.code, 'ERR_TASK_NOT_FOUND');
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
