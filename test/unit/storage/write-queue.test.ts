/**
 * The write queue (src/storage/write-queue.ts) on both stores: concurrent operations share a
 * transaction, rows handed to insertLater are inserted before that commit, and an operation
 * that fails takes only its own rows (deferred ones included) down with it. Groups (joinLater)
 * run once per batch for all the operations that joined them.
 */
import { expect } from 'chai';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { WriteQueue, type BatchGroup } from '../../../src/storage/write-queue.js';

const kinds = await storeKinds();

for (const kind of kinds) {
  describe(`write queue (${kind})`, () => {
    let store: TestStore;
    before(async () => {
      store = await createTestStore(kind);
      await store.db.schema.createTable('wq_items', (t) => {
        t.string('id', 32).primary();
      });
      await store.db.schema.createTable('wq_log', (t) => {
        t.string('id', 32).primary();
        t.string('item_id', 32).notNullable();
      });
    });
    after(async () => store.close());

    it('commits concurrent operations together with the rows they deferred', async () => {
      const q = new WriteQueue(store.db);
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          q.run(async (trx, batch) => {
            await trx('wq_items').insert({ id: `a${i}` });
            batch.insertLater('wq_log', [
              { id: `a${i}-1`, item_id: `a${i}` },
              { id: `a${i}-2`, item_id: `a${i}` },
            ]);
            return i;
          }),
        ),
      );
      expect(results).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(Number((await store.db('wq_log').where('item_id', 'like', 'a%').count({ n: '*' }))[0]!.n)).to.equal(20);
    });

    it('a failing operation, or a deferred row that breaks a constraint, fails alone and leaves nothing behind', async () => {
      const q = new WriteQueue(store.db);
      await store.db('wq_log').insert({ id: 'taken', item_id: 'x' });
      const outcomes = await Promise.allSettled([
        q.run(async (trx, batch) => {
          await trx('wq_items').insert({ id: 'b1' });
          batch.insertLater('wq_log', [{ id: 'b1-1', item_id: 'b1' }]);
        }),
        q.run(async (trx, batch) => {
          await trx('wq_items').insert({ id: 'b2' });
          batch.insertLater('wq_log', [{ id: 'b2-1', item_id: 'b2' }]);
          throw new Error('boom');
        }),
        q.run(async (trx, batch) => {
          await trx('wq_items').insert({ id: 'b3' });
          batch.insertLater('wq_log', [{ id: 'taken', item_id: 'b3' }]);
        }),
        q.run(async (trx, batch) => {
          await trx('wq_items').insert({ id: 'b4' });
          batch.insertLater('wq_log', [{ id: 'b4-1', item_id: 'b4' }]);
        }),
      ]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
      expect((await store.db('wq_items').where('id', 'like', 'b%').orderBy('id')).map((r) => r.id)).to.deep.equal([
        'b1',
        'b4',
      ]);
      expect((await store.db('wq_log').where('item_id', 'like', 'b%').orderBy('id')).map((r) => r.id)).to.deep.equal([
        'b1-1',
        'b4-1',
      ]);
    });

    it('a group runs once per batch for every operation that joined it, each gets its own result, and a failing group is retried one operation at a time', async () => {
      const q = new WriteQueue(store.db);
      const flushes: string[][] = [];
      // Inserts every item in one statement, answers each item's length, and fails on 'bad'.
      const group: BatchGroup<string, number> = {
        async flush(trx, items, batch) {
          flushes.push([...items]);
          if (items.includes('bad')) throw new Error('bad item');
          await trx('wq_items').insert(items.map((id) => ({ id })));
          batch.insertLater(
            'wq_log',
            items.map((id) => ({ id: `${id}-log`, item_id: id })),
          );
          return items.map((id) => id.length);
        },
      };
      const join = (id: string) => q.run(async (_trx, batch) => batch.joinLater(group, id));
      expect(await Promise.all([join('g1'), join('g22'), join('g333')])).to.deep.equal([2, 3, 4]);
      expect(flushes, 'one flush for the three').to.deep.equal([['g1', 'g22', 'g333']]);
      expect((await store.db('wq_log').where('item_id', 'like', 'g%').orderBy('id')).map((r) => r.id)).to.deep.equal([
        'g1-log',
        'g22-log',
        'g333-log',
      ]);

      flushes.length = 0;
      const outcomes = await Promise.allSettled([join('h1'), join('bad'), join('h22')]);
      expect(outcomes.map((o) => o.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
      expect((outcomes[2] as PromiseFulfilledResult<number>).value).to.equal(3);
      expect(flushes, 'the batch, then each operation alone').to.deep.equal([
        ['h1', 'bad', 'h22'],
        ['h1'],
        ['bad'],
        ['h22'],
      ]);
      expect((await store.db('wq_items').where('id', 'like', 'h%').orderBy('id')).map((r) => r.id)).to.deep.equal([
        'h1',
        'h22',
      ]);
    });
  });
}
