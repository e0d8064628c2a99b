/**
 * The write queue (src/storage/write-queue.ts) on both stores: concurrent operations share a
 * transaction, rows handed to insertLater are inserted before that commit, and an operation
 * that fails takes only its own rows (deferred ones included) down with it.
 */
import { expect } from 'chai';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { WriteQueue } from '../../../src/storage/write-queue.js';

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
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => q.run(async (trx, batch) => {
        await trx('wq_items').insert({ id: `a${i}` });
        batch.insertLater('wq_log', [{ id: `a${i}-1`, item_id: `a${i}` }, { id: `a${i}-2`, item_id: `a${i}` }]);
        return i;
      })));
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
      expect((await store.db('wq_items').where('id', 'like', 'b%').orderBy('id')).map((r) => r.id)).to.deep.equal(['b1', 'b4']);
      expect((await store.db('wq_log').where('item_id', 'like', 'b%').orderBy('id')).map((r) => r.id)).to.deep.equal(['b1-1', 'b4-1']);
    });
  });
}
