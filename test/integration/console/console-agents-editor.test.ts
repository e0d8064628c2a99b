/**
 * The console's workflow editor (CodeMirror 6) and Agents page end to end: the built console
 * served by a live service on loopback, driven in real Chromium against the real API. The only
 * stand-in is the language model (the scripted OpenAI-compatible server). One service and one
 * browser for the file; axe-core on every new page (no serious or critical violation) and no
 * Content-Security-Policy violation.
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { call, createTestOrg, startTestServer, type TestOrg, type TestServer } from '../../helpers/server.js';
import { requireChromium } from '../../helpers/chromium.js';
import { openConsoleBrowser, signIn, type ConsoleBrowser } from '../../helpers/console.js';
import { startModelServer, reply, type ModelServer } from '../../helpers/model-server.js';

const GOOD = {
  name: 'Edited in the console',
  steps: [{ type: 'code', name: 'Compute', code: 'return 1 + 1;' }],
};

describe('console: workflow editor and agents in Chromium', function () {
  this.timeout(60_000);
  let model: ModelServer;
  let server: TestServer;
  let org: TestOrg;
  let ui: ConsoleBrowser;
  let page: Page;
  let channelKey: string;

  before(async function () {
    requireChromium(this);
    model = await startModelServer();
    server = await startTestServer('sqlite', {
      OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
      DEFAULT_MODEL: 'openai-compatible/scripted',
    });
    org = await createTestOrg(server, 'Editor org');
    const agent = await call(server.baseUrl, 'POST', '/v1/agents', {
      token: org.token,
      body: { name: 'Helper', instructions: 'Answer briefly.', servers: [{ server: 'svc-sidekick' }] },
    });
    expect(agent.status, agent.text).to.equal(201);
    const channel = await call(server.baseUrl, 'POST', '/v1/channels', {
      token: org.token,
      body: { agentId: agent.body.agentId, name: 'Website' },
    });
    expect(channel.status, channel.text).to.equal(201);
    channelKey = channel.body.apiKey;
    ui = await openConsoleBrowser({ width: 1280, height: 900 });
    page = ui.page;
    await signIn(page, server.baseUrl, org);
  });

  after(async () => {
    await ui?.close();
    server?.assertResponsesValid();
    await server?.close();
    await model?.close();
  });

  const audit = (name: string) => ui.audit(name);

  /**
   * Replaces an editor's text: select all and delete with the editor's own keys, then insert.
   * (Typing over a highlighted selection lets Chromium's native editing add a style attribute
   * that the policy refuses; the editor redraws the line either way.)
   */
  async function replaceText(name: string, text: string): Promise<void> {
    await page.getByRole('textbox', { name }).focus();
    await page.keyboard.press('Control+a');
    await page.keyboard.press('Backspace');
    await page.keyboard.insertText(text);
  }
  const setDefinition = (text: string) => replaceText('Definition (JSON)', text);

  /** The editor's diagnostics as the page lists them under it. */
  async function problems(): Promise<string> {
    return (await page.locator('.problems').textContent()) ?? '';
  }

  it("creates a workflow in the editor: completion, inline schema errors, then the API's own errors", async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workflows & triggers' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Workflows & triggers', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'New workflow' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'New workflow', level: 1 }).waitFor();
    const editor = page.getByRole('textbox', { name: 'Definition (JSON)' });
    await editor.waitFor();
    // The JavaScript pane shows the starter's code step, highlighted as JavaScript.
    const code = page.getByRole('textbox', { name: 'Step code (JavaScript)' });
    expect(await code.textContent()).to.include('ctx.inputs.name');
    expect(await code.locator('span').count(), 'highlighted tokens').to.be.greaterThan(2);
    await audit('workflow-new');

    // Completion from the schema: a property of a code step.
    await setDefinition('{\n  "name": "x",\n  "steps": [{ "type": "code", "name": "a", "code": "return 1;", ');
    await page.keyboard.type('"memo');
    const options = page.locator('.cm-tooltip-autocomplete');
    await options.getByText('"memoryMb"').waitFor();
    // CodeMirror ignores Enter for 75 ms after the list opens or changes (interactionDelay), so
    // that a fast typist's newline is not taken as a choice.
    await page.waitForTimeout(150);
    await page.keyboard.press('Enter');
    expect(await editor.textContent()).to.include('"memoryMb": ');
    // Values too, asked for with Ctrl+Space: an http step's methods (its branch chosen by `type`).
    await setDefinition('{ "name": "x", "steps": [{ "type": "http", "name": "a", "request": { "method": ');
    await page.keyboard.press('Control+Space');
    await options.getByText('"PATCH"').waitFor();
    expect(await options.getByText('"memoryMb"').count()).to.equal(0);

    // A step without its code: the schema's error is underlined as it is typed.
    await setDefinition(JSON.stringify({ name: 'Broken', steps: [{ type: 'code', name: 'No code' }] }, null, 2));
    await page.locator('.cm-lintRange-error').first().waitFor();
    await page.locator('.problems').getByText("/steps/0 must have required property 'code'").waitFor();
    await audit('workflow-new-errors');

    // Saved anyway: the API's 400 details are listed and shown at their instancePath, also when
    // they arrive after the editor has checked the text (the save is made once it has).
    await setDefinition(
      JSON.stringify({ name: 'Out of range', steps: GOOD.steps, output: { stepIndex: 3, fileName: 'a.txt' } }, null, 2),
    );
    await page.locator('.problems').getByText('No problems found').waitFor();
    await page.getByRole('button', { name: 'Create the workflow' }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('invalid_request').waitFor();
    expect(await alert.textContent()).to.include('/output/stepIndex');
    await page.locator('.problems').getByText('/output/stepIndex must name an existing step (0 to 0) (API)').waitFor();
    expect(await problems()).to.include('Line 11: /output/stepIndex');
    expect(await page.locator('.cm-lintRange-error').count()).to.be.greaterThan(0);

    await setDefinition(JSON.stringify(GOOD, null, 2));
    await page.getByRole('button', { name: 'Create the workflow' }).click();
    await page.getByRole('heading', { name: 'Workflow Edited in the console', level: 1 }).waitFor();
  });

  it('saves a new version from the JavaScript pane and compares the two versions', async () => {
    await page.getByRole('link', { name: 'Edit the definition' }).click();
    await page.getByRole('heading', { name: /^Edit workflow/, level: 1 }).waitFor();
    const code = page.getByRole('textbox', { name: 'Step code (JavaScript)' });
    await code.waitFor();
    expect(await code.textContent()).to.include('return 1 + 1;');
    await replaceText('Step code (JavaScript)', 'return "two";');
    // The pane writes the step's code back into the JSON.
    await page.getByRole('textbox', { name: 'Definition (JSON)' }).getByText('"return \\"two\\";"').waitFor();
    await audit('workflow-edit');
    await page.getByRole('button', { name: 'Save as version 2' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Workflow Edited in the console', level: 1 }).waitFor();
    const facts = page.locator('dl.facts');
    await facts.getByText('2', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Compare' }).click();
    const diff = page.locator('table.diff');
    await diff.waitFor();
    expect(await diff.locator('td.del').textContent()).to.include('return 1 + 1;');
    expect(await diff.locator('td.ins').textContent()).to.include('return \\"two\\";');
  });

  it('agents: channels, chats and a streamed reply with its tool call in the chat panel', async () => {
    model.setScript([reply.toolCall('capabilities_discover', { request: 'list agents' }), reply.text('Here you go.')]);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Helper' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Helper', level: 2 }).waitFor();
    await page.getByText('No chats yet.').waitFor();
    await audit('agents');
    await page.getByLabel('Channel key').fill(channelKey);
    await page.getByLabel('Message').fill('Which agents are there?');
    await page.getByRole('button', { name: 'Send' }).focus();
    await page.keyboard.press('Enter');
    const transcript = page.getByRole('list', { name: 'Transcript of this conversation' });
    await transcript
      .locator('li.tool', { hasText: 'capabilities_discover' })
      .getByText(/succeeded in \d+ ms/)
      .waitFor();
    await transcript.locator('li.agent', { hasText: 'Here you go.' }).waitFor();
    expect(await transcript.locator('li.user').textContent()).to.include('Which agents are there?');
    await page.getByRole('status').getByText('The agent replied.').waitFor();
    const chatId = (await page.locator('p.muted code').first().textContent())!;
    expect(chatId).to.match(/\S/);
    await page.getByRole('button', { name: 'Open chat Which agents are there?' }).waitFor();
    const stored = await page.evaluate(() => JSON.stringify(sessionStorage) + JSON.stringify(localStorage));
    expect(stored, 'the channel key is never stored').not.to.include(channelKey);
    await audit('agents-chat');
    // A wrong key is the API's 401, shown with its code.
    await page.getByLabel('Channel key').fill('syc_wrong');
    await page.getByLabel('Message').fill('again');
    await page.getByRole('button', { name: 'Send' }).click();
    await page
      .getByRole('alert')
      .getByText(/HTTP 401/)
      .waitFor();

    // After a reload the chat's transcript comes from the API (GET /v1/chats/{chatId}), tool call included.
    await page.reload();
    await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Helper' }).click();
    await page.getByRole('button', { name: 'Open chat Which agents are there?' }).click();
    await page.getByRole('status').getByText('Chat loaded: 4 messages.').waitFor();
    const earlier = page.getByRole('list', { name: 'Transcript of this conversation' });
    expect(await earlier.locator('li.user').textContent()).to.include('Which agents are there?');
    const call = earlier.locator('li.tool', { hasText: 'capabilities_discover' });
    await call.getByText(/succeeded in \d+ ms/).waitFor();
    await call.getByText('Arguments and result').click();
    expect(await call.locator('details').textContent()).to.include('Arguments: {"request":"list agents"}');
    await earlier.locator('li.agent', { hasText: 'Here you go.' }).waitFor();
    await audit('agents-chat-reloaded');
    // The chosen chat continues in the panel with its history.
    model.setScript([reply.text('Still here.')]);
    model.requests.length = 0;
    await page.getByLabel('Channel key').fill(channelKey);
    await page.getByLabel('Message').fill('And now?');
    await page.getByRole('button', { name: 'Send' }).click();
    await earlier.locator('li.agent', { hasText: 'Still here.' }).waitFor();
    expect(await page.locator('p.muted code').first().textContent()).to.equal(chatId);
    const sent = (model.requests[0]!.body as { messages: { role: string }[] }).messages.map((m) => m.role);
    expect(sent).to.deep.equal(['system', 'user', 'assistant', 'tool', 'assistant', 'user']);
    // The list reads again after a reply: the chat now has six messages.
    await page.getByRole('row', { name: /Which agents are there\?.*Website 6/ }).waitFor();
  });
});
