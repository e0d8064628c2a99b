/**
 * JSONata templates `{{ expression }}` over {inputs, steps} (schema
 * workflow/definition.schema.json; src/engine/README.md: "one documented expression language").
 */
import { expect } from 'chai';
import { findTemplates, renderTemplates, TemplateError } from '../../../src/engine/template.js';

const data = {
  inputs: { name: 'Ann', n: 3, flag: true, none: null, tags: ['a', 'b'], order: { id: 'o-1', total: 9.5 } },
  steps: [
    {
      stepIndex: 0,
      name: 'fetch',
      status: 'COMPLETE',
      resultType: 'json',
      exitCode: 0,
      result: { items: [{ price: 2 }, { price: 5 }, { price: 3.5 }] },
    },
  ],
};

async function rejects(value: unknown, limits = {}): Promise<TemplateError> {
  try {
    await renderTemplates(value, data, limits);
  } catch (err) {
    expect(err).to.be.instanceOf(TemplateError);
    return err as TemplateError;
  }
  throw new Error('expected a TemplateError');
}

describe('engine templates', () => {
  describe('a string that is exactly one template takes the value', () => {
    const cases: Array<[string, unknown]> = [
      ['{{ inputs.n }}', 3],
      ['{{inputs.name}}', 'Ann'],
      ['{{ inputs.flag }}', true],
      ['{{ inputs.none }}', null],
      ['{{ inputs.tags }}', ['a', 'b']],
      ['{{ inputs.order }}', { id: 'o-1', total: 9.5 }],
      ['{{ $sum(steps[0].result.items.price) }}', 10.5],
      ['{{ steps[0].result.items[price > 2].price }}', [5, 3.5]],
      ['{{ {"id": inputs.order.id, "nested": {"n": inputs.n}} }}', { id: 'o-1', nested: { n: 3 } }],
      ['{{ $count(inputs.tags) + 1 }}', 3],
    ];
    for (const [template, value] of cases) {
      it(`${template} → ${JSON.stringify(value)}`, async () => {
        expect(await renderTemplates(template, data)).to.deep.equal(value);
      });
    }

    it('no match is undefined, and such a field is left out of an object', async () => {
      expect(await renderTemplates('{{ inputs.missing }}', data)).to.equal(undefined);
      expect(await renderTemplates({ a: '{{ inputs.missing }}', b: 1 }, data)).to.deep.equal({ b: 1 });
    });
  });

  describe('interpolation', () => {
    it('values become text: strings as they are, objects as JSON, no match as nothing', async () => {
      const out = await renderTemplates(
        'Hi {{ inputs.name }}: n={{ inputs.n }} ok={{ inputs.flag }} tags={{ inputs.tags }} order={{ inputs.order }} none={{ inputs.none }} x={{ inputs.missing }}.',
        data,
      );
      expect(out).to.equal('Hi Ann: n=3 ok=true tags=["a","b"] order={"id":"o-1","total":9.5} none=null x=.');
    });

    it('works in URLs and with surrounding whitespace (which makes it interpolation)', async () => {
      expect(
        await renderTemplates('https://api.example.com/orders/{{ inputs.order.id }}?n={{ inputs.n }}', data),
      ).to.equal('https://api.example.com/orders/o-1?n=3');
      expect(await renderTemplates(' {{ inputs.n }}', data)).to.equal(' 3');
    });

    it('walks objects and arrays recursively; keys are never templated', async () => {
      const out = await renderTemplates(
        { '{{ inputs.name }}': ['{{ inputs.n }}', { deep: 'v={{ inputs.name }}' }, 7, false, null] },
        data,
      );
      expect(out).to.deep.equal({ '{{ inputs.name }}': [3, { deep: 'v=Ann' }, 7, false, null] });
    });

    it('a literal {{ is written as a JSONata string', async () => {
      expect(await renderTemplates('{{ "{{" }} not a template }}', data)).to.equal('{{ not a template }}');
    });

    it('braces and }} inside strings of the expression do not end the template', async () => {
      expect(await renderTemplates('{{ "a}}b" & inputs.name }}!', data)).to.equal('a}}bAnn!');
      expect(await renderTemplates('{{ /* }} */ inputs.n }}', data)).to.equal(3);
    });

    it('finds the templates of a string with their positions', () => {
      expect(findTemplates('a {{ x }} b {{y}}')).to.deep.equal([
        { start: 2, end: 9, expression: 'x' },
        { start: 12, end: 17, expression: 'y' },
      ]);
      expect(findTemplates('no templates')).to.deep.equal([]);
    });

    it('a string without templates is unchanged, other values too', async () => {
      expect(await renderTemplates('plain { text }', data)).to.equal('plain { text }');
      expect(await renderTemplates(5, data)).to.equal(5);
      expect(await renderTemplates(null, data)).to.equal(null);
    });
  });

  describe('errors name the expression', () => {
    it('an invalid expression', async () => {
      const err = await rejects('x {{ inputs. }}');
      expect(err.message).to.match(/^Template error in \{\{ inputs\. \}\}: .*S0207/);
      expect(err.expression).to.equal('inputs.');
    });

    it('an evaluation error', async () => {
      const err = await rejects({ a: ['{{ $nope(1) }}'] });
      expect(err.message).to.match(/\{\{ \$nope\(1\) \}\}.*T1006/);
    });

    it('a template without its closing braces', async () => {
      const err = await rejects('hello {{ inputs.name');
      expect(err.message).to.match(/no closing \}\}/);
    });

    it('an expression that evaluates to a function', async () => {
      const err = await rejects('{{ function($x) { $x } }}');
      expect(err.message).to.match(/function, not a value/);
    });
  });

  describe('runaway expressions are bounded', () => {
    it('an infinite loop stops at the expression time limit', async () => {
      const started = Date.now();
      const err = await rejects('{{ ($f := function($n) { $f($n + 1) }; $f(0)) }}', { expressionTimeoutMs: 200 });
      expect(err.message).to.match(/timeout|D1012/i);
      expect(Date.now() - started).to.be.below(1500);
    });

    it('deep recursion stops at the depth limit', async () => {
      const err = await rejects('{{ ($f := function($n) { $n > 1e9 ? 0 : 1 + $f($n + 1) }; $f(0)) }}');
      expect(err.message).to.match(/Stack overflow|D1011/);
    });

    it('the whole step has a time budget too', async () => {
      const slow = '{{ ($f := function($n) { $n < 1e9 ? $f($n + 1) : $n }; $f(0)) }}';
      const started = Date.now();
      const err = await rejects({ a: slow, b: slow, c: slow }, { expressionTimeoutMs: 1000, totalTimeoutMs: 300 });
      expect(err.message).to.match(/timeout|took longer/i);
      expect(Date.now() - started).to.be.below(900);
    });

    it('a string that doubles in a loop is stopped before it is large', async () => {
      const err = await rejects(
        '{{ ($d := function($s, $n) { $n = 0 ? $s : $d($s & $s, $n - 1) }; $length($d("x", 40))) }}',
        { maxStringLength: 1_000_000 },
      );
      expect(err.message).to.match(/a string over 1000000 characters/);
    });

    it('$pad cannot make a huge string, but still pads', async () => {
      const err = await rejects('{{ $pad("", 1000000000) }}');
      expect(err.message).to.match(/\$pad width over/);
      expect(await renderTemplates('[{{ $pad("ab", 5, "-") }}][{{ $pad("ab", -4) }}]', data)).to.equal('[ab---][  ab]');
    });

    it('huge sequences are refused', async () => {
      const err = await rejects('{{ $count([1..5000000]) }}', { maxItems: 1_000_000 });
      expect(err.message).to.match(/sequence/i);
    });
  });
});
