import { expect } from 'chai';
import { createConnection, parseStatuses } from '../../../src/connections/index.js';
import { connectionHandlers } from '../../../src/connections/handlers/index.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { call, context, ORG_A, ORG_B, request, seedOrgs, testConfig } from '../engine/fixtures.js';

const kinds = await storeKinds();

describe('statuses parameter (spec section 10)', () => {
  const rejects = (raw: unknown) => {
    try {
      parseStatuses(raw);
    } catch (e) {
      const err = e as { code: string; status: number; details: unknown };
      expect({ code: err.code, status: err.status }).to.deep.equal({ code: 'invalid_statuses', status: 400 });
      return err.details as { path: string; message: string }[];
    }
    throw new Error(`statuses ${JSON.stringify(raw)} was accepted`);
  };

  it('defaults to every status', () => {
    expect(parseStatuses(undefined)).to.deep.equal(['connected', 'error', 'disconnected']);
  });

  it('accepts a comma-separated subset in the given order (spaces around items ignored)', () => {
    expect(parseStatuses('connected')).to.deep.equal(['connected']);
    expect(parseStatuses('error,connected')).to.deep.equal(['error', 'connected']);
    expect(parseStatuses('connected, error ,disconnected')).to.deep.equal(['connected', 'error', 'disconnected']);
    expect(parseStatuses(['error', 'disconnected'])).to.deep.equal(['error', 'disconnected']);
  });

  it('rejects empty values and empty items', () => {
    expect(rejects('')[0]).to.deep.equal({ path: 'statuses', message: 'empty value' });
    rejects('   ');
    rejects([]);
    expect(rejects('connected,')[0]!.message).to.equal('empty item');
    rejects(',error');
  });

  it('rejects unknown values (case-sensitive) and duplicates', () => {
    expect(rejects('active')[0]!.message).to.equal('unknown value: active');
    rejects('Connected');
    rejects('connected,active');
    expect(rejects('error,error')[0]!.message).to.equal('duplicate value: error');
    rejects(['connected', 'connected']);
  });
});

for (const kind of kinds) {
  describe(`listUserConnections handler (${kind})`, () => {
    let store: TestStore;
    const config = testConfig();
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
      await createConnection(store.db, ORG_A, { name: 'b-conn', service_key: 'gmail', secret: 'top-secret-1' }, config);
      await createConnection(
        store.db,
        ORG_A,
        { name: 'a-conn', service_key: 'slack', status: 'error', secret: 'top-secret-2' },
        config,
      );
      await createConnection(store.db, ORG_B, { name: 'org-b', service_key: 'gmail', secret: 's' }, config);
    });
    afterEach(async () => store.close());

    const run = (orgId: string, query: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
      call(
        'listUserConnections',
        connectionHandlers.listUserConnections,
        request({ query, headers }),
        context(store.db, orgId, config),
      );

    it('returns a bare array of {id, name, service_key, status} of the token organisation', async () => {
      const r = await run(ORG_A);
      expect(r.status).to.equal(200);
      const body = r.body as Record<string, unknown>[];
      expect(body).to.be.an('array').with.length(2);
      expect(body.map((c) => c.name)).to.deep.equal(['a-conn', 'b-conn']);
      for (const c of body) expect(Object.keys(c).sort()).to.deep.equal(['id', 'name', 'service_key', 'status']);
      expect(JSON.stringify(body)).to.not.include('top-secret');
    });

    it('filters by statuses and rejects invalid lists with 400 invalid_statuses', async () => {
      expect(((await run(ORG_A, { statuses: 'error' })).body as { name: string }[]).map((c) => c.name)).to.deep.equal([
        'a-conn',
      ]);
      expect(
        ((await run(ORG_A, { statuses: ['connected'] })).body as { name: string }[]).map((c) => c.name),
      ).to.deep.equal(['b-conn']);
      expect((await run(ORG_A, { statuses: 'disconnected' })).body).to.deep.equal([]);
      for (const bad of ['', 'active', 'error,error', 'connected,']) {
        const r = await run(ORG_A, { statuses: bad });
        expect(r.status, bad).to.equal(400);
        expect((r.body as { error: string }).error).to.equal('invalid_statuses');
      }
    });

    it('checks X-Selected-Org against the token organisation', async () => {
      expect((await run(ORG_A, {}, { 'x-selected-org': ORG_A })).status).to.equal(200);
      const r = await run(ORG_A, {}, { 'x-selected-org': ORG_B });
      expect(r.status).to.equal(403);
      expect((r.body as { error: string }).error).to.equal('org_mismatch');
      expect(((await run(ORG_B)).body as { name: string }[]).map((c) => c.name)).to.deep.equal(['org-b']);
    });
  });
}
