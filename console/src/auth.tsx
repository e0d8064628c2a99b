/**
 * Sign-in with an API credential: the form of the sign-in page, and the dialog that opens over
 * the current page when the token has expired (src/api.ts), whose success sends again the
 * calls that were refused.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { onSignInRequested, signIn, signInHint, signInPending, signOut } from './api.ts';
import { ErrorBox } from './ui.tsx';

export function SignInForm({ idPrefix, onDone }: { idPrefix: string; onDone?: () => void }) {
  const hint = signInHint();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const id = (n: string) => `${idPrefix}-${n}`;
  return (
    <form
      class="signin"
      onSubmit={async (e) => {
        e.preventDefault();
        const form = e.currentTarget;
        const fields = new FormData(form);
        setBusy(true);
        setError(undefined);
        try {
          await signIn(
            String(fields.get('clientId')).trim(),
            String(fields.get('clientSecret')),
            String(fields.get('orgId')).trim(),
          );
          // The secret leaves the page with the request that used it.
          (form.elements.namedItem('clientSecret') as HTMLInputElement).value = '';
          onDone?.();
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      <div class="field">
        <label for={id('client')}>Client id</label>
        <input id={id('client')} name="clientId" required autocomplete="username" defaultValue={hint?.clientId ?? ''} />
      </div>
      <div class="field">
        <label for={id('secret')}>Client secret</label>
        <input id={id('secret')} name="clientSecret" type="password" required autocomplete="off" />
      </div>
      <div class="field">
        <label for={id('org')}>Organisation id</label>
        <input
          id={id('org')}
          name="orgId"
          required
          defaultValue={hint?.orgId ?? ''}
          aria-describedby={id('org-help')}
        />
        <p class="help" id={id('org-help')}>
          Shown with the credential when it was created (<code>orgId</code>).
        </p>
      </div>
      {error !== undefined && <ErrorBox error={error} title="Sign-in failed" />}
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}

export function SignInPage() {
  return (
    <main id="main" class="signin-page">
      <h1>Sign in to Switchyard</h1>
      <p>
        Use an API credential (client id and secret, created with <code>switchyard credentials create</code> or under
        Settings). The secret is exchanged for a runtime token valid for an hour and is not kept by the console.
      </p>
      <SignInForm idPrefix="signin" />
    </main>
  );
}

/** The dialog over the current page when a call needs a new token. */
export function SignInDialog() {
  const ref = useRef<HTMLDialogElement>(null);
  const [open, setOpen] = useState(signInPending());
  useEffect(() => onSignInRequested(() => setOpen(true)), []);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} aria-labelledby="reauth-title" onCancel={(e) => e.preventDefault()} class="reauth">
      <h2 id="reauth-title">Your session has expired</h2>
      <p>Sign in again to continue; this page stays as it is and the refused request is sent again.</p>
      {open && <SignInForm idPrefix="reauth" onDone={() => setOpen(false)} />}
      <button type="button" class="link" onClick={() => (setOpen(false), signOut())}>
        Sign out instead
      </button>
    </dialog>
  );
}
