/**
 * Queues: the organisation's queues, and one queue with its batches (live progress bars while
 * a batch is under way), the skipped rows of a batch by reason with paging, cancelling a batch
 * after a confirmation, and a CSV upload (spec section 15) with its upload progress.
 */
import { useState } from 'preact/hooks';
import { api, unwrap } from '../api.ts';
import { ConfirmDialog } from '../confirm.tsx';
import { Link } from '../router.tsx';
import { putWithProgress } from '../upload.ts';
import {
  Empty,
  ErrorBox,
  PageTitle,
  Show,
  StatusBadge,
  Time,
  useApi,
  CursorPager,
  useCursorPages,
  useReloadWhile,
} from '../ui.tsx';
import type { BatchRowError, Queue, QueueBatch } from '../../../generated/openapi/client.ts';

const POLL_MS = 2000;
const ACTIVE = new Set(['validating', 'pending', 'running']);

export function QueuesPage() {
  const state = useApi(() => unwrap(api.GET('/v1/queues', { params: { query: { limit: 200 } } })), []);
  return (
    <>
      <PageTitle>Queues</PageTitle>
      <Show state={state} what="the queues">
        {(page) =>
          page.items.length === 0 ? (
            <Empty title="No queues yet.">
              Create one with <code>POST /v1/queues</code> (a name and the trigger its rows start), then upload CSV
              files to it here.
            </Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Queue</th>
                  <th scope="col">Trigger</th>
                  <th scope="col">Concurrency</th>
                  <th scope="col">Priority</th>
                  <th scope="col">State</th>
                </tr>
              </thead>
              <tbody>
                {page.items.map((q) => (
                  <tr key={q.queueId}>
                    <td>
                      <Link to={`/queues/${q.queueId}`}>{q.name}</Link>
                      <div class="muted small-text">{q.queueId}</div>
                    </td>
                    <td>{q.triggerId}</td>
                    <td>{q.concurrencyLimit}</td>
                    <td>{q.priority}</td>
                    <td>{q.paused ? 'paused' : 'active'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </>
  );
}

function Upload({ queue, onBatch }: { queue: Queue; onBatch: () => void }) {
  const [progress, setProgress] = useState<{ sent: number; total: number }>();
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  return (
    <form
      class="inline-form"
      aria-labelledby="upload-title"
      onSubmit={async (e) => {
        e.preventDefault();
        const form = e.currentTarget;
        const file = (form.elements.namedItem('csv') as HTMLInputElement).files?.[0];
        if (!file) return;
        setError(undefined);
        setDone(undefined);
        setProgress({ sent: 0, total: file.size });
        try {
          const path = { queueId: queue.queueId };
          const target = await unwrap(
            api.POST('/api/queues/{queueId}/items/csv/upload-url', {
              params: { path },
              body: { filename: file.name, sizeBytes: file.size },
            }),
          );
          await putWithProgress(target.uploadUrl, file, {
            headers: target.headers,
            onProgress: (sent, total) => setProgress({ sent, total }),
          });
          const batch = await unwrap(
            api.POST('/api/queues/{queueId}/items/csv', {
              params: { path },
              body: { csvKey: target.csvKey, triggerId: queue.triggerId },
            }),
          );
          setDone(`Batch ${batch.batchId} created from ${file.name}.`);
          form.reset();
          onBatch();
        } catch (err) {
          setError(err);
        } finally {
          setProgress(undefined);
        }
      }}
    >
      <h2 id="upload-title" class="visually-hidden">
        Upload a CSV file
      </h2>
      <div class="field">
        <label for="csv-file">CSV file (a header row, then one row per run)</label>
        <input id="csv-file" name="csv" type="file" accept=".csv,text/csv" required />
      </div>
      <button type="submit" class="primary" disabled={progress !== undefined}>
        Upload and start a batch
      </button>
      {progress && (
        <label class="progress">
          Uploading <progress max={progress.total} value={progress.sent} />{' '}
          {Math.round((progress.sent / Math.max(1, progress.total)) * 100)}%
        </label>
      )}
      <div aria-live="polite" class="full">
        {done && <p>{done}</p>}
        {error !== undefined && <ErrorBox error={error} title="The upload failed" />}
      </div>
    </form>
  );
}

function RowErrors({ batch }: { batch: QueueBatch }) {
  const pages = useCursorPages();
  const { cursor } = pages;
  const state = useApi(
    () =>
      unwrap(
        api.GET('/api/queues/{queueId}/batches/{batchId}/row-errors', {
          params: { path: { queueId: batch.queueId, batchId: batch.batchId }, query: { limit: 50, cursor } },
        }),
      ),
    [batch.batchId, cursor],
  );
  return (
    <Show state={state} what="the skipped rows">
      {(page) => {
        if (page.items.length === 0) return <p class="muted">No row of this batch was skipped.</p>;
        const byReason = new Map<BatchRowError['reason'], number>();
        for (const r of page.items) byReason.set(r.reason, (byReason.get(r.reason) ?? 0) + 1);
        return (
          <>
            <p>
              On this page:{' '}
              {[...byReason].map(([reason, n]) => (
                <span key={reason} class="badge">
                  {reason}: {n}
                </span>
              ))}
            </p>
            <table>
              <thead>
                <tr>
                  <th scope="col">Row</th>
                  <th scope="col">Reason</th>
                  <th scope="col">Message</th>
                  <th scope="col">Start of the row</th>
                </tr>
              </thead>
              <tbody>
                {page.items.map((r) => (
                  <tr key={r.rowNumber}>
                    <td>{r.rowNumber}</td>
                    <td>{r.reason}</td>
                    <td class="wrap">{r.message}</td>
                    <td class="wrap">
                      <code>{r.rawExcerpt}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <CursorPager label="Pages of skipped rows" pages={pages} nextCursor={page.nextCursor} />
          </>
        );
      }}
    </Show>
  );
}

function BatchRow({ batch, onCancel }: { batch: QueueBatch; onCancel: (b: QueueBatch) => void }) {
  const [open, setOpen] = useState(false);
  const finished = batch.runsCompleted + batch.runsFailed + batch.runsCancelled;
  // Rows that start a run: the file's data rows less the skipped ones (unknown while validating).
  const runnable = batch.totalRows === null ? null : batch.totalRows - batch.skippedRows;
  return (
    <li class="batch">
      <div class="batch-head">
        <strong>{batch.filename}</strong> <StatusBadge status={batch.status} />
        <span class="muted">
          <Time iso={batch.createdAt} />
        </span>
      </div>
      <label class="progress">
        <span class="visually-hidden">Runs finished of batch {batch.filename}</span>
        <progress max={Math.max(1, runnable ?? 0)} value={finished} />
        <span>
          {finished} of {runnable ?? '…'} rows finished ({batch.runsCompleted} complete, {batch.runsFailed} failed,{' '}
          {batch.runsRunning} running, {batch.runsPending} waiting, {batch.runsCancelled} cancelled)
        </span>
      </label>
      {batch.skippedRows > 0 && <p>{batch.skippedRows} rows skipped.</p>}
      {batch.failureReason && <p class="wrap">Failed: {batch.failureReason}</p>}
      <div class="actions">
        <button type="button" class="small" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? 'Hide skipped rows' : 'Skipped rows'}
        </button>
        {ACTIVE.has(batch.status) && (
          <button type="button" class="small" onClick={() => onCancel(batch)}>
            Cancel batch
          </button>
        )}
      </div>
      {open && <RowErrors batch={batch} />}
    </li>
  );
}

export function QueueDetailPage({ queueId }: { queueId: string }) {
  const queue = useApi(() => unwrap(api.GET('/v1/queues/{queueId}', { params: { path: { queueId } } })), [queueId]);
  const batches = useApi(
    () => unwrap(api.GET('/v1/queues/{queueId}/batches', { params: { path: { queueId }, query: { limit: 20 } } })),
    [queueId],
  );
  const [cancelling, setCancelling] = useState<QueueBatch>();
  const [error, setError] = useState<unknown>();
  const live = useReloadWhile(batches, (page) => page.items.some((b) => ACTIVE.has(b.status)), POLL_MS);
  return (
    <>
      <PageTitle>{`Queue ${queue.data?.name ?? queueId}`}</PageTitle>
      <p>
        <Link to="/queues">All queues</Link>
      </p>
      <Show state={queue} what="the queue">
        {(q) => (
          <>
            <dl class="facts">
              <dt>Trigger</dt>
              <dd>{q.triggerId}</dd>
              <dt>Concurrency</dt>
              <dd>{q.concurrencyLimit}</dd>
              <dt>State</dt>
              <dd>{q.paused ? 'paused' : 'active'}</dd>
            </dl>
            <Upload queue={q} onBatch={batches.reload} />
          </>
        )}
      </Show>
      <h2>Batches</h2>
      {error !== undefined && <ErrorBox error={error} title="The batch could not be cancelled" />}
      {live && <p class="muted">Updating every {POLL_MS / 1000} s while a batch is under way.</p>}
      <Show state={batches} what="the batches">
        {(page) =>
          page.items.length === 0 ? (
            <Empty title="No batches yet.">
              Upload a CSV file above: each row starts one run of the queue's trigger.
            </Empty>
          ) : (
            <ul class="batches">
              {page.items.map((b) => (
                <BatchRow key={b.batchId} batch={b} onCancel={setCancelling} />
              ))}
            </ul>
          )
        }
      </Show>
      {cancelling && (
        <ConfirmDialog
          title={`Cancel the batch “${cancelling.filename}”?`}
          confirmLabel="Cancel the batch"
          onCancel={() => setCancelling(undefined)}
          onConfirm={async () => {
            const b = cancelling;
            setCancelling(undefined);
            setError(undefined);
            try {
              await unwrap(
                api.POST('/api/queues/{queueId}/batches/{batchId}/cancel', {
                  params: { path: { queueId: b.queueId, batchId: b.batchId } },
                }),
              );
            } catch (err) {
              setError(err);
            }
            batches.reload();
          }}
        >
          <p>Rows still loading are dropped and runs that have not started leave the queue; runs under way finish.</p>
        </ConfirmDialog>
      )}
    </>
  );
}
