/**
 * The demo workflow created on first start: two code steps, the last one writes a Markdown
 * file that the demo API trigger designates as its output.
 */
export const demoWorkflow = {
  name: 'Demo: greeting report',
  description: 'Greets the caller and writes report.md. Created on first start; safe to delete.',
  inputSchema: {
    type: 'object',
    properties: { name: { type: 'string', description: 'Who to greet' } },
  },
  steps: [
    {
      type: 'code',
      name: 'Compute greeting',
      code: 'const { inputs } = ctx;\nreturn `Hello, ${inputs.name ?? "world"}!`;',
      resultType: 'plaintext',
    },
    {
      type: 'code',
      name: 'Write report',
      code:
        'const { steps, files } = ctx;\n' +
        'const greeting = steps[0].result;\n' +
        'files.write("report.md", `# Demo report\\n\\n${greeting}\\n\\nGenerated at ${new Date().toISOString()}.\\n`, "text/markdown");\n' +
        'return `# Demo report\\n\\n${greeting}`;',
      resultType: 'markdown',
    },
  ],
  timeoutMs: 60000,
  output: { stepIndex: 1, fileName: 'report.md' },
} as const;
