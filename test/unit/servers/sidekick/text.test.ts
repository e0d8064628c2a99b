// Text pipeline of the discovery index: tokenizer, stemmer, stop words, aliases.
import { expect } from 'chai';
import { related } from '../../../../src/servers/sidekick/lexicon.js';
import { stem, terms, tokenize } from '../../../../src/servers/sidekick/text.js';

describe('svc-sidekick text pipeline', () => {
  it('splits snake_case, kebab-case, tool-name prefixes and camelCase (keeping the whole word)', () => {
    expect(tokenize('agent-management_agent_create')).to.deep.equal(['agent', 'management', 'agent', 'create']);
    expect(tokenize('listServers')).to.deep.equal(['listservers', 'list', 'servers']);
    expect(tokenize('HubSpot CRM')).to.deep.equal(['hubspot', 'hub', 'spot', 'crm']);
    expect(tokenize('post to #sales, now!')).to.deep.equal(['post', 'to', 'sales', 'now']);
  });

  it('stems inflections to one form', () => {
    for (const group of [
      ['create', 'creates', 'created', 'creating'],
      ['message', 'messages'],
      ['invoice', 'invoices'],
      ['ship', 'ships', 'shipped', 'shipping'],
      ['company', 'companies'],
      ['reply', 'replies', 'replied'],
      ['schedule', 'scheduled', 'scheduling'],
    ]) {
      expect(new Set(group.map(stem)), group.join()).to.have.property('size', 1);
    }
    expect(stem('sms')).to.equal('sms');
    expect(stem('v2010')).to.equal('v2010');
    expect(stem('call')).to.equal(stem('calling'));
  });

  it('drops stop words, one-letter words and numbers; expands abbreviations', () => {
    expect(terms('I want to send a message to the team')).to.deep.equal(['send', 'messag', 'team']);
    expect(terms('merge PR 42')).to.deep.equal([stem('merge'), 'pull', 'request']);
    expect(terms('clone the repo')).to.deep.equal([stem('clone'), stem('repository')]);
    expect(terms('e-mail')).to.deep.equal(['email']);
  });

  it('relates words through WordNet synonyms and hypernyms, stemmed like the index', () => {
    expect(related(stem('refund'))).to.include(stem('repay'));
    expect(related(stem('fetch'))).to.include(stem('get'));
    expect(related(stem('client'))).to.include(stem('customer'));
    expect(related('zzzz')).to.deep.equal([]);
  });
});
