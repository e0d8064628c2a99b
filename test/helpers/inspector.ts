/** The MCP Inspector CLI against a server path (DESIGN.md section 6), for the gateway, agent and browser tests. */
import { execFile } from 'node:child_process';
import path from 'node:path';

const INSPECTOR = path.resolve('node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');

export interface InspectorRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `mcp-inspector --cli URL --transport http --header … --stored-auth-only <args>`; exit codes: 3 auth refused, 4 unreachable, 5 tool error. */
export function inspector(url: string, token: string, args: string[]): Promise<InspectorRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [
        INSPECTOR,
        '--cli',
        url,
        '--transport',
        'http',
        '--header',
        `Authorization: Bearer ${token}`,
        '--stored-auth-only',
        ...args,
      ],
      { timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : 1
          : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
