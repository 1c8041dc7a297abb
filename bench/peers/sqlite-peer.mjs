// sqlite-peer.mjs is the Colibri-style peer of `make bench-peers`: an MCP
// stdio server on the official TypeScript SDK that keeps tasks and thoughts in
// SQLite through better-sqlite3, with the durability logbook promises (WAL,
// synchronous=FULL: the WAL is fsync'd at every commit, before the answer).
// Each thought is one row, hash-chained to the task's previous thought:
// SHA-256 over that row's hash and the new row's canonical content, computed
// here in the server (chain.mjs).
//
// Its task_create and thought_record take the argument shapes of logbook's
// (CONTRACT.md §3–4) and answer in the same envelope, {"ok":true,"data":…}
// as structuredContent and as one text item, so one client drives both.
// Every write is one BEGIN IMMEDIATE transaction: with several processes on
// one file the write lock is taken up front and waited for (busy_timeout, the
// same 5 s as logbook's lock timeout), never upgraded half-way.
//
// Its reads, task_get, task_list and thought_record_list, take logbook's
// arguments too (task_list: every filter, paging and sort; search as words
// that must all occur in the title or description, with SQLite's LIKE, case
// folded for ASCII only) and answer the same fields, read in one statement
// or two from indexed tables; a read writes nothing (logbook audits every
// call, reads included: a commit, fsync'd, before the answer).
//
// Usage: node sqlite-peer.mjs --db FILE [--agent NAME]
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

import { thoughtHash } from './chain.mjs';

const { values: opts } = parseArgs({ options: { db: { type: 'string' }, agent: { type: 'string' } } });
if (!opts.db) {
  console.error('sqlite-peer: --db is required');
  process.exit(2);
}

const db = new Database(opts.db);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('busy_timeout = 5000');
db.pragma('foreign_keys = ON');
db.exec(`
CREATE TABLE IF NOT EXISTS tasks (
  n              INTEGER PRIMARY KEY,
  project        TEXT NOT NULL,
  sequence       INTEGER NOT NULL,
  title          TEXT NOT NULL,
  description    TEXT,
  parent         INTEGER REFERENCES tasks(n),
  priority       TEXT NOT NULL,
  labels         TEXT NOT NULL,
  assignee       TEXT NOT NULL,
  estimate_hours REAL,
  status         TEXT NOT NULL,
  progress       INTEGER NOT NULL,
  created_at     TEXT NOT NULL,
  created_by     TEXT NOT NULL,
  updated_at     TEXT NOT NULL,
  updated_by     TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS tasks_project ON tasks(project, sequence);
CREATE TABLE IF NOT EXISTS thoughts (
  n              INTEGER PRIMARY KEY,
  task           INTEGER NOT NULL REFERENCES tasks(n),
  chain_position INTEGER NOT NULL,
  type           TEXT NOT NULL,
  content        TEXT NOT NULL,
  session_id     TEXT,
  branch         TEXT,
  commit_sha     TEXT,
  tests_run      TEXT,
  blockers       TEXT,
  metadata       TEXT,
  recorded_at    TEXT NOT NULL,
  recorded_by    TEXT NOT NULL,
  previous_hash  TEXT,
  hash           TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS thoughts_chain ON thoughts(task, chain_position);
CREATE INDEX IF NOT EXISTS tasks_parent ON tasks(parent);
CREATE INDEX IF NOT EXISTS tasks_updated ON tasks(updated_at);
`);

const id = (prefix, n) => `${prefix}-${String(n).padStart(4, '0')}`;
const parseID = (prefix, s) => {
  const m = new RegExp(`^${prefix}-(\\d{4,})$`).exec(s);
  return m ? Number(m[1]) : 0;
};
const now = () => new Date().toISOString();
const json = (v) => (v === undefined ? null : JSON.stringify(v));

class ToolError extends Error {
  constructor(code, message, details = {}) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

// envelope runs fn and answers the way logbook does: success as
// {"ok":true,"data":…}, a failure as {"ok":false,"error":…} with isError,
// both as structuredContent and as the one text item.
function envelope(fn) {
  return async (args) => {
    let env;
    try {
      env = { ok: true, data: fn(args) };
    } catch (e) {
      if (!(e instanceof ToolError)) {
        console.error(`sqlite-peer: ${e?.stack ?? e}`);
        e = new ToolError(e?.code === 'SQLITE_BUSY' ? 'ERR_STORAGE' : 'ERR_INTERNAL', 'the call failed', {});
      }
      env = { ok: false, error: { code: e.code, message: e.message, details: e.details } };
    }
    return { content: [{ type: 'text', text: JSON.stringify(env) }], structuredContent: env, ...(env.ok ? {} : { isError: true }) };
  };
}

const outputSchema = (data) => z.object({
  ok: z.boolean(),
  data: data.optional(),
  error: z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }).optional(),
});

const agent = () => opts.agent ?? server.server.getClientVersion()?.name ?? 'unknown';

const stmt = {
  task: db.prepare('SELECT n, project FROM tasks WHERE n = ?'),
  nextSequence: db.prepare('SELECT coalesce(max(sequence), 0) + 1 AS s FROM tasks WHERE project = ?'),
  insertTask: db.prepare(`INSERT INTO tasks (project, sequence, title, description, parent, priority, labels, assignee,
    estimate_hours, status, progress, created_at, created_by, updated_at, updated_by)
    VALUES (@project, @sequence, @title, @description, @parent, @priority, @labels, @assignee,
    @estimate_hours, 'backlog', 0, @at, @by, @at, @by)`),
  lastThought: db.prepare('SELECT chain_position, hash FROM thoughts WHERE task = ? ORDER BY chain_position DESC LIMIT 1'),
  nextThought: db.prepare("SELECT coalesce(max(n), 0) + 1 AS n FROM thoughts"),
  insertThought: db.prepare(`INSERT INTO thoughts (n, task, chain_position, type, content, session_id, branch, commit_sha,
    tests_run, blockers, metadata, recorded_at, recorded_by, previous_hash, hash)
    VALUES (@n, @task, @chain_position, @type, @content, @session_id, @branch, @commit_sha,
    @tests_run, @blockers, @metadata, @recorded_at, @recorded_by, @previous_hash, @hash)`),
};

const createTask = db.transaction((a) => {
  let parent = null;
  if (a.parent_id !== undefined) {
    const p = stmt.task.get(parseID('T', a.parent_id));
    if (!p) throw new ToolError('ERR_TASK_NOT_FOUND', `task ${a.parent_id} does not exist`, { task_id: a.parent_id });
    if (p.project !== a.project) {
      throw new ToolError('ERR_INVALID_INPUT', 'the parent is in another project', { issues: [{ path: 'parent_id', message: 'another project' }] });
    }
    parent = p.n;
  }
  const at = now();
  const by = agent();
  const sequence = stmt.nextSequence.get(a.project).s;
  const r = stmt.insertTask.run({
    project: a.project, sequence, title: a.title, description: a.description ?? null, parent,
    priority: a.priority ?? 'normal', labels: JSON.stringify([...new Set(a.labels ?? [])]),
    assignee: a.assignee ?? 'unassigned', estimate_hours: a.estimate_hours ?? null, at, by,
  });
  const n = Number(r.lastInsertRowid);
  return { task_id: id('T', n), status: 'backlog', created_at: at, created_by: by, sequence, seq: n };
});

const recordThought = db.transaction((a) => {
  const task = stmt.task.get(parseID('T', a.task_id));
  if (!task) throw new ToolError('ERR_TASK_NOT_FOUND', `task ${a.task_id} does not exist`, { task_id: a.task_id });
  if (a.session_id !== undefined) {
    throw new ToolError('ERR_SESSION_NOT_FOUND', `session ${a.session_id} does not exist`, { session_id: a.session_id });
  }
  const last = stmt.lastThought.get(task.n);
  const n = stmt.nextThought.get().n;
  const row = {
    n, thought_id: id('Θ', n), task: task.n, task_id: a.task_id, chain_position: (last?.chain_position ?? 0) + 1,
    type: a.type, content: a.content, session_id: null, branch: a.branch ?? null, commit_sha: a.commit_sha ?? null,
    tests_run: a.tests_run ?? null, blockers: a.blockers ?? null, metadata: a.metadata ?? null,
    recorded_at: now(), recorded_by: agent(), previous_hash: last?.hash ?? null,
  };
  row.hash = thoughtHash(row.previous_hash, row);
  stmt.insertThought.run({ ...row, tests_run: json(a.tests_run), blockers: json(a.blockers), metadata: json(a.metadata) });
  return {
    thought_id: row.thought_id, task_id: a.task_id, type: a.type, hash: row.hash, previous_hash: row.previous_hash,
    recorded_at: row.recorded_at, recorded_by: row.recorded_by, chain_position: row.chain_position, seq: n,
  };
});

const taskRow = db.prepare('SELECT * FROM tasks WHERE n = ?');
const trail = db.prepare('SELECT n FROM thoughts WHERE task = ? ORDER BY chain_position').pluck();
const dependents = db.prepare('SELECT n FROM tasks WHERE parent = ? ORDER BY n').pluck();
const taskOut = (r) => ({
  task_id: id('T', r.n), title: r.title, description: r.description ?? '', project: r.project, status: r.status,
  priority: r.priority, progress: r.progress, assignee: r.assignee, labels: JSON.parse(r.labels),
  estimate_hours: r.estimate_hours, created_at: r.created_at, updated_at: r.updated_at, created_by: r.created_by,
  updated_by: r.updated_by, parent_id: r.parent === null ? null : id('T', r.parent), sequence: r.sequence, seq: r.n,
});

function getTask(a) {
  const r = taskRow.get(parseID('T', a.task_id));
  if (!r) throw new ToolError('ERR_TASK_NOT_FOUND', `task ${a.task_id} does not exist`, { task_id: a.task_id });
  const out = taskOut(r);
  if (a.include_thought_trail) out.thought_trail = trail.all(r.n).map((n) => id('Θ', n));
  if (a.include_dependents) out.dependents = dependents.all(r.n).map((n) => id('T', n));
  return out;
}

const priorityRank = "CASE priority WHEN 'low' THEN 0 WHEN 'normal' THEN 1 WHEN 'high' THEN 2 ELSE 3 END";
const sortColumn = { created: 'n', updated: 'updated_at', priority: priorityRank, progress: 'progress' };
const statements = new Map();
// prepared is the statement of this SQL, prepared once (one per shape of
// task_list's filters).
const prepared = (sql) => {
  let st = statements.get(sql);
  if (!st) statements.set(sql, (st = db.prepare(sql)));
  return st;
};

function listTasks(a) {
  const where = [];
  const params = [];
  if (a.project !== undefined) { where.push('project = ?'); params.push(a.project); }
  if (a.status?.length) { where.push(`status IN (${a.status.map(() => '?').join(',')})`); params.push(...a.status); }
  if (a.priority?.length) { where.push(`priority IN (${a.priority.map(() => '?').join(',')})`); params.push(...a.priority); }
  if (a.assignee !== undefined) { where.push('assignee = ?'); params.push(a.assignee); }
  if (a.label !== undefined) { where.push('EXISTS (SELECT 1 FROM json_each(labels) WHERE value = ?)'); params.push(a.label); }
  if (a.created_after !== undefined) { where.push('created_at > ?'); params.push(new Date(a.created_after).toISOString()); }
  if (a.created_before !== undefined) { where.push('created_at < ?'); params.push(new Date(a.created_before).toISOString()); }
  for (const w of (a.search ?? '').split(/\s+/).filter(Boolean)) {
    where.push("(title LIKE ? ESCAPE '\\' OR coalesce(description, '') LIKE ? ESCAPE '\\')");
    const like = `%${w.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    params.push(like, like);
  }
  const cond = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const dir = a.sort_order === 'asc' ? 'ASC' : 'DESC';
  const limit = a.limit ?? 50;
  const offset = a.offset ?? 0;
  const rows = prepared(`SELECT n, title, project, status, priority, progress, assignee, created_at, updated_at
    FROM tasks ${cond} ORDER BY ${sortColumn[a.sort_by ?? 'updated']} ${dir}, n ${dir} LIMIT ? OFFSET ?`).all(...params, limit, offset);
  const total = prepared(`SELECT count(*) AS c FROM tasks ${cond}`).get(...params).c;
  return {
    tasks: rows.map((r) => ({
      task_id: id('T', r.n), title: r.title, project: r.project, status: r.status, priority: r.priority,
      progress: r.progress, assignee: r.assignee, created_at: r.created_at, updated_at: r.updated_at,
    })),
    total_count: total, returned_count: rows.length, offset, limit,
  };
}

const thoughtRows = db.prepare(`SELECT n, type, content, hash, previous_hash, recorded_at, recorded_by, chain_position
  FROM thoughts WHERE task = ? ORDER BY chain_position LIMIT ?`);
const thoughtCount = db.prepare('SELECT count(*) AS c FROM thoughts WHERE task = ?');

function listThoughts(a) {
  const task = stmt.task.get(parseID('T', a.task_id));
  if (!task) throw new ToolError('ERR_TASK_NOT_FOUND', `task ${a.task_id} does not exist`, { task_id: a.task_id });
  const rows = thoughtRows.all(task.n, a.limit ?? 100);
  return {
    task_id: a.task_id, thought_count: thoughtCount.get(task.n).c,
    thoughts: rows.map((r) => ({
      thought_id: id('Θ', r.n), task_id: a.task_id, type: r.type, content: r.content, hash: r.hash,
      previous_hash: r.previous_hash, recorded_at: r.recorded_at, recorded_by: r.recorded_by, chain_position: r.chain_position,
    })),
  };
}

const slug = /^[a-z0-9][a-z0-9-]{0,63}$/;
const notBlank = (s) => s.trim().length > 0;
const server = new McpServer({ name: 'sqlite-peer', version: '1.0.0' });

server.registerTool('task_create', {
  description: 'Create a task in a project (backlog); the peer of logbook task_create.',
  inputSchema: z.strictObject({
    title: z.string().min(1).max(256),
    project: z.string().regex(slug),
    description: z.string().max(8000).optional(),
    parent_id: z.string().optional(),
    priority: z.enum(['low', 'normal', 'high', 'critical']).optional(),
    labels: z.array(z.string().min(1).max(64)).max(20).optional(),
    assignee: z.string().min(1).max(128).optional(),
    estimate_hours: z.number().min(0).max(1000).optional(),
  }),
  outputSchema: outputSchema(z.object({
    task_id: z.string(), status: z.string(), created_at: z.string(), created_by: z.string(), sequence: z.number(), seq: z.number(),
  })),
}, envelope((a) => createTask.immediate(a)));

server.registerTool('thought_record', {
  description: 'Record a thought on a task, hash-chained to the task\'s previous thought; the peer of logbook thought_record.',
  inputSchema: z.strictObject({
    task_id: z.string(),
    type: z.enum(['plan', 'analysis', 'decision', 'reflection', 'discovery', 'risk', 'blockers']),
    content: z.string().min(1).max(5000).refine(notBlank, 'content is only whitespace'),
    session_id: z.string().optional(),
    branch: z.string().max(256).optional(),
    commit_sha: z.string().regex(/^[0-9a-f]{7,64}$/).optional(),
    tests_run: z.array(z.string()).max(100).optional(),
    blockers: z.array(z.string()).max(50).optional(),
    metadata: z.record(z.string(), z.unknown()).refine((m) => JSON.stringify(m).length <= 16384, 'metadata is over 16 KiB').optional(),
  }),
  outputSchema: outputSchema(z.object({
    thought_id: z.string(), task_id: z.string(), type: z.string(), hash: z.string(), previous_hash: z.string().nullable(),
    recorded_at: z.string(), recorded_by: z.string(), chain_position: z.number(), seq: z.number(),
  })),
}, envelope((a) => recordThought.immediate(a)));

const statuses = ['backlog', 'todo', 'in_progress', 'blocked', 'review', 'done', 'cancelled'];
const priorities = ['low', 'normal', 'high', 'critical'];
const loose = z.object({}).passthrough();

server.registerTool('task_get', {
  description: 'Get a task, optionally with its thought trail and sub-tasks; the peer of logbook task_get.',
  inputSchema: z.strictObject({
    task_id: z.string().max(32),
    include_thought_trail: z.boolean().optional(),
    include_dependents: z.boolean().optional(),
  }),
  outputSchema: outputSchema(loose),
}, envelope(getTask));

server.registerTool('task_list', {
  description: 'List tasks with filters, search, paging and sorting; the peer of logbook task_list.',
  inputSchema: z.strictObject({
    project: z.string().regex(slug).optional(),
    status: z.array(z.enum(statuses)).optional(),
    priority: z.array(z.enum(priorities)).optional(),
    assignee: z.string().min(1).max(128).optional(),
    label: z.string().min(1).max(64).optional(),
    created_after: z.string().datetime({ offset: true }).optional(),
    created_before: z.string().datetime({ offset: true }).optional(),
    search: z.string().max(1000).optional(),
    limit: z.number().int().min(1).max(500).optional(),
    offset: z.number().int().min(0).optional(),
    sort_by: z.enum(['created', 'updated', 'priority', 'progress']).optional(),
    sort_order: z.enum(['asc', 'desc']).optional(),
  }),
  outputSchema: outputSchema(loose),
}, envelope(db.transaction(listTasks)));

server.registerTool('thought_record_list', {
  description: 'List a task\'s thoughts in order; the peer of logbook thought_record_list (by task).',
  inputSchema: z.strictObject({
    task_id: z.string().max(32),
    limit: z.number().int().min(1).max(500).optional(),
  }),
  outputSchema: outputSchema(loose),
}, envelope(db.transaction(listThoughts)));

const transport = new StdioServerTransport();
transport.onclose = () => db.close();
process.stdin.on('end', () => {
  db.close();
  process.exit(0);
});
await server.connect(transport);
