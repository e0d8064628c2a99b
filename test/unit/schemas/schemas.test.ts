// Checks the JSON Schema documents under schemas/ (DESIGN.md section 2): every document is
// well-formed for the code generator (metadata, strict Ajv2020 compile, valid examples, unique
// titles, intra-file $refs only), every server.json lists tools that have both schemas, and the
// rules taken from the spec actually reject bad input (sections 8, 9, 12, 13 and "Events").
import * as prettier from 'prettier';
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv and ajv-formats are CommonJS: at run time the default import is the class/plugin itself
// (module.exports), while their typings describe `exports.default`. Accept both shapes.
type Ajv2020Class = typeof Ajv2020Module.default;
type AjvInstance = InstanceType<Ajv2020Class>;
type AddFormats = typeof addFormatsModule.default;
const Ajv2020: Ajv2020Class =
  (Ajv2020Module as unknown as { default?: Ajv2020Class }).default ?? (Ajv2020Module as unknown as Ajv2020Class);
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats);

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const SCHEMAS = join(ROOT, 'schemas');
const ID_BASE = 'https://schemas.switchyard.dev/';
const DIALECT = 'https://json-schema.org/draft/2020-12/schema';

function walk(dir: string, keep: (file: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) out.push(...walk(full, keep));
    else if (keep(full)) out.push(full);
  }
  return out;
}
const rel = (file: string): string => relative(SCHEMAS, file).split(sep).join('/');
const readJson = (file: string): JsonObject => JSON.parse(readFileSync(file, 'utf8')) as JsonObject;

const schemaFiles = walk(SCHEMAS, (f) => f.endsWith('.schema.json'));
const serverFiles = walk(SCHEMAS, (f) => f.endsWith(`${sep}server.json`));
const schemas = new Map(schemaFiles.map((f) => [rel(f), readJson(f)] as const));

/** Every key starting with `x-` anywhere in a schema (annotations the code enforces). */
function xKeywords(node: Json, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) node.forEach((n) => xKeywords(n, found));
  else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k.startsWith('x-')) found.add(k);
      xKeywords(v, found);
    }
  }
  return found;
}

/** Every `$ref` value anywhere in a schema. */
function refs(node: Json, found: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => refs(n, found));
  else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') found.push(v);
      else refs(v, found);
    }
  }
  return found;
}

/**
 * The Ajv set-up the schemas are written for: Ajv2020 strict + allErrors + ajv-formats, and the
 * `x-` keywords registered. `x-maxBytes` (coding-agent envVars) is a real check here: UTF-8 byte
 * length of a string, which JSON Schema's maxLength (characters) cannot express.
 */
function makeAjv(): AjvInstance {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  ajv.addKeyword({
    keyword: 'x-maxBytes',
    type: 'string',
    schemaType: 'number',
    validate: (max: number, data: string) => Buffer.byteLength(data, 'utf8') <= max,
    errors: false,
  });
  const others = new Set<string>();
  for (const s of schemas.values()) for (const k of xKeywords(s)) if (k !== 'x-maxBytes') others.add(k);
  for (const k of others) ajv.addKeyword({ keyword: k });
  return ajv;
}

const ajv = makeAjv();
for (const s of schemas.values()) ajv.addSchema(s);

function validator(path: string) {
  const s = schemas.get(path);
  if (!s) throw new Error(`no schema ${path}`);
  const v = ajv.getSchema(s.$id as string);
  if (!v) throw new Error(`schema ${path} did not compile`);
  return v;
}
function accepts(path: string, data: unknown): boolean {
  const v = validator(path);
  return v(data) as boolean;
}
function expectAccepted(path: string, data: unknown): void {
  const v = validator(path);
  const ok = v(data);
  expect(ok, `${path} should accept: ${JSON.stringify(v.errors)}`).to.equal(true);
}
function expectRejected(path: string, data: unknown): void {
  expect(accepts(path, data), `${path} should reject ${JSON.stringify(data).slice(0, 200)}`).to.equal(false);
}

describe('schemas/ (JSON Schema documents)', () => {
  it('finds the schema files and server descriptors', () => {
    expect(schemaFiles.length).to.be.greaterThan(40);
    expect(serverFiles.map(rel)).to.have.members([
      'tools/agent-management/server.json',
      'tools/browser-automation/server.json',
      'tools/coding-agent/server.json',
      'tools/gateway/server.json',
      'tools/mcp/server.json',
      'tools/svc-sidekick/server.json',
    ]);
  });

  describe('every *.schema.json', () => {
    for (const [path, s] of schemas) {
      it(`${path}: metadata, strict compile, examples validate, local $refs only`, () => {
        expect(s.$schema).to.equal(DIALECT);
        expect(s.$id).to.equal(ID_BASE + path.replace(/\.json$/, ''));
        expect(s.title)
          .to.be.a('string')
          .and.match(/^[A-Z][A-Za-z0-9]*$/);
        expect(s.description).to.be.a('string').and.not.equal('');
        expect(s.examples).to.be.an('array').that.is.not.empty;
        for (const r of refs(s)) expect(r, `${path} $ref`).to.match(/^#\/\$defs\/[A-Za-z0-9_]+$/);
        // A fresh strict instance per document: a strict-mode complaint fails this test.
        const own = makeAjv();
        const validate = own.compile(s);
        for (const [i, ex] of (s.examples as Json[]).entries()) {
          expect(validate(ex), `${path} examples[${i}]: ${JSON.stringify(validate.errors)}`).to.equal(true);
        }
      });
    }

    it('titles are unique across schemas/', () => {
      const titles = [...schemas.values()].map((s) => s.title);
      expect(new Set(titles).size).to.equal(titles.length);
    });

    it('are written as prettier formats them (the repository format, 2-space indentation)', async () => {
      for (const f of [...schemaFiles, ...serverFiles]) {
        const text = readFileSync(f, 'utf8');
        const options = { ...(await prettier.resolveConfig(f)), filepath: f };
        expect(await prettier.check(text, options), rel(f)).to.equal(true);
        expect(
          text.split('\n').every((line) => /^( {2})*(?! )/.test(line)),
          rel(f),
        ).to.equal(true);
      }
    });
  });

  describe('tool servers (server.json)', () => {
    for (const file of serverFiles) {
      const path = rel(file);
      it(`${path}: descriptor shape, and every tool has object input and output schemas`, () => {
        const srv = readJson(file);
        const folder = path.split('/')[1];
        expect(srv.path).to.equal(folder);
        expect(srv.name).to.be.a('string').and.not.equal('');
        expect(srv.description).to.be.a('string').and.not.equal('');
        expect(srv.embedded).to.equal(folder !== 'coding-agent');
        const tools = srv.tools as JsonObject[];
        expect(tools).to.be.an('array').that.is.not.empty;
        const names = tools.map((t) => t.name as string);
        expect(new Set(names).size).to.equal(names.length);
        for (const t of tools) {
          expect(Object.keys(t)).to.have.members(['name', 'title', 'description', 'annotations']);
          expect(t.title).to.be.a('string').and.not.equal('');
          expect((t.description as string).length, `${t.name} description`).to.be.greaterThan(60);
          const a = t.annotations as JsonObject;
          expect(Object.keys(a)).to.have.members([
            'readOnlyHint',
            'destructiveHint',
            'idempotentHint',
            'openWorldHint',
          ]);
          for (const v of Object.values(a)) expect(v).to.be.a('boolean');
          for (const kind of ['input', 'output']) {
            const schemaPath = `tools/${folder}/${t.name}.${kind}.schema.json`;
            expect(existsSync(join(SCHEMAS, schemaPath)), schemaPath).to.equal(true);
            expect(schemas.get(schemaPath)?.type, `${schemaPath} top-level type`).to.equal('object');
          }
        }
        // No stray schema in a server folder.
        const inFolder = [...schemas.keys()].filter((p) => p.startsWith(`tools/${folder}/`));
        expect(inFolder).to.have.members(
          names.flatMap((n) => [`tools/${folder}/${n}.input.schema.json`, `tools/${folder}/${n}.output.schema.json`]),
        );
      });
    }

    it('tool names follow the spec (sections 7, 8, 9, 11, 12)', () => {
      const names = (p: string) =>
        (readJson(join(SCHEMAS, 'tools', p, 'server.json')).tools as JsonObject[]).map((t) => t.name);
      expect(names('mcp')).to.deep.equal(['listServers']);
      expect(names('svc-sidekick')).to.have.members(['capabilities_discover', 'capability_details']);
      expect(names('gateway')).to.have.members(['capabilities_discover', 'capability_details', 'gateway_invoke']);
      expect(names('agent-management')).to.have.members(
        [
          'agent_create',
          'agent_list',
          'agent_read',
          'agent_update',
          'agent_invoke',
          'chat_create',
          'chat_list',
          'chat_reset_conversation',
          'chat_list_artifacts',
          'agent_publish_release',
          'agent_toggle_public_template',
        ].map((n) => `agent-management_${n}`),
      );
      expect(names('browser-automation')).to.have.members(
        ['operator_run', 'operator_run_continue', 'playwright_run', 'playwright_run_continue', 'logins_list'].map(
          (n) => `browser-automation_${n}`,
        ),
      );
      expect(names('coding-agent')).to.deep.equal(['coding-agent_launch']);
    });

    it('gateway copies of the discovery tools equal the svc-sidekick ones apart from $id, title and descriptions', () => {
      const strip = (s: JsonObject): string =>
        JSON.stringify(s, (k, v: unknown) => (['$id', 'title', 'description'].includes(k) ? undefined : v));
      for (const t of ['capabilities_discover', 'capability_details']) {
        for (const kind of ['input', 'output']) {
          const a = schemas.get(`tools/svc-sidekick/${t}.${kind}.schema.json`)!;
          const b = schemas.get(`tools/gateway/${t}.${kind}.schema.json`)!;
          expect(strip(b), `${t}.${kind}`).to.equal(strip(a));
        }
      }
    });
  });

  describe('rules that must bite', () => {
    const OP = 'tools/browser-automation/browser-automation_operator_run.input.schema.json';
    const opOk = { task: 'Open https://example.com and return the heading', cacheKey: 'abcd1234' };

    it('operator_run: accepts a minimal task', () => expectAccepted(OP, opOk));
    it('operator_run: rejects maxSteps 0 and 101, accepts 1 and 100', () => {
      expectRejected(OP, { ...opOk, maxSteps: 0 });
      expectRejected(OP, { ...opOk, maxSteps: 101 });
      expectAccepted(OP, { ...opOk, maxSteps: 1 });
      expectAccepted(OP, { ...opOk, maxSteps: 100 });
    });
    it('operator_run: rejects cacheDurationDays 0 and 31', () => {
      expectRejected(OP, { ...opOk, cacheDurationDays: 0 });
      expectRejected(OP, { ...opOk, cacheDurationDays: 31 });
    });
    it('operator_run: rejects a cacheKey of 7 or 9 characters, or with a non-alphanumeric', () => {
      expectRejected(OP, { ...opOk, cacheKey: 'abcd123' });
      expectRejected(OP, { ...opOk, cacheKey: 'abcd12345' });
      expectRejected(OP, { ...opOk, cacheKey: 'abcd-123' });
    });
    it('operator_run: rejects a multi-line task (\\n or \\r) and a missing task or cacheKey', () => {
      expectRejected(OP, { ...opOk, task: 'first line\nsecond line' });
      expectRejected(OP, { ...opOk, task: 'first line\rsecond line' });
      expectRejected(OP, { cacheKey: 'abcd1234' });
      expectRejected(OP, { task: 'x' });
    });
    it('operator_run: rejects an unknown model, agentMode or region, and an unknown argument', () => {
      expectRejected(OP, { ...opOk, model: 'openai/gpt-5' });
      expectRejected(OP, { ...opOk, agentMode: 'vision' });
      expectRejected(OP, { ...opOk, region: 'eu-west-1' });
      expectRejected(OP, { ...opOk, headless: true });
    });
    it('operator_run: filesToUpload entries need a url (URI) and a fileName', () => {
      expectAccepted(OP, { ...opOk, filesToUpload: [{ url: 'https://files.example.com/a.pdf', fileName: 'a.pdf' }] });
      expectRejected(OP, { ...opOk, filesToUpload: [{ url: 'not a uri', fileName: 'a.pdf' }] });
      expectRejected(OP, { ...opOk, filesToUpload: [{ url: 'https://files.example.com/a.pdf' }] });
    });
    it('operator_run: declares every argument of the spec table with its default', () => {
      const props = schemas.get(OP)!.properties as Record<string, JsonObject>;
      const defaults: Record<string, Json | undefined> = {
        task: undefined,
        cacheKey: undefined,
        model: 'google/gemini-3-flash-preview',
        agentMode: 'hybrid',
        maxSteps: 30,
        systemPrompt: undefined,
        region: 'us-west-2',
        proxies: false,
        advancedStealth: false,
        blockAds: true,
        solveCaptchas: true,
        recordSession: true,
        viewportWidth: 1288,
        viewportHeight: 711,
        filesToUpload: undefined,
        collectionId: undefined,
        useContextService: undefined,
        disableCache: false,
        cacheDurationDays: 7,
      };
      expect(Object.keys(props)).to.have.members(Object.keys(defaults));
      for (const [k, d] of Object.entries(defaults)) expect(props[k]!.default, k).to.deep.equal(d);
      expect(props.model!.enum).to.have.members([
        'google/gemini-3-flash-preview',
        'google/gemini-2.5-flash',
        'google/gemini-2.5-pro',
        'openai/gpt-4o',
        'openai/gpt-4o-mini',
        'anthropic/claude-sonnet-4',
      ]);
    });
    it('operator_run_continue output: completed needs result, files and logContent; failed needs result', () => {
      const P = 'tools/browser-automation/browser-automation_operator_run_continue.output.schema.json';
      const base = { sessionId: 's', collectionId: 'c', logFileName: 'l.log', message: 'm' };
      expectAccepted(P, { ...base, status: 'RUNNING' });
      expectRejected(P, { ...base, status: 'completed', result: 'r' });
      expectRejected(P, { ...base, status: 'failed' });
      expectRejected(P, { ...base, status: 'done' });
      expectRejected(P, {
        ...base,
        status: 'completed',
        result: 'r',
        logContent: '',
        files: [{ url: 'https://x.example/f', fileName: 'f', mimeType: 'text/plain', size: 1, source: 'upload' }],
      });
    });

    const CA = 'tools/coding-agent/coding-agent_launch.input.schema.json';
    const caOk = { PCID: 'conn_1', prompt: { text: 'Fix the bug' }, repos: [{ url: 'https://github.com/acme/app' }] };
    const img = Buffer.from('tiny image').toString('base64');

    it('coding-agent launch: accepts a minimal launch and a prUrl-only repo', () => {
      expectAccepted(CA, caOk);
      expectAccepted(CA, { ...caOk, repos: [{ prUrl: 'https://github.com/acme/app/pull/1' }] });
    });
    it('coding-agent launch: rejects 6 images, accepts 5', () => {
      expectAccepted(CA, { ...caOk, prompt: { text: 't', images: Array(5).fill(img) } });
      expectRejected(CA, { ...caOk, prompt: { text: 't', images: Array(6).fill(img) } });
    });
    it('coding-agent launch: an image of exactly 15 MiB passes, one byte more fails; non-base64 fails', () => {
      const max = Buffer.alloc(15 * 1024 * 1024, 7).toString('base64');
      const over = Buffer.alloc(15 * 1024 * 1024 + 1, 7).toString('base64');
      expect(max.length).to.equal(20971520);
      expectAccepted(CA, { ...caOk, prompt: { text: 't', images: [max] } });
      expectRejected(CA, { ...caOk, prompt: { text: 't', images: [over] } });
      expectRejected(CA, { ...caOk, prompt: { text: 't', images: ['not base64!'] } });
    });
    it('coding-agent launch: rejects 0 or 2 repos and a repo with neither url nor prUrl', () => {
      expectRejected(CA, { ...caOk, repos: [] });
      expectRejected(CA, { ...caOk, repos: [{ url: 'https://github.com/a/b' }, { url: 'https://github.com/c/d' }] });
      expectRejected(CA, { ...caOk, repos: [{ startingRef: 'main' }] });
      expectRejected(CA, { ...caOk, repos: [{ prUrl: 'not a uri' }] });
    });
    it('coding-agent launch: rejects a missing PCID, prompt text or model id', () => {
      const { PCID: _pcid, ...noPcid } = caOk;
      expectRejected(CA, noPcid);
      expectRejected(CA, { ...caOk, prompt: {} });
      expectRejected(CA, { ...caOk, model: { params: [] } });
    });
    it('coding-agent launch: envVars reject a CURSOR_ name, an empty name and an empty value', () => {
      expectAccepted(CA, { ...caOk, envVars: { API_URL: 'https://api.example.com', cursor_lower: 'ok' } });
      expectRejected(CA, { ...caOk, envVars: { CURSOR_X: 'v' } });
      expectRejected(CA, { ...caOk, envVars: { '': 'v' } });
      expectRejected(CA, { ...caOk, envVars: { NAME: '' } });
      expectRejected(CA, { ...caOk, envVars: { NAME: 3 } });
    });
    it('coding-agent launch: envVars byte limits (x-maxBytes) bite on multi-byte text', () => {
      expectAccepted(CA, { ...caOk, envVars: { ['N'.repeat(1024)]: 'v'.repeat(4096) } });
      expectRejected(CA, { ...caOk, envVars: { ['N'.repeat(1025)]: 'v' } });
      expectRejected(CA, { ...caOk, envVars: { NAME: 'v'.repeat(4097) } });
      // 600 two-byte characters: within maxLength 1024, over 1024 bytes.
      expectRejected(CA, { ...caOk, envVars: { ['é'.repeat(600)]: 'v' } });
      expectRejected(CA, { ...caOk, envVars: { NAME: 'é'.repeat(2049) } });
    });

    const CD = 'tools/svc-sidekick/capabilities_discover.input.schema.json';
    it('capabilities_discover: rejects an unknown type, a missing request and limit 51', () => {
      expectAccepted(CD, {
        request: 'send mail',
        types: ['tool', 'agentSkill'],
        context: 'agent-execution',
        limit: 50,
      });
      expectRejected(CD, { request: 'send mail', types: ['workflow'] });
      expectRejected(CD, { types: ['tool'] });
      expectRejected(CD, { request: 'send mail', limit: 51 });
      expectRejected(CD, { request: 'send mail', context: 'chat' });
      expectRejected('tools/gateway/capabilities_discover.input.schema.json', {
        request: 'send mail',
        types: ['workflow'],
      });
    });
    it('capability_details: items needs 1 to 50 names', () => {
      const P = 'tools/svc-sidekick/capability_details.input.schema.json';
      expectRejected(P, { items: [] });
      expectRejected(P, { items: Array.from({ length: 51 }, (_, i) => `t${i}`) });
      expectAccepted(P, { items: Array.from({ length: 50 }, (_, i) => `t${i}`) });
    });
    it('gateway_invoke: arguments is an object or the JSON text of an object', () => {
      const P = 'tools/gateway/gateway_invoke.input.schema.json';
      expectAccepted(P, { server: 's', tool: 't', arguments: { a: 1 } });
      expectAccepted(P, { server: 's', tool: 't', arguments: ' {"a":1} ' });
      expectRejected(P, { server: 's', tool: 't', arguments: '[1,2]' });
      expectRejected(P, { server: 's', tool: 't', arguments: 5 });
      expectRejected(P, { tool: 't' });
    });
    it('agent_invoke output: exactly success, response, chatId, agentId', () => {
      const P = 'tools/agent-management/agent-management_agent_invoke.output.schema.json';
      const ok = { success: true, response: 'hi', chatId: 'c', agentId: 'a' };
      expectAccepted(P, ok);
      expectRejected(P, { ...ok, extra: 1 });
      expectRejected(P, { success: true, response: 'hi', chatId: 'c' });
    });
    it('agent_update: needs agentId and at least one field', () => {
      const P = 'tools/agent-management/agent-management_agent_update.input.schema.json';
      expectRejected(P, { agentId: 'a' });
      expectAccepted(P, { agentId: 'a', name: 'New name' });
    });

    const WF = 'workflow/definition.schema.json';
    const step = { type: 'code', name: 's', code: 'return 1;' };
    it('workflow definition: rejects zero steps and more than 100', () => {
      expectRejected(WF, { name: 'w', steps: [] });
      expectRejected(WF, { name: 'w', steps: Array(101).fill(step) });
      expectAccepted(WF, { name: 'w', steps: Array(100).fill(step) });
    });
    it("workflow definition: rejects an unknown step type and a step with another type's fields", () => {
      expectRejected(WF, { name: 'w', steps: [{ type: 'shell', name: 's', command: 'ls' }] });
      expectRejected(WF, { name: 'w', steps: [{ type: 'agent', name: 's', code: 'return 1;' }] });
    });
    it('workflow definition: enforces name length, timeouts and memory ranges', () => {
      expectRejected(WF, { name: '', steps: [step] });
      expectRejected(WF, { name: 'x'.repeat(201), steps: [step] });
      expectRejected(WF, { name: 'w', steps: [step], timeoutMs: 999 });
      expectRejected(WF, { name: 'w', steps: [step], timeoutMs: 3600001 });
      expectRejected(WF, { name: 'w', steps: [{ ...step, timeoutMs: 300001 }] });
      expectRejected(WF, { name: 'w', steps: [{ ...step, memoryMb: 8 }] });
      expectRejected(WF, { name: 'w', steps: [{ ...step, memoryMb: 2048 }] });
      expectRejected(WF, { name: 'w', steps: [{ ...step, resultType: 'html' }] });
      expectRejected(WF, {
        name: 'w',
        steps: [{ type: 'http', name: 'h', request: { method: 'HEAD', url: 'https://x.example' } }],
      });
    });

    const DS = 'events/datastore-event.schema.json';
    const dsOk = {
      eventId: 'evt_1',
      event: 'onCreate',
      itemId: 'i',
      providerId: 'p',
      collectionId: 'c',
      collectionType: 'datastore',
      key: 'k',
      content: {},
      metadata: {},
      createdAt: '2025-05-01T10:00:00Z',
      updatedAt: '2025-05-01T10:00:00Z',
      triggerLevel: 'collection',
    };
    it('datastore event: changed only (and always) on onEdit; isSecret only (and always) on vault', () => {
      expectAccepted(DS, dsOk);
      expectRejected(DS, { ...dsOk, changed: { content: {}, metadata: {} } });
      expectRejected(DS, { ...dsOk, event: 'onEdit' });
      expectAccepted(DS, { ...dsOk, event: 'onEdit', changed: { content: {}, metadata: {} } });
      expectRejected(DS, { ...dsOk, collectionType: 'vault' });
      expectAccepted(DS, { ...dsOk, collectionType: 'vault', isSecret: true });
      expectRejected(DS, { ...dsOk, collectionType: 'vault', isSecret: false });
      expectRejected(DS, { ...dsOk, isSecret: true });
      expectRejected(DS, { ...dsOk, event: 'onUpdate' });
      expectRejected(DS, { ...dsOk, createdAt: 'yesterday' });
      const { eventId: _dropped, ...withoutEventId } = dsOk;
      expectRejected(DS, withoutEventId);
    });
    it('filestorage event: file level, integer size, URI signedUrl', () => {
      const P = 'events/filestorage-event.schema.json';
      const ex = (schemas.get(P)!.examples as JsonObject[])[0]!;
      expectRejected(P, { ...ex, fileSize: 1.5 });
      expectRejected(P, { ...ex, signedUrl: 'nope' });
      expectRejected(P, { ...ex, collectionType: 'datastore' });
      expectRejected(P, { ...ex, extra: true });
    });

    const TU = 'events/trigger-url.schema.json';
    it('trigger URL entry: rejects event onUpdate, an empty apiKey, a non-URI url and an unknown triggerLevel', () => {
      const ok = { event: 'onDelete', url: 'https://t.example/ext/triggers/t1', apiKey: 'k' };
      expectAccepted(TU, ok);
      expectRejected(TU, { ...ok, event: 'onUpdate' });
      expectRejected(TU, { ...ok, event: 'onTest' });
      expectRejected(TU, { ...ok, apiKey: '' });
      expectRejected(TU, { ...ok, url: 'not a url' });
      expectRejected(TU, { ...ok, triggerLevel: 'file' });
    });
  });
});
