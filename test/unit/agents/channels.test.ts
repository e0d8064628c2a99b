/** Agent API channel records (src/agents/channels.ts) on a real store: keys, ETags, org scoping, the channel-call lookup. */
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { createAgent, deleteAgent } from '../../../src/agents/agents.js';
import {
  CHANNEL_ID_PATTERN,
  channelEtag,
  channelView,
  createChannel,
  deleteChannel,
  getChannel,
  isChannelId,
  listChannels,
  requireChannel,
  rotateChannelKey,
  updateChannel,
  verifyChannelKey,
} from '../../../src/agents/channels.js';
import { createTestStore, storeKinds, type TestStore } from '../../helpers/store.js';
import { expectAppError, ORG_A, ORG_B, seedOrgs } from '../engine/fixtures.js';

const kinds = await storeKinds();
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

for (const kind of kinds) {
  describe(`agent API channels (${kind})`, () => {
    let store: TestStore;
    let agentId: string;
    beforeEach(async () => {
      store = await createTestStore(kind);
      await seedOrgs(store.db);
      agentId = (await createAgent(store.db, ORG_A, { name: 'Helper', instructions: 'Help.' })).agentId;
    });
    afterEach(async () => store.close());

    it('creates a channel with defaults; the key is returned once and stored as SHA-256 with a 4-character hint', async () => {
      const { channel, apiKey } = await createChannel(store.db, ORG_A, { agentId });
      expect(channel.triggerId).to.match(CHANNEL_ID_PATTERN);
      expect(isChannelId(channel.triggerId)).to.equal(true);
      expect(isChannelId('trg_0193' + '0'.repeat(28))).to.equal(false);
      expect(apiKey).to.match(/^syc_[0-9A-Za-z]{40}$/);
      expect(channel).to.deep.include({
        orgId: ORG_A,
        agentId,
        name: 'API channel',
        outputFormat: 'text',
        enabled: true,
        keyHint: apiKey.slice(-4),
      });
      const row = await store.db('agent_channels').where({ id: channel.triggerId }).first();
      expect(row.key_hash).to.equal(sha256(apiKey));
      expect(JSON.stringify(row)).to.not.include(apiKey);
      expect(await getChannel(store.db, ORG_A, channel.triggerId)).to.deep.equal(channel);
      expect(channelView('http://h:1/', channel))
        .to.deep.include({ url: `http://h:1/ext/triggers/${channel.triggerId}` })
        .and.not.have.property('orgId');
    });

    it('refuses an agent of another organisation (404) and a bad outputFormat (400)', async () => {
      await expectAppError(createChannel(store.db, ORG_B, { agentId }), 'not_found', 404);
      await expectAppError(createChannel(store.db, ORG_A, { agentId: 'agt_missing' }), 'not_found', 404);
      await expectAppError(
        createChannel(store.db, ORG_A, { agentId, outputFormat: 'html' as never }),
        'invalid_request',
        400,
      );
      await expectAppError(createChannel(store.db, ORG_A, { agentId, name: '  ' }), 'invalid_request', 400);
    });

    it('verifyChannelKey: right key → the channel; wrong key, unknown or malformed id → undefined; disabled → enabled false', async () => {
      const { channel, apiKey } = await createChannel(store.db, ORG_A, { agentId, outputFormat: 'json' });
      expect(await verifyChannelKey(store.db, channel.triggerId, apiKey)).to.deep.equal(channel);
      expect(await verifyChannelKey(store.db, channel.triggerId, `${apiKey}x`)).to.equal(undefined);
      expect(await verifyChannelKey(store.db, channel.triggerId, '')).to.equal(undefined);
      expect(await verifyChannelKey(store.db, channel.triggerId, 'x'.repeat(10_000))).to.equal(undefined);
      expect(await verifyChannelKey(store.db, `chn_${'0'.repeat(32)}`, apiKey)).to.equal(undefined);
      expect(await verifyChannelKey(store.db, 'not-an-id', apiKey)).to.equal(undefined);
      const other = await createChannel(store.db, ORG_A, { agentId });
      expect(
        await verifyChannelKey(store.db, other.channel.triggerId, apiKey),
        "one channel's key opens no other channel",
      ).to.equal(undefined);
      await updateChannel(store.db, ORG_A, channel.triggerId, {
        expectedEtag: channelEtag(channel),
        patch: { enabled: false },
      });
      expect(await verifyChannelKey(store.db, channel.triggerId, apiKey)).to.deep.include({ enabled: false });
    });

    it('rotateChannelKey is one UPDATE: the old key fails at once, the new one works, hint and ETag move', async () => {
      const { channel, apiKey } = await createChannel(store.db, ORG_A, { agentId });
      const statements: string[] = [];
      const onQuery = (q: { sql: string }) => statements.push(q.sql);
      store.db.on('query', onQuery);
      const rotated = await rotateChannelKey(store.db, ORG_A, channel.triggerId);
      store.db.off('query', onQuery);
      expect(statements.filter((s) => /^update/i.test(s.trim()))).to.have.length(1);
      expect(statements.filter((s) => /^update/i.test(s.trim()))[0]).to.match(/key_hash/);
      expect(rotated).to.deep.include({ triggerId: channel.triggerId, keyHint: rotated.apiKey.slice(-4) });
      expect(rotated.apiKey).to.not.equal(apiKey);
      expect(await verifyChannelKey(store.db, channel.triggerId, apiKey)).to.equal(undefined);
      const now = await verifyChannelKey(store.db, channel.triggerId, rotated.apiKey);
      expect(now).to.deep.include({ keyHint: rotated.keyHint, updatedAt: rotated.rotatedAt });
      expect(channelEtag(now!)).to.be.greaterThan(channelEtag(channel));
      expect((await store.db('agent_channels').where({ id: channel.triggerId }).first()).key_hash).to.equal(
        sha256(rotated.apiKey),
      );
      await expectAppError(rotateChannelKey(store.db, ORG_B, channel.triggerId), 'not_found', 404);
    });

    it('updateChannel is conditional on the ETag; every change moves it, even within one millisecond', async () => {
      const { channel } = await createChannel(store.db, ORG_A, { agentId });
      let tag = channelEtag(channel);
      const seen = new Set([tag]);
      for (const name of ['a', 'b', 'c', 'd']) {
        const next = await updateChannel(store.db, ORG_A, channel.triggerId, { expectedEtag: tag, patch: { name } });
        expect(next.name).to.equal(name);
        tag = channelEtag(next);
        seen.add(tag);
      }
      expect(seen.size, 'five distinct tags').to.equal(5);
      const stale = await expectAppError(
        updateChannel(store.db, ORG_A, channel.triggerId, {
          expectedEtag: channelEtag(channel),
          patch: { enabled: false },
        }),
        'version_conflict',
        412,
      );
      expect(stale.details).to.deep.equal({ currentVersion: tag });
      await expectAppError(
        updateChannel(store.db, ORG_B, channel.triggerId, { expectedEtag: tag, patch: { enabled: false } }),
        'not_found',
        404,
      );
      await expectAppError(
        updateChannel(store.db, ORG_A, channel.triggerId, { expectedEtag: tag, patch: {} }),
        'invalid_request',
        400,
      );
      const off = await updateChannel(store.db, ORG_A, channel.triggerId, {
        expectedEtag: tag,
        patch: {
          enabled: false,
          outputFormat: 'markdown',
        },
      });
      expect(off).to.deep.include({ enabled: false, outputFormat: 'markdown', name: 'd' });
    });

    it('lists by organisation and agent, one page at a time', async () => {
      const second = (await createAgent(store.db, ORG_A, { name: 'Second', instructions: 'x' })).agentId;
      const a1 = (await createChannel(store.db, ORG_A, { agentId })).channel;
      const a2 = (await createChannel(store.db, ORG_A, { agentId: second })).channel;
      const a3 = (await createChannel(store.db, ORG_A, { agentId })).channel;
      const first = await listChannels(store.db, ORG_A, {}, { limit: 2 });
      expect(first.items.map((c) => c.triggerId)).to.deep.equal([a1.triggerId, a2.triggerId]);
      const rest = await listChannels(store.db, ORG_A, {}, { limit: 2, cursor: first.nextCursor! });
      expect(rest).to.deep.equal({ items: [a3], nextCursor: null });
      expect((await listChannels(store.db, ORG_A, { agentId })).items.map((c) => c.triggerId)).to.deep.equal([
        a1.triggerId,
        a3.triggerId,
      ]);
      expect(await listChannels(store.db, ORG_B)).to.deep.equal({ items: [], nextCursor: null });
      const foreignCursor = Buffer.from(JSON.stringify({ l: 'agents', a: agentId })).toString('base64url');
      await expectAppError(listChannels(store.db, ORG_A, {}, { cursor: foreignCursor }), 'invalid_cursor', 400);
    });

    it('deletes with an optional ETag; a deleted channel and the channels of a deleted agent no longer verify', async () => {
      const { channel, apiKey } = await createChannel(store.db, ORG_A, { agentId });
      await expectAppError(
        deleteChannel(store.db, ORG_A, channel.triggerId, channelEtag(channel) - 1),
        'version_conflict',
        412,
      );
      await expectAppError(
        deleteChannel(store.db, ORG_A, channel.triggerId, 9_999_999_999_999_999),
        'version_conflict',
        412,
      );
      await expectAppError(deleteChannel(store.db, ORG_B, channel.triggerId), 'not_found', 404);
      await deleteChannel(store.db, ORG_A, channel.triggerId, channelEtag(channel));
      expect(await verifyChannelKey(store.db, channel.triggerId, apiKey)).to.equal(undefined);
      await expectAppError(requireChannel(store.db, ORG_A, channel.triggerId), 'not_found', 404);
      await expectAppError(deleteChannel(store.db, ORG_A, channel.triggerId), 'not_found', 404);

      const kept = await createChannel(store.db, ORG_A, { agentId });
      expect(await deleteAgent(store.db, ORG_A, agentId)).to.equal(true);
      expect(await store.db('agent_channels').where({ agent_id: agentId })).to.deep.equal([]);
      expect(await verifyChannelKey(store.db, kept.channel.triggerId, kept.apiKey)).to.equal(undefined);
    });
  });
}
