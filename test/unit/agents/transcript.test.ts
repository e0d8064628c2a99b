/**
 * The transcript view of a chat's history (src/agents/transcript.ts): each tool call joined with
 * the outcome of its result (text, JSON, a tool's `{isError}` answer, an SDK error, none at
 * all), durations kept with the results, and long texts cut.
 */
import { expect } from 'chai';
import type { ModelMessage } from 'ai';
import { transcriptOf, withToolDurations } from '../../../src/agents/transcript.js';

const at = '2025-06-01T14:00:00.000Z';
const stored = (messages: ModelMessage[]) => messages.map((message, i) => ({ seq: i + 1, message, createdAt: at }));

const call = (toolCallId: string, toolName: string, input: unknown) =>
  ({ type: 'tool-call', toolCallId, toolName, input }) as const;

describe('agents: chat transcript view', () => {
  const history: ModelMessage[] = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Look things up' },
        { type: 'image', image: 'aGk=' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Looking.' },
        call('c1', 'lookup', { q: 'a' }),
        call('c2', 'lookup', { q: 'b' }),
        call('c3', 'fail_hard', {}),
        call('c4', 'never_answered', { x: 1 }),
      ],
    },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'lookup',
          output: { type: 'text', value: 'x'.repeat(5000) },
        },
        {
          type: 'tool-result',
          toolCallId: 'c2',
          toolName: 'lookup',
          output: { type: 'json', value: { isError: true, error: 'no such thing' } },
        },
        { type: 'tool-result', toolCallId: 'c3', toolName: 'fail_hard', output: { type: 'error-text', value: 'boom' } },
      ],
    },
  ];

  it('joins every call with its outcome; a call without a result is pending; long results are cut', () => {
    const withTimes = withToolDurations(history, new Map([['c2', 17]]));
    const [user, assistant, tool] = transcriptOf(stored(withTimes));
    expect(user).to.deep.include({ role: 'user', text: 'Look things up\n[image]', toolCalls: [] });
    expect(assistant!.text).to.equal('Looking.');
    const byId = Object.fromEntries(assistant!.toolCalls.map((c) => [c.toolCallId, c]));
    expect(byId.c1).to.deep.include({ status: 'ok', error: null, durationMs: null, truncated: true });
    expect(byId.c1!.result).to.have.length(4001);
    expect(byId.c2).to.deep.include({ status: 'error', result: null, error: 'no such thing', durationMs: 17 });
    expect(byId.c3).to.deep.include({ status: 'error', error: 'boom' });
    expect(byId.c4).to.deep.include({ status: 'pending', result: null, arguments: { x: 1 } });
    expect(tool!.text).to.equal(null);
    expect(tool!.toolCalls.map((c) => c.toolCallId)).to.deep.equal(['c1', 'c2', 'c3']);
    expect(tool!.toolCalls[1]!.arguments).to.deep.equal({ q: 'b' });
  });

  it('leaves the messages as they were when no tool ran', () => {
    expect(withToolDurations(history, new Map())).to.equal(history);
  });
});
