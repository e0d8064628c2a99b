/**
 * Collections: the organisation's datastores, filestores, knowledge bases and vaults, and one
 * collection with its trigger URLs (the key never shown: its last four characters), its items
 * or files with paging, and its delivery log filtered by status, event and item.
 */
import { useState } from 'preact/hooks';
import { api, unwrap } from '../api.ts';
import { Link } from '../router.tsx';
import { Empty, PageTitle, Show, StatusBadge, Time, duration, useApi, CursorPager, useCursorPages } from '../ui.tsx';
import type { CollectionItemSummary, DeliveryStatus } from '../../../generated/openapi/client.ts';

export function CollectionsPage() {
  const state = useApi(() => unwrap(api.GET('/v1/collections', { params: { query: { limit: 200 } } })), []);
  return (
    <>
      <PageTitle>Collections</PageTitle>
      <Show state={state} what="the collections">
        {(page) =>
          page.items.length === 0 ? (
            <Empty title="No collections yet.">
              Create one with <code>switchyard collections create</code> or <code>POST /v1/collections</code>; its
              trigger URLs then start workflows when items change.
            </Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Collection</th>
                  <th scope="col">Type</th>
                  <th scope="col">Items</th>
                  <th scope="col">Trigger URLs</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {page.items.map((c) => (
                  <tr key={c.collectionId}>
                    <td>
                      <Link to={`/collections/${c.collectionId}`}>{c.name}</Link>
                      <div class="muted small-text">{c.collectionId}</div>
                    </td>
                    <td>{c.type}</td>
                    <td>{c.itemCount}</td>
                    <td>{c.triggerUrls.length}</td>
                    <td>
                      <Time iso={c.updatedAt} />
                    </td>
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

function itemLabel(i: CollectionItemSummary): string {
  return i.key ?? i.filename ?? i.itemId;
}

function Items({ collectionId }: { collectionId: string }) {
  const pages = useCursorPages();
  const { cursor } = pages;
  const state = useApi(
    () =>
      unwrap(
        api.GET('/v1/collections/{collectionId}/items', {
          params: { path: { collectionId }, query: { limit: 25, cursor } },
        }),
      ),
    [collectionId, cursor],
  );
  return (
    <Show state={state} what="the items">
      {(page) =>
        page.items.length === 0 ? (
          <Empty title="No items yet.">
            Items are written through the resource endpoints (<code>POST /memory/items</code>,{' '}
            <code>POST /filestorage/items/upload</code>).
          </Empty>
        ) : (
          <>
            <table>
              <thead>
                <tr>
                  <th scope="col">Item</th>
                  <th scope="col">Content</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {page.items.map((i) => (
                  <tr key={i.itemId}>
                    <td>
                      {itemLabel(i)}
                      <div class="muted small-text">{i.itemId}</div>
                    </td>
                    <td class="wrap">
                      {i.isSecret ? (
                        <span class="muted">secret</span>
                      ) : i.filename ? (
                        `${i.mimeType ?? ''} ${i.fileSize ?? 0} bytes`
                      ) : (
                        <code>{JSON.stringify(i.content ?? null).slice(0, 200)}</code>
                      )}
                    </td>
                    <td>
                      <Time iso={i.updatedAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <CursorPager label="Pages of items" pages={pages} nextCursor={page.nextCursor} />
          </>
        )
      }
    </Show>
  );
}

const STATUSES: DeliveryStatus[] = ['pending', 'sent', 'failed', 'dropped'];
const EVENTS = ['onCreate', 'onEdit', 'onDelete'] as const;

function Deliveries({ collectionId }: { collectionId: string }) {
  const [filter, setFilter] = useState<{ status?: DeliveryStatus; event?: (typeof EVENTS)[number]; itemId?: string }>(
    {},
  );
  const pages = useCursorPages();
  const { cursor } = pages;
  const state = useApi(
    () =>
      unwrap(
        api.GET('/v1/collections/{collectionId}/deliveries', {
          params: { path: { collectionId }, query: { ...filter, limit: 25, cursor } },
        }),
      ),
    [collectionId, JSON.stringify(filter), cursor],
  );
  return (
    <>
      <form
        class="filters"
        aria-label="Filter deliveries"
        onSubmit={(e) => {
          e.preventDefault();
          const d = new FormData(e.currentTarget);
          const pick = (k: string) => (String(d.get(k) ?? '') || undefined) as never;
          setFilter({ status: pick('status'), event: pick('event'), itemId: pick('itemId') });
          pages.reset();
          // The same filters again read the log again.
          state.reload();
        }}
      >
        <div class="field">
          <label for="d-status">Status</label>
          <select id="d-status" name="status">
            <option value="">Any status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="d-event">Event</label>
          <select id="d-event" name="event">
            <option value="">Any event</option>
            {EVENTS.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="d-item">Item id</label>
          <input id="d-item" name="itemId" />
        </div>
        <button type="submit" class="primary">
          Apply filters
        </button>
      </form>
      <Show state={state} what="the deliveries">
        {(page) =>
          page.items.length === 0 ? (
            <Empty title="No deliveries match.">
              Deliveries are recorded when an item changes in a collection with trigger URLs; clear the filters to see
              them all.
            </Empty>
          ) : (
            <>
              <table>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Event</th>
                    <th scope="col">Item</th>
                    <th scope="col">Status</th>
                    <th scope="col">Answer</th>
                    <th scope="col">Run</th>
                    <th scope="col">Error</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((d) => (
                    <tr key={`${d.eventId}-${d.url}`}>
                      <td>
                        <Time iso={d.createdAt} />
                      </td>
                      <td>{d.event}</td>
                      <td>{d.itemId}</td>
                      <td>
                        <StatusBadge status={d.status} />
                      </td>
                      <td>
                        {d.httpStatus ?? '—'}{' '}
                        {d.durationMs !== null && <span class="muted">{duration(d.durationMs)}</span>}
                      </td>
                      <td>{d.runId ?? '—'}</td>
                      <td class="wrap">{d.error ?? ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <CursorPager label="Pages of deliveries" pages={pages} nextCursor={page.nextCursor} />
            </>
          )
        }
      </Show>
    </>
  );
}

export function CollectionDetailPage({ collectionId }: { collectionId: string }) {
  const state = useApi(
    () => unwrap(api.GET('/v1/collections/{collectionId}', { params: { path: { collectionId } } })),
    [collectionId],
  );
  return (
    <>
      <PageTitle>{`Collection ${state.data?.name ?? collectionId}`}</PageTitle>
      <p>
        <Link to="/collections">All collections</Link>
      </p>
      <Show state={state} what="the collection">
        {(c) => (
          <>
            <dl class="facts">
              <dt>Type</dt>
              <dd>{c.type}</dd>
              <dt>Items</dt>
              <dd>{c.itemCount}</dd>
              <dt>Description</dt>
              <dd>{c.description || '—'}</dd>
            </dl>
            <h2>Trigger URLs</h2>
            {c.triggerUrls.length === 0 ? (
              <Empty title="No collection-level trigger URLs.">
                Set them with <code>PATCH /datacollection/{c.collectionId}</code> (<code>triggerUrls</code>) to call a
                workflow trigger on onCreate, onEdit or onDelete.
              </Empty>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Event</th>
                    <th scope="col">URL</th>
                    <th scope="col">Level</th>
                    <th scope="col">Key ends with</th>
                  </tr>
                </thead>
                <tbody>
                  {c.triggerUrls.map((t, i) => (
                    <tr key={i}>
                      <td>{t.event}</td>
                      <td class="wrap">
                        <code>{t.url}</code>
                      </td>
                      <td>{t.triggerLevel}</td>
                      <td>
                        <code>…{t.apiKeyLast4}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </Show>
      <h2>Items</h2>
      <Items collectionId={collectionId} />
      <h2>Delivery log</h2>
      <Deliveries collectionId={collectionId} />
    </>
  );
}
