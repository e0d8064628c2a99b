/**
 * The guarded proxy (src/browser/proxy.ts) serves every organisation's browsers and cannot tell
 * them apart, so it keeps no connection to an origin between plain-HTTP requests (README
 * "Caches"): one browser's request never travels on a connection another browser's request
 * opened (whose saved handshake would show, by timing, that someone loaded that origin lately).
 */
import http from 'node:http';
import { expect } from 'chai';
import { GuardedProxy } from '../../../src/browser/proxy.js';
import { OutboundPolicy, parseOutboundAllowlist } from '../../../src/kernel/outbound.js';
import { recorder } from '../../helpers/connection-recorder.js';

/** A plain-HTTP GET through the proxy, on a client connection of its own (as another browser's). */
function getThrough(proxyPort: number, url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(
        { host: '127.0.0.1', port: proxyPort, path: url, headers: { host: new URL(url).host }, agent: false },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve(body));
        },
      )
      .on('error', reject);
  });
}

describe('browser network: the guarded proxy keeps no connection between requests', () => {
  it('each plain-HTTP request reaches the origin on a connection of its own', async () => {
    const target = await recorder();
    const proxy = new GuardedProxy(new OutboundPolicy(parseOutboundAllowlist('127.0.0.0/8'), []));
    const port = Number(new URL(await proxy.start()).port);
    try {
      for (const org of ['a', 'b', 'a']) expect(await getThrough(port, `${target.url}?org=${org}`)).to.equal('ok');
      expect(target.carried.map((orgs) => [...orgs])).to.deep.equal([['a'], ['b'], ['a']]);
    } finally {
      await proxy.close();
      await target.close();
    }
  });
});
