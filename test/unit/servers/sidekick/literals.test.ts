// Values in a request (literals.ts): taken out of its words, the word for their kind in their place.
import { expect } from 'chai';
import { literals } from '../../../../src/servers/sidekick/literals.js';
import { analyze } from '../../../../src/servers/sidekick/search.js';
import { stem } from '../../../../src/servers/sidekick/text.js';

const kinds = (request: string): string[] => literals(request).kinds;
const words = (request: string): string[] => literals(request).rest.split(/\s+/).filter(Boolean);

describe('svc-sidekick values in a request', () => {
  it('reads file names by their media-type extension, and leaves host names and expressions alone', () => {
    expect(literals('rename draft.md to final.md')).to.deep.equal({ rest: 'rename   to  ', kinds: ['file'] });
    expect(kinds('attach Q3-report.pdf and data/sales_2024.csv')).to.deep.equal(['file']);
    expect(words('attach Q3-report.pdf and data/sales_2024.csv')).to.deep.equal(['attach', 'and', 'data/']);
    // Host names keep their words: they often name the product.
    expect(literals('ping Lena on monday.com')).to.deep.equal({ rest: 'ping Lena on monday.com', kinds: [] });
    expect(kinds('open example.org in the browser')).to.deep.equal([]);
    // Not an extension of any media type.
    expect(kinds('run document.title in the tab')).to.deep.equal([]);
    expect(kinds('look at the end of the sentence.')).to.deep.equal([]);
  });

  it('reads URLs (with a scheme, or a host with a path), e-mail addresses, IP addresses, versions and channels', () => {
    expect(literals('fetch https://example.com/a?b=1 now')).to.deep.equal({ rest: 'fetch   now', kinds: ['url'] });
    expect(literals('what does youtu.be/dQw4w9WgXcQ say')).to.deep.equal({ rest: 'what does   say', kinds: ['url'] });
    expect(literals('send it to ana.lopez+ops@acme.co.uk')).to.deep.equal({ rest: 'send it to  ', kinds: ['email'] });
    expect(literals('unblock 10.0.0.12:8080 today')).to.deep.equal({ rest: 'unblock   today', kinds: ['ip address'] });
    expect(literals('tag this as v3.1.0-rc.1')).to.deep.equal({ rest: 'tag this as  ', kinds: ['version'] });
    expect(literals('let #eng-alerts know')).to.deep.equal({ rest: 'let   know', kinds: ['channel'] });
  });

  it('reads issue keys: a project key in capitals, a dash and a number', () => {
    expect(literals('hand ENG-77 to jamal')).to.deep.equal({ rest: 'hand   to jamal', kinds: ['issue'] });
    expect(literals('ENG-90 waits for ENG-88')).to.deep.equal({ rest: '  waits for  ', kinds: ['issue'] });
    expect(kinds('close PAYMENTS-3F in sentry')).to.deep.equal(['issue']);
    for (const request of ['an e-2 visa', 'the covid-19 report', 'a Wi-Fi network', 'X-1', 're-run job 12']) {
      expect(literals(request), request).to.deep.equal({ rest: request, kinds: [] });
    }
  });

  it('leaves numbers and plain words alone: "#482" is a number, "1.5" a quantity', () => {
    for (const request of ['is PR #482 green?', 'raise the limit to 1.5 GB', 'send a slack message', '']) {
      expect(literals(request), request).to.deep.equal({ rest: request, kinds: [] });
    }
  });

  it("puts the kind among the request's words, once, in place of the value's words", () => {
    const q = analyze('copy draft.md and notes.txt into the #docs channel');
    const groups = q.groups.map((g) => g.terms);
    expect(groups).to.deep.include([stem('file')]);
    expect(groups.filter((g) => g.includes(stem('channel')))).to.have.length(2);
    expect([...q.original]).to.not.include.members([stem('draft'), 'md', stem('notes'), 'txt', 'docs']);
  });

  it('finishes quickly on hostile input (no catastrophic backtracking)', () => {
    const started = performance.now();
    literals(
      `${'a.'.repeat(20_000)}@ ${'#a-'.repeat(20_000)} ${'1.'.repeat(20_000)} ${'AB-1'.repeat(20_000)} ${'a-'.repeat(20_000)}.`,
    );
    expect(performance.now() - started).to.be.below(2_000);
  });
});
