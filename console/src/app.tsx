/** The console's shell: sign-in, the navigation, and the page of the current route. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { currentSession, onSessionChange, signOut } from './api.ts';
import { SignInDialog, SignInPage } from './auth.tsx';
import { Link, match, useLocation } from './router.tsx';
import { Empty, PageTitle } from './ui.tsx';
import { OverviewPage } from './pages/overview.tsx';
import { RunsPage } from './pages/runs.tsx';
import { RunDetailPage } from './pages/run-detail.tsx';
import { WorkflowsPage } from './pages/workflows.tsx';
import { WorkflowDetailPage } from './pages/workflow-detail.tsx';
import { WorkflowEditPage, WorkflowNewPage } from './pages/workflow-edit.tsx';
import { AgentsPage } from './pages/agents.tsx';
import { SettingsPage } from './pages/settings.tsx';
import { GatewayPage } from './pages/gateway.tsx';
import { QueueDetailPage, QueuesPage } from './pages/queues.tsx';
import { CollectionDetailPage, CollectionsPage } from './pages/collections.tsx';
import { BrowserTaskDetailPage, BrowserTasksPage } from './pages/browser-tasks.tsx';

interface Route {
  pattern: string;
  page: (params: Record<string, string>, query: URLSearchParams) => ComponentChildren;
}

const ROUTES: Route[] = [
  { pattern: '/', page: () => <OverviewPage /> },
  { pattern: '/runs', page: (_, q) => <RunsPage query={q} /> },
  {
    pattern: '/runs/:automationId/:runId',
    page: (p) => <RunDetailPage automationId={p.automationId!} runId={p.runId!} />,
  },
  { pattern: '/workflows', page: () => <WorkflowsPage /> },
  { pattern: '/workflows/new', page: () => <WorkflowNewPage /> },
  { pattern: '/workflows/:automationId/edit', page: (p) => <WorkflowEditPage automationId={p.automationId!} /> },
  { pattern: '/workflows/:automationId', page: (p) => <WorkflowDetailPage automationId={p.automationId!} /> },
  { pattern: '/queues', page: () => <QueuesPage /> },
  { pattern: '/queues/:queueId', page: (p) => <QueueDetailPage queueId={p.queueId!} /> },
  { pattern: '/collections', page: () => <CollectionsPage /> },
  { pattern: '/collections/:collectionId', page: (p) => <CollectionDetailPage collectionId={p.collectionId!} /> },
  { pattern: '/gateway', page: () => <GatewayPage /> },
  { pattern: '/agents', page: () => <AgentsPage /> },
  { pattern: '/browser-tasks', page: () => <BrowserTasksPage /> },
  { pattern: '/browser-tasks/:sessionId', page: (p) => <BrowserTaskDetailPage sessionId={p.sessionId!} /> },
  { pattern: '/settings', page: () => <SettingsPage /> },
];

const NAV: { to: string; label: string; section: string }[] = [
  { to: '/', label: 'Overview', section: '/' },
  { to: '/runs', label: 'Runs', section: '/runs' },
  { to: '/workflows', label: 'Workflows & triggers', section: '/workflows' },
  { to: '/queues', label: 'Queues', section: '/queues' },
  { to: '/collections', label: 'Collections', section: '/collections' },
  { to: '/gateway', label: 'Gateway', section: '/gateway' },
  { to: '/agents', label: 'Agents', section: '/agents' },
  { to: '/browser-tasks', label: 'Browser tasks', section: '/browser-tasks' },
  { to: '/settings', label: 'Settings', section: '/settings' },
];

function NotFound() {
  return (
    <>
      <PageTitle>Page not found</PageTitle>
      <Empty title="There is no console page at this address.">
        Choose a page in the navigation, or go to the <Link to="/">overview</Link>.
      </Empty>
    </>
  );
}

function useSignedIn(): boolean {
  const [signedIn, setSignedIn] = useState(currentSession() !== undefined);
  useEffect(() => onSessionChange(() => setSignedIn(currentSession() !== undefined)), []);
  return signedIn;
}

export function App() {
  const signedIn = useSignedIn();
  const { path, query } = useLocation();
  // Once signed in, the shell stays mounted through token renewals: an expired token opens the
  // dialog over the page instead of leaving it.
  const [entered, setEntered] = useState(signedIn);
  useEffect(() => {
    if (signedIn) setEntered(true);
  }, [signedIn]);
  if (!entered) return <SignInPage />;
  let content: ComponentChildren = <NotFound />;
  for (const r of ROUTES) {
    const params = match(r.pattern, path);
    if (params) {
      content = r.page(params, query);
      break;
    }
  }
  const section = NAV.filter((n) => (n.section === '/' ? path === '/' : path.startsWith(n.section)))[0]?.section;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Switchyard</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.to}>
                <Link to={n.to} aria-current={section === n.section ? 'page' : undefined}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span class="muted">{currentSession()?.orgId ?? ''}</span>
          <button type="button" class="small" onClick={() => (signOut(), setEntered(false))}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" key={path}>
        {content}
      </main>
      <SignInDialog />
    </>
  );
}
