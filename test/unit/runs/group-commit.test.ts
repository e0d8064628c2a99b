/**
 * Group commit of run creation (bench/triggers.ts): trigger calls arriving together share one
 * INSERT statement, through the store's write queue; each caller's promise settles only after
 * its row is committed; one bad row fails only its own caller. A run is accepted as its run row
 * alone: step rows are written when a worker starts it. On sqlite new runs share the queue (and
 * so the transactions) of the other writers of the store.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createOrganization } from '../../../src/auth/index.js';
import { GroupCommitter } from '../../../src/runs/group-commit.js';
import { WriteQueue } from '../../../src/storage/write-queue.js';
import { insertRuns, runRows, type RunRows } from '../../../src/runs/runs.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { logSql } from './write-path-helpers.js';

const verb = (s: string) => s.split(' ')[0]!;

const kinds = await storeKinds();

interface QueryEvent {
  sql: string;
}

for (const kind of kinds) {
  describe(`group commit of runs (${kind})`, () => {
    let store: TestStore;
    let db: Knex;
    let orgId: string;
    /** INSERT statements into `runs` since the last reset. */
    let runInserts: number;
    const onQuery = (q: QueryEvent) => {
      if (/^insert into [`"]runs[`"]/i.test(q.sql)) runInserts += 1;
    };

    beforeEach(async () => {
      store = await createTestStore(kind);
      db = store.db;
      orgId = (await createOrganization(db, { name: 'Group commit org' })).id;
      runInserts = 0;
      db.on('query', onQuery);
    });
    afterEach(async () => {
      db.off('query', onQuery);
      await store.close();
    });

    const rowsFor = (i: number, id?: string): RunRows =>
      runRows(
        {
          orgId,
          automationId: 'wf_test',
          automationVersion: 1,
          triggerId: 'trg_test',
          inputs: { i },
          startedBy: 'api_trigger',
          timeoutMs: 60_000,
        },
        id,
      );

    /** Reads the run and its steps the moment the caller's promise resolves (another pool connection). */
    async function readBack(id: string): Promise<{ run: Record<string, unknown> | undefined; steps: number }> {
      const run = (await db('runs').where({ id }).first()) as Record<string, unknown> | undefined;
      const steps = Number(
        ((await db('run_steps').where({ run_id: id }).count({ n: '*' })) as { n: number | string }[])[0]!.n,
      );
      return { run, steps };
    }

    it('50 concurrent add() calls share one INSERT statement, and each resolves only once its row is readable', async () => {
      const gc = new GroupCommitter(WriteQueue.for(db));
      const batch = Array.from({ length: 50 }, (_, i) => rowsFor(i));
      const seen = await Promise.all(batch.map((rows) => gc.add(rows).then(() => readBack(rows.run.id as string))));
      expect(runInserts, 'INSERT statements into runs').to.equal(1);
      seen.forEach((s, i) => {
        expect(s.run, `run ${i} readable when its promise resolved`).to.not.equal(undefined);
        expect(s.run).to.include({ status: 'PENDING', inputs: JSON.stringify({ i }), org_id: orgId });
        expect(s.steps, 'no step rows until a worker starts the run').to.equal(0);
      });
      expect(Number(((await db('runs').count({ n: '*' })) as { n: number | string }[])[0]!.n)).to.equal(50);
    });

    it('calls that arrive while a batch commits form the next batch (few transactions, none lost)', async () => {
      const gc = new GroupCommitter(WriteQueue.for(db));
      const all: Promise<{ run: Record<string, unknown> | undefined; steps: number }>[] = [];
      // Four waves of 25 a few milliseconds apart: later waves pile up behind the first commit.
      for (let wave = 0; wave < 4; wave++) {
        for (let i = 0; i < 25; i++) {
          const rows = rowsFor(wave * 25 + i);
          all.push(gc.add(rows).then(() => readBack(rows.run.id as string)));
        }
        await new Promise((r) => setTimeout(r, 2));
      }
      const seen = await Promise.all(all);
      expect(seen.every((s) => s.run !== undefined)).to.equal(true);
      expect(runInserts).to.be.within(1, 4);
    });

    it('splits more than maxBatch pending calls into maxBatch-sized statements', async () => {
      const gc = new GroupCommitter(new WriteQueue(db, 10));
      await Promise.all(Array.from({ length: 25 }, (_, i) => gc.add(rowsFor(i))));
      expect(runInserts).to.equal(3);
      expect(Number(((await db('runs').count({ n: '*' })) as { n: number | string }[])[0]!.n)).to.equal(25);
    });

    it('a duplicate run id rejects only its own promise; the rest of the batch is committed', async () => {
      const existing = rowsFor(-1);
      await insertRuns(db, [existing]);
      const existingId = existing.run.id as string;

      const gc = new GroupCommitter(WriteQueue.for(db));
      const good = Array.from({ length: 9 }, (_, i) => rowsFor(i));
      const dup = rowsFor(100, existingId);
      const all = [...good.slice(0, 4), dup, ...good.slice(4)];
      const results = await Promise.allSettled(
        all.map((rows) => gc.add(rows).then(() => readBack(rows.run.id as string))),
      );

      const rejected = results.filter((r) => r.status === 'rejected');
      expect(rejected).to.have.length(1);
      expect(results[4]!.status, 'the duplicate').to.equal('rejected');
      expect(String((results[4] as PromiseRejectedResult).reason)).to.match(/unique|duplicate|constraint/i);
      results.forEach((r, i) => {
        if (i === 4) return;
        expect(r.status, `call ${i}`).to.equal('fulfilled');
        const v = (r as PromiseFulfilledResult<{ run: Record<string, unknown> | undefined; steps: number }>).value;
        expect(v.run).to.not.equal(undefined);
      });
      // The existing run is untouched.
      const ex = await readBack(existingId);
      expect(ex.run).to.include({ inputs: JSON.stringify({ i: -1 }) });
      expect(Number(((await db('runs').count({ n: '*' })) as { n: number | string }[])[0]!.n)).to.equal(10);
    });

    it('two calls with the same new run id in one batch: the first is committed, the second rejected', async () => {
      const gc = new GroupCommitter(WriteQueue.for(db));
      const first = rowsFor(1);
      const second = rowsFor(2, first.run.id as string);
      const other = rowsFor(3);
      const [a, b, c] = await Promise.allSettled([gc.add(first), gc.add(second), gc.add(other)]);
      expect([a.status, b.status, c.status]).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
      expect((await readBack(first.run.id as string)).run).to.include({ inputs: JSON.stringify({ i: 1 }) });
      expect((await readBack(other.run.id as string)).run).to.not.equal(undefined);
    });

    it('a call alone is one INSERT without BEGIN/COMMIT', async () => {
      const sql = logSql(db);
      try {
        const rows = rowsFor(1);
        await new GroupCommitter(WriteQueue.for(db)).add(rows);
        expect(sql.statements.map(verb)).to.deep.equal(['insert']);
        expect((await readBack(rows.run.id as string)).run).to.include({ status: 'PENDING' });
      } finally {
        sql.stop();
      }
    });

    it(
      kind === 'sqlite'
        ? 'on sqlite, new runs share a transaction with the other writes of the store'
        : 'on PostgreSQL, each writer has a queue of its own',
      async () => {
        const queue = WriteQueue.for(db);
        expect(queue === WriteQueue.for(db), 'one queue per store').to.equal(kind === 'sqlite');
        const sql = logSql(db);
        try {
          const rows = rowsFor(1);
          // Another writer's operation (here: an organisation rename) queued beside the new run.
          const other = queue.run((trx) => trx('organizations').where({ id: orgId }).update({ name: 'Renamed' }));
          await Promise.all([new GroupCommitter(WriteQueue.for(db)).add(rows), other]);
          const statements = sql.statements.map(verb);
          if (kind === 'sqlite') expect(statements).to.deep.equal(['begin', 'update', 'insert', 'commit']);
          else expect(statements.filter((s) => s === 'insert')).to.have.length(1);
          expect((await readBack(rows.run.id as string)).run).to.include({ status: 'PENDING' });
        } finally {
          sql.stop();
        }
      },
    );

    it('keeps working after a failed batch (the next calls are committed)', async () => {
      const gc = new GroupCommitter(WriteQueue.for(db));
      const a = rowsFor(1);
      await gc.add(a);
      await gc.add(rowsFor(2, a.run.id as string)).then(
        () => expect.fail('the duplicate must be rejected'),
        () => undefined,
      );
      const later = rowsFor(3);
      await gc.add(later);
      expect((await readBack(later.run.id as string)).run).to.not.equal(undefined);
    });
  });
}
