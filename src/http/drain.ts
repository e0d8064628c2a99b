/**
 * The HTTP side of a graceful shutdown (README "Running in production"). While the process
 * drains, the listener stays open and requests are served as usual, but every response from
 * then on carries `Connection: close`, so a keep-alive client opens its next connection
 * elsewhere. `close` then stops listening, closes the idle connections, and resolves once the
 * requests still under way have been answered and their connections closed.
 */
import type { Server, ServerResponse } from 'node:http';

export class HttpDrain {
  /** Responses not yet finished (or whose connection is still open). */
  private readonly open = new Set<ServerResponse>();
  private draining = false;
  private closing = false;

  constructor(private readonly server: Server) {
    // Before the app's own listener, so that the header is set before any handler answers.
    server.prependListener('request', (_req, res: ServerResponse) => {
      this.open.add(res);
      if (this.draining) res.setHeader('Connection', 'close');
      res.once('close', () => {
        this.open.delete(res);
        // A connection whose answer left before the drain began stays open after it: once the
        // listener is closed, it goes as soon as it is idle.
        if (this.closing) server.closeIdleConnections();
      });
    });
  }

  /** From now on every response asks its client to close the connection. */
  start(): void {
    this.draining = true;
    for (const res of this.open) if (!res.headersSent) res.setHeader('Connection', 'close');
  }

  /** Requests under way. */
  get inFlight(): number {
    return this.open.size;
  }

  /** Stops listening; resolves once every connection has closed. */
  close(): Promise<void> {
    this.start();
    this.closing = true;
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
    });
  }
}
