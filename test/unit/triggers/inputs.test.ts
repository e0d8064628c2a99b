/**
 * Workflow input schemas (src/triggers/inputs.ts): validators are memoised per organisation, so
 * another organisation's identical schema is compiled anew (no timing tells it what others use),
 * and each schema is compiled alone (its `$id` reaches no other schema).
 */
import { expect } from 'chai';
import { checkInputs, inputValidator } from '../../../src/triggers/inputs.js';

/** A fresh copy each time, as each workflow version's definition is its own object. */
const schema = () => ({ type: 'object', required: ['name'], properties: { name: { type: 'string' } } });

describe('triggers: input schema validators', () => {
  it("are memoised per organisation: the organisation's own copy of a schema is a hit, another's a miss", () => {
    const a = inputValidator('org_a', schema());
    expect(a).to.be.a('function');
    expect(inputValidator('org_a', schema())).to.equal(a);
    const b = inputValidator('org_b', schema());
    expect(b).to.be.a('function').and.not.equal(a);
    expect(inputValidator('org_b', schema())).to.equal(b);
  });

  it("one organisation's schema $id is not reachable from another's, and both may use the same $id", () => {
    const id = `https://schemas.example/${Math.random()}`;
    const mine = { name: 'Payroll', steps: [], inputSchema: { $id: id, type: 'object', required: ['ssn'] } };
    expect(() => checkInputs('org_a', mine, {})).to.throw(/required property 'ssn'/);
    // A $ref to it from another organisation resolves to nothing: that schema does not compile.
    expect(inputValidator('org_b', { type: 'object', $ref: id })).to.equal(undefined);
    // The same $id in another organisation's schema is that organisation's own.
    const theirs = { name: 'Payroll', steps: [], inputSchema: { $id: id, type: 'object', required: ['name'] } };
    expect(() => checkInputs('org_b', theirs, {})).to.throw(/required property 'name'/);
  });
});
