/**
 * The relay's rewrite of runner → browser messages (src/browser/relay.ts): whatever makes a
 * context, a request context or a CDP browser context ends up on the guarded proxy; other
 * messages pass unchanged.
 */
import { expect } from 'chai';
import { guardMessage } from '../../../src/browser/relay.js';

const PROXY = 'http://127.0.0.1:3128';

describe('browser relay: guardMessage', () => {
  it('forces the guarded proxy on contexts and request contexts, with or without a proxy of their own', () => {
    for (const method of ['newContext', 'newPersistentContext', 'newContextForReuse', 'newRequest']) {
      const plain = guardMessage({ id: 1, guid: 'browser@1', method, params: { viewport: { width: 1, height: 1 } } }, PROXY);
      expect(plain.params, method).to.deep.equal({ viewport: { width: 1, height: 1 }, proxy: { server: PROXY } });
      const own = guardMessage({ id: 2, guid: 'browser@1', method, params: { proxy: { server: 'http://evil:1', bypass: '*' } } }, PROXY);
      expect(own.params, method).to.deep.equal({ proxy: { server: PROXY } });
    }
    const any = guardMessage({ id: 3, guid: 'x@1', method: 'somethingNew', params: { proxy: { server: 'direct://' } } }, PROXY);
    expect(any.params).to.deep.equal({ proxy: { server: PROXY } });
  });

  it('puts CDP-made browser contexts on the guarded proxy', () => {
    const msg = guardMessage({ id: 4, guid: 'cdp-session@1', method: 'send', params: { method: 'Target.createBrowserContext', params: { proxyServer: 'direct://', proxyBypassList: '*' } } }, PROXY);
    expect(msg.params).to.deep.equal({ method: 'Target.createBrowserContext', params: { proxyServer: PROXY, proxyBypassList: '<-loopback>' } });
    const bare = guardMessage({ id: 5, guid: 'cdp-session@1', method: 'send', params: { method: 'Target.createBrowserContext' } }, PROXY);
    expect(bare.params).to.deep.equal({ method: 'Target.createBrowserContext', params: { proxyServer: PROXY, proxyBypassList: '<-loopback>' } });
  });

  it('leaves every other message as it is', () => {
    const goto = { id: 6, guid: 'frame@1', method: 'goto', params: { url: 'https://example.com' } };
    expect(guardMessage(goto, PROXY)).to.equal(goto);
    const cdp = { id: 7, guid: 'cdp-session@1', method: 'send', params: { method: 'Page.navigate', params: { url: 'x' } } };
    expect(guardMessage(cdp, PROXY)).to.equal(cdp);
    const noParams = { id: 8, guid: 'x@1', method: 'close' };
    expect(guardMessage(noParams, PROXY)).to.equal(noParams);
  });
});
