/**
 * Settings: API credentials (client id and secret, for tokens and this console), trigger API
 * keys and the rotation of the token signing key. A new secret is shown once, right after it is
 * created; revoking and rotating ask for confirmation, and the API's refusals (409 for the last
 * active secret, 403 for a rotation by a non-administrator organisation) are shown as answered.
 */
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { api, unwrap } from '../api.ts';
import { ConfirmDialog } from '../confirm.tsx';
import { CopyButton, Empty, ErrorBox, PageTitle, Show, Time, useApi } from '../ui.tsx';
import type { SigningKeyRotation } from '../../../generated/openapi/client.ts';

interface Row {
  id: string;
  label: string;
  /** What identifies the secret without showing it: the client id, or the key's last characters. */
  shown: string;
  createdAt: string;
  revokedAt: string | null;
}

interface Created {
  label: string;
  fields: { name: string; value: string; secret?: boolean }[];
}

interface Kind {
  id: string;
  title: string;
  noun: string;
  identifier: string;
  empty: string;
  list: () => Promise<Row[]>;
  create: (label: string) => Promise<Created>;
  revoke: (id: string) => Promise<unknown>;
  revokeWarning: string;
}

const KINDS: Kind[] = [
  {
    id: 'credentials',
    title: 'API credentials',
    noun: 'credential',
    identifier: 'Client id',
    empty: 'Create one to sign in here or to get runtime tokens from /oauth/token.',
    list: async () =>
      (await unwrap(api.GET('/v1/credentials', { params: { query: { limit: 200 } } }))).items.map((c) => ({
        id: c.id,
        label: c.label,
        shown: c.clientId,
        createdAt: c.createdAt,
        revokedAt: c.revokedAt,
      })),
    create: async (label) => {
      const c = await unwrap(api.POST('/v1/credentials', { body: { label } }));
      return {
        label: c.label,
        fields: [
          { name: 'Client id', value: c.clientId },
          { name: 'Client secret', value: c.clientSecret, secret: true },
          { name: 'Organisation id', value: c.orgId },
        ],
      };
    },
    revoke: (id) => unwrap(api.DELETE('/v1/credentials/{credentialId}', { params: { path: { credentialId: id } } })),
    revokeWarning:
      'Its secret stops getting runtime tokens at once, and tokens it already has stop being accepted. The last active credential cannot be revoked.',
  },
  {
    id: 'api-keys',
    title: 'Trigger API keys',
    noun: 'API key',
    identifier: 'Ends with',
    empty: 'Create one to call triggers (X-API-KEY header or webhook URL) and to read run results.',
    list: async () =>
      (await unwrap(api.GET('/v1/api-keys', { params: { query: { limit: 200 } } }))).items.map((k) => ({
        id: k.id,
        label: k.label,
        shown: `…${k.hint}`,
        createdAt: k.createdAt,
        revokedAt: k.revokedAt,
      })),
    create: async (label) => {
      const k = await unwrap(api.POST('/v1/api-keys', { body: { label } }));
      return { label: k.label, fields: [{ name: 'API key', value: k.apiKey, secret: true }] };
    },
    revoke: (id) => unwrap(api.DELETE('/v1/api-keys/{keyId}', { params: { path: { keyId: id } } })),
    revokeWarning:
      'Trigger calls and webhook URLs with this key answer 401 from the next request on. The last active key cannot be revoked while a trigger is enabled.',
  },
];

function ShownOnce({ created, noun, onDone }: { created: Created; noun: string; onDone: () => void }) {
  return (
    <div class="shown-once" role="status">
      <p>
        <strong>
          New {noun} “{created.label}”: copy the secret now. It is shown only this once.
        </strong>
      </p>
      <dl class="facts">
        {created.fields.map((f) => (
          <Fragment key={f.name}>
            <dt>{f.name}</dt>
            <dd>
              <code>{f.value}</code> <CopyButton text={f.value} label={`Copy the ${f.name.toLowerCase()}`} />
            </dd>
          </Fragment>
        ))}
      </dl>
      <button type="button" onClick={onDone}>
        Done, hide it
      </button>
    </div>
  );
}

function Section({ kind }: { kind: Kind }) {
  const rows = useApi(kind.list, []);
  const [created, setCreated] = useState<Created>();
  const [error, setError] = useState<unknown>();
  const [confirming, setConfirming] = useState<Row>();
  const headingId = `${kind.id}-title`;
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>{kind.title}</h2>
      <form
        class="inline-form"
        onSubmit={async (e) => {
          e.preventDefault();
          const form = e.currentTarget;
          const label = String(new FormData(form).get('label') ?? '').trim();
          setError(undefined);
          try {
            setCreated(await kind.create(label));
            form.reset();
            rows.reload();
          } catch (err) {
            setError(err);
          }
        }}
      >
        <div class="field">
          <label for={`${kind.id}-label`}>Label of a new {kind.noun}</label>
          <input id={`${kind.id}-label`} name="label" required maxLength={200} />
        </div>
        <button type="submit" class="primary">
          Create {kind.noun}
        </button>
      </form>
      {created && <ShownOnce created={created} noun={kind.noun} onDone={() => setCreated(undefined)} />}
      {error !== undefined && <ErrorBox error={error} />}
      <Show state={rows} what={kind.title.toLowerCase()}>
        {(list) =>
          list.length === 0 ? (
            <Empty title={`No ${kind.noun}s yet.`}>{kind.empty}</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Label</th>
                  <th scope="col">{kind.identifier}</th>
                  <th scope="col">Created</th>
                  <th scope="col">State</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.map((r) => (
                  <tr key={r.id}>
                    <td>{r.label}</td>
                    <td>
                      <code>{r.shown}</code>
                    </td>
                    <td>
                      <Time iso={r.createdAt} />
                    </td>
                    <td>
                      {r.revokedAt ? (
                        <>
                          revoked <Time iso={r.revokedAt} />
                        </>
                      ) : (
                        'active'
                      )}
                    </td>
                    <td>
                      {!r.revokedAt && (
                        <button
                          type="button"
                          class="small"
                          aria-label={`Revoke ${kind.noun} ${r.label}`}
                          onClick={() => setConfirming(r)}
                        >
                          Revoke
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
      {confirming && (
        <ConfirmDialog
          title={`Revoke the ${kind.noun} “${confirming.label}”?`}
          confirmLabel={`Revoke ${kind.noun}`}
          onCancel={() => setConfirming(undefined)}
          onConfirm={async () => {
            const row = confirming;
            setConfirming(undefined);
            setError(undefined);
            try {
              await kind.revoke(row.id);
            } catch (err) {
              setError(err);
            }
            rows.reload();
          }}
        >
          <p>{kind.revokeWarning}</p>
        </ConfirmDialog>
      )}
    </section>
  );
}

/**
 * Signing-key rotation (rotateSigningKey): only organisations the installation names in
 * ADMIN_ORG_IDS may rotate; the API's 403 for the others is shown as it answers it.
 */
function SigningKeys() {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [rotated, setRotated] = useState<SigningKeyRotation>();
  const [error, setError] = useState<unknown>();
  const rotate = async () => {
    setAsking(false);
    setBusy(true);
    setError(undefined);
    try {
      setRotated(await unwrap(api.POST('/v1/signing-keys/rotate')));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="signing-title">
      <h2 id="signing-title">Token signing keys</h2>
      <p>
        Rotating makes a new key sign runtime tokens. Tokens signed by the old key stay valid until they expire. The
        installation's administrator organisations (<code>ADMIN_ORG_IDS</code>) may rotate here; on the service's
        machine <code>switchyard signing-keys:rotate</code> does the same.
      </p>
      <button type="button" class="danger" disabled={busy} onClick={() => setAsking(true)}>
        Rotate the signing key
      </button>
      {asking && (
        <ConfirmDialog
          title="Rotate the token signing key?"
          confirmLabel="Rotate"
          onConfirm={() => void rotate()}
          onCancel={() => setAsking(false)}
        >
          <p>
            New tokens will be signed by a new key. Tokens already issued keep working until they expire; nothing else
            changes.
          </p>
        </ConfirmDialog>
      )}
      {rotated && (
        <p role="status">
          Rotated: the new key is <code>{rotated.kid}</code>. Tokens of the previous key stay valid until{' '}
          <Time iso={rotated.retiredKeysValidUntil} />.
        </p>
      )}
      {error !== undefined && <ErrorBox error={error} title="The key was not rotated" />}
    </section>
  );
}

export function SettingsPage() {
  return (
    <>
      <PageTitle>Settings</PageTitle>
      {KINDS.map((k) => (
        <Section key={k.id} kind={k} />
      ))}
      <SigningKeys />
    </>
  );
}
