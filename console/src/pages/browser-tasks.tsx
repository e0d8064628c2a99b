/**
 * Browser tasks (listBrowserTasks, getBrowserTask): the organisation's operator and script
 * tasks, newest first, and one task with its result, log and files, images shown as previews.
 * A RUNNING task is read again every 3 seconds (spec "Limits": browser tasks 3 to 5 seconds).
 */
import { api, unwrap } from '../api.ts';
import { Link } from '../router.tsx';
import {
  Empty,
  ErrorBox,
  Loading,
  PageTitle,
  Show,
  StatusBadge,
  Time,
  useApi,
  usePolled,
  CursorPager,
  useCursorPages,
} from '../ui.tsx';
import type { BrowserTask } from '../../../generated/openapi/client.ts';

const POLL_MS = 3000;

export function BrowserTasksPage() {
  const pages = useCursorPages();
  const { cursor } = pages;
  const state = useApi(
    () => unwrap(api.GET('/v1/browser-tasks', { params: { query: { limit: 50, cursor } } })),
    [cursor],
  );
  return (
    <>
      <PageTitle>Browser tasks</PageTitle>
      <p class="muted">Tasks started with the browser-automation tools (operator_run, playwright_run), newest first.</p>
      <Show state={state} what="the browser tasks">
        {(page) =>
          page.items.length === 0 ? (
            <Empty title="No browser tasks yet.">
              Start one with <code>browser-automation_playwright_run</code> or{' '}
              <code>browser-automation_operator_run</code> through the tool gateway.
            </Empty>
          ) : (
            <>
              <table>
                <thead>
                  <tr>
                    <th scope="col">Task</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Status</th>
                    <th scope="col">Message</th>
                    <th scope="col">Files</th>
                    <th scope="col">Started</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((t) => (
                    <tr key={t.sessionId}>
                      <td>
                        <Link to={`/browser-tasks/${t.sessionId}`}>{t.sessionId}</Link>
                      </td>
                      <td>{t.kind === 'script' ? 'script' : 'operator'}</td>
                      <td>
                        <StatusBadge status={t.status} />
                      </td>
                      <td class="wrap">{t.message}</td>
                      <td>{t.fileCount}</td>
                      <td>
                        <Time iso={t.createdAt} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <CursorPager label="Pages of browser tasks" pages={pages} nextCursor={page.nextCursor} />
            </>
          )
        }
      </Show>
    </>
  );
}

function Files({ task }: { task: BrowserTask }) {
  if (task.files.length === 0) return <p class="muted">No files.</p>;
  return (
    <ul class="files">
      {task.files.map((f) => (
        <li key={f.url}>
          <a href={f.url} download={f.fileName}>
            {f.fileName}
          </a>{' '}
          <span class="muted">
            {f.mimeType}, {f.size} bytes, {f.source}
          </span>
          {f.mimeType.startsWith('image/') && (
            <div>
              <img class="preview" src={f.url} alt={`Preview of ${f.fileName}`} loading="lazy" />
            </div>
          )}
        </li>
      ))}
    </ul>
  );
}

export function BrowserTaskDetailPage({ sessionId }: { sessionId: string }) {
  const { value: task, error } = usePolled(
    sessionId,
    () => unwrap(api.GET('/v1/browser-tasks/{sessionId}', { params: { path: { sessionId } } })),
    { live: (t) => t.status === 'RUNNING', everyMs: POLL_MS },
  );
  return (
    <>
      <PageTitle>{`Browser task ${sessionId}`}</PageTitle>
      <p>
        <Link to="/browser-tasks">All browser tasks</Link>
      </p>
      {error !== undefined && <ErrorBox error={error} title="Could not read the task" />}
      {!task && error === undefined && <Loading what="the task" />}
      {task && (
        <>
          <dl class="facts" aria-live="polite">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={task.status} />
              {task.status === 'RUNNING' && <span class="muted"> — updating every {POLL_MS / 1000} s</span>}
            </dd>
            <dt>Kind</dt>
            <dd>{task.kind === 'script' ? 'script (playwright_run)' : 'operator (operator_run)'}</dd>
            <dt>Message</dt>
            <dd class="wrap">{task.message}</dd>
            <dt>Collection</dt>
            <dd>
              <Link to={`/collections/${task.collectionId}`}>{task.collectionId}</Link>
            </dd>
            <dt>Started</dt>
            <dd>
              <Time iso={task.createdAt} />
            </dd>
            <dt>Finished</dt>
            <dd>
              <Time iso={task.finishedAt} />
            </dd>
          </dl>
          <h2>Result</h2>
          {task.result === null ? <p class="muted">Not finished yet.</p> : <pre class="wrap">{task.result}</pre>}
          <h2>Files</h2>
          <Files task={task} />
          <h2>Log</h2>
          {task.log === '' ? (
            <p class="muted">The log is empty.</p>
          ) : (
            <pre class="log" tabIndex={0} aria-label={`Log ${task.logFileName}`}>
              {task.log}
            </pre>
          )}
        </>
      )}
    </>
  );
}
