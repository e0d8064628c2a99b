/**
 * Prepared statements per sqlite connection (src/storage/statement-cache.ts), as knex uses them:
 * a statement is prepared once per connection and reused; what knex reads back (rows, lastID,
 * changes) is unchanged; a statement that fails is dropped and the connection stays usable; a
 * bad statement reports sqlite's own message; more distinct statements than the cache holds
 * still run; the pool can still close its connections (sqlite refuses while statements are
 * prepared). And the write queue's sqlite transaction (boundTo): its queries run inside the
 * transaction, a failure rolls all of it back, and members it does not offer throw.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Knex } from 'knex';
import sqlite3 from 'sqlite3';
import { createTestStore, type TestStore } from '../../helpers/store.js';
import { openStore } from '../../../src/storage/db.js';
import { boundTo, WriteQueue } from '../../../src/storage/write-queue.js';

describe('sqlite prepared statements (statement cache)', () => {
  let store: TestStore;
  let prepares: string[];
  before(async () => {
    store = await createTestStore('sqlite');
    await store.db.schema.createTable('sc_items', (t) => {
      t.increments('n');
      t.string('key', 32).notNullable().unique();
      t.integer('value');
    });
    // Count prepares on every pooled connection from here on.
    prepares = [];
    const pool = store.db.client as unknown as {
      acquireConnection(): Promise<{ prepare: (sql: string, cb: unknown) => unknown }>;
      releaseConnection(c: unknown): Promise<void>;
    };
    const conns = await Promise.all([1, 2, 3, 4].map(() => pool.acquireConnection()));
    for (const conn of conns) {
      const prepare = conn.prepare.bind(conn);
      conn.prepare = (sql, cb) => {
        prepares.push(sql);
        return prepare(sql, cb);
      };
    }
    await Promise.all(conns.map((c) => pool.releaseConnection(c)));
  });
  after(async () => store.close());

  it('prepares a statement once per connection and returns what knex expects (rows, inserted id, changes)', async () => {
    prepares.length = 0;
    const ids: unknown[] = [];
    for (let i = 0; i < 20; i++) ids.push((await store.db('sc_items').insert({ key: `k${i}`, value: i }))[0]);
    expect(ids).to.deep.equal(Array.from({ length: 20 }, (_, i) => i + 1));
    let changed = 0;
    for (let i = 0; i < 20; i++)
      changed += await store
        .db('sc_items')
        .where({ key: `k${i}` })
        .update({ value: i * 10 });
    expect(changed).to.equal(20);
    expect(await store.db('sc_items').where({ key: 'nobody' }).update({ value: 1 })).to.equal(0);
    const rows = await store.db('sc_items').where('value', '>=', 150).orderBy('n').select('key', 'value');
    expect(rows).to.deep.equal([
      { key: 'k15', value: 150 },
      { key: 'k16', value: 160 },
      { key: 'k17', value: 170 },
      { key: 'k18', value: 180 },
      { key: 'k19', value: 190 },
    ]);
    const returned = await store.db('sc_items').where({ key: 'k3' }).update({ value: 33 }).returning(['key', 'value']);
    expect(returned).to.deep.equal([{ key: 'k3', value: 33 }]);
    expect(await store.db('sc_items').where({ key: 'k3' }).del()).to.equal(1);
    const inserts = prepares.filter((s) => s.startsWith('insert into `sc_items`'));
    // 20 inserts of one text over at most 4 connections.
    expect(inserts.length).to.be.within(1, 4);
    expect(
      prepares.filter((s) => s.startsWith('update `sc_items` set `value` = ? where `key` = ?')).length,
    ).to.be.within(1, 4);
  });

  it('a statement that fails is dropped and the next use prepares it again; the connection stays usable', async () => {
    await store.db('sc_items').insert({ key: 'dup', value: 1 });
    prepares.length = 0;
    const err = await store
      .db('sc_items')
      .insert({ key: 'dup', value: 2 })
      .then(
        () => undefined,
        (e: Error & { code?: string }) => e,
      );
    expect(err?.code).to.equal('SQLITE_CONSTRAINT');
    expect(err?.message).to.match(/UNIQUE constraint failed: sc_items.key/);
    await store.db('sc_items').insert({ key: 'dup2', value: 2 });
    expect(prepares.filter((s) => s.startsWith('insert into `sc_items`')).length).to.be.at.least(1);
    expect(await store.db('sc_items').whereIn('key', ['dup', 'dup2']).orderBy('key').pluck('value')).to.deep.equal([
      1, 2,
    ]);
  });

  it("a statement that cannot be prepared reports sqlite's own message, again on a second try", async () => {
    for (let i = 0; i < 2; i++) {
      const err = await store
        .db('no_such_table')
        .select('*')
        .then(
          () => undefined,
          (e: Error) => e,
        );
      expect(err?.message).to.match(/no such table: no_such_table/);
    }
    expect((await store.db('sc_items').count({ n: '*' }))[0]!.n).to.be.a('number');
  });

  it('more distinct statements than the cache keeps still run (the oldest are finalized)', async () => {
    for (let i = 0; i < 300; i++) {
      const [row] = (await store.db.raw(`select ? + ${i} as v`, [1])) as Array<{ v: number }>;
      expect(row!.v).to.equal(1 + i);
    }
    // And the earliest ones prepare again.
    expect(((await store.db.raw('select ? + 0 as v', [5])) as Array<{ v: number }>)[0]!.v).to.equal(5);
  });
});

describe('sqlite connections with prepared statements close', () => {
  it('the pool closes every connection (statements finalized first): nothing keeps the file open after destroy', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-sc-'));
    try {
      const db = openStore({ dataDir: dir });
      const failures: string[] = [];
      // tarn: destroyFail(eventId, resource, err)
      (
        db.client as unknown as {
          pool: { on(event: string, cb: (id: number, resource: unknown, err: Error) => void): void };
        }
      ).pool.on('destroyFail', (_id, _resource, err) => failures.push(err.message));
      await db.schema.createTable('t', (t) => t.integer('a'));
      await Promise.all(Array.from({ length: 20 }, (_, i) => db('t').insert({ a: i })));
      for (let i = 0; i < 200; i++) await db.raw(`select ${i} as v`);
      await db.destroy();
      expect(failures).to.deep.equal([]);
      // Leaving WAL mode needs the only connection to the file: it fails while another is open.
      const alone = new sqlite3.Database(path.join(dir, 'switchyard.sqlite'));
      try {
        const mode = await new Promise<string>((resolve, reject) =>
          alone.get('PRAGMA journal_mode = DELETE', (err: Error | null, row: { journal_mode: string }) =>
            err ? reject(err) : resolve(row.journal_mode),
          ),
        );
        expect(mode).to.equal('delete');
      } finally {
        await new Promise((resolve) => alone.close(resolve));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('write queue transaction on sqlite (boundTo)', () => {
  let store: TestStore;
  before(async () => {
    store = await createTestStore('sqlite');
    await store.db.schema.createTable('bt_items', (t) => {
      t.string('id', 32).primary();
      t.integer('value');
    });
  });
  after(async () => store.close());

  it('runs builders and raw queries inside the one transaction: a failure later in the batch rolls back what came before', async () => {
    const q = new WriteQueue(store.db);
    const err = await q
      .run(async (trx) => {
        await trx('bt_items').insert({ id: 'r1', value: 1 });
        await trx.raw('insert into bt_items (id, value) values (?, ?)', ['r2', 2]);
        // Seen inside the transaction.
        expect(await trx('bt_items').whereIn('id', ['r1', 'r2']).count({ n: '*' })).to.deep.equal([{ n: 2 }]);
        throw new Error('late failure');
      })
      .then(
        () => undefined,
        (e: Error) => e,
      );
    expect(err?.message).to.equal('late failure');
    expect(await store.db('bt_items').whereIn('id', ['r1', 'r2']).count({ n: '*' })).to.deep.equal([{ n: 0 }]);
    // The connection went back with no transaction open: the next batch commits.
    await q.run(async (trx) => trx('bt_items').insert({ id: 'r3', value: 3 }));
    expect(await store.db('bt_items').where({ id: 'r3' }).first()).to.deep.equal({ id: 'r3', value: 3 });
  });

  it('members a write-queue operation is not given throw instead of running outside the transaction', async () => {
    const trx = boundTo(store.db, {});
    expect(() => (trx as unknown as Knex).schema).to.throw(/trx.schema is not available/);
    expect(() => (trx as unknown as Knex).transaction).to.throw(/trx.transaction is not available/);
    expect(trx.client).to.equal(store.db.client);
  });
});
