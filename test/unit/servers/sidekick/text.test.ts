// Text pipeline of the discovery index: tokenizer, stemmer, stop words, aliases.
import { expect } from 'chai';
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
    expect(stem('status')).to.equal('status');
    expect(stem('call')).to.equal(stem('calling'));
  });

  it('drops stop words, one-letter words and numbers; expands abbreviations', () => {
    expect(terms('I want to send a message to the team')).to.deep.equal(['send', 'messag', 'team']);
    expect(terms('merge PR 42')).to.deep.equal(['merg', 'pull', 'request']);
    expect(terms('clone the repo')).to.deep.equal(['clon', 'repository']);
    expect(terms('e-mail')).to.deep.equal(['email']);
  });
});
