// A webhook message in the shape its receiver documents: generic (the message's own fields, with a `text` that a
// Slack incoming webhook also shows), Slack (text and Block Kit blocks), Microsoft Teams (a message carrying an
// Adaptive Card, as Teams' Workflows webhooks take) and PagerDuty (Events API v2: trigger and resolve under one
// dedup_key, so PagerDuty keeps one incident per alert).
import { clip } from './budget.ts';
import type { PodAlertSpec } from './schema.ts';
import type { Notification } from './webhook.ts';

export type Format = NonNullable<NonNullable<PodAlertSpec['webhook']>['format']>;

export interface MessageContext {
  /** PodAlert or ClusterPodAlert. */
  kind: string;
  /** A PodAlert's namespace; a ClusterPodAlert's messages each carry theirs. */
  namespace?: string;
  /** The PodAlert's name. */
  name: string;
  severity: string;
  /** PagerDuty's routing key, from the Secret the spec names. */
  routingKey?: string;
}

const titles: Record<Notification['event'], string> = { alert: 'Unhealthy', resolved: 'Resolved', repeat: 'Still unhealthy' };

/** What the alert is about: Deployment/web, a pod of its own (Pod/x), or one pod of a workload (Deployment/web/x). */
const subjectOf = (n: Notification) => {
  const owner = n.owner ?? (n.pod ? `Pod/${n.pod}` : 'unknown');
  return n.pod && owner !== `Pod/${n.pod}` ? `${owner}/${n.pod}` : owner;
};

/** The namespace of what the message is about. */
const namespaceOf = (n: Notification, c: MessageContext) => n.namespace ?? c.namespace ?? '';

function generic(n: Notification, c: MessageContext): object {
  const { attempts: _attempts, notBefore: _notBefore, ...fields } = n;
  return { ...fields, podAlert: { kind: c.kind, ...(c.namespace ? { namespace: c.namespace } : {}), name: c.name }, namespace: namespaceOf(n, c) };
}

/** Slack's mrkdwn treats &, < and > as markup. */
const escapeSlack = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function slack(n: Notification, c: MessageContext): object {
  const details = [`namespace ${namespaceOf(n, c)}`, `${c.kind} ${c.name}`, ...(n.reason ? [`reason ${n.reason}`] : []),
    ...(n.since ? [`since ${n.since}`] : [])];
  return { text: escapeSlack(n.text), blocks: [
    { type: 'section', text: { type: 'mrkdwn', text: clip(`*${titles[n.event]}*: ${escapeSlack(n.text)}`, 3000) } },
    { type: 'context', elements: [{ type: 'mrkdwn', text: escapeSlack(details.join(' · ')) }] },
  ] };
}

function teams(n: Notification, c: MessageContext): object {
  const facts = [['Namespace', namespaceOf(n, c)], ['Subject', subjectOf(n)], ['Reason', n.reason],
    ['Pods', n.pods?.toString()], ['Since', n.since], [c.kind, c.name]].filter((f): f is [string, string] => f[1] !== undefined)
    .map(([title, value]) => ({ title, value }));
  return { type: 'message', attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null,
    content: { $schema: 'http://adaptivecards.io/schemas/adaptive-card.json', type: 'AdaptiveCard', version: '1.4',
      body: [{ type: 'TextBlock', text: titles[n.event], weight: 'Bolder', size: 'Medium',
        color: n.event === 'resolved' ? 'Good' : 'Attention' },
      { type: 'TextBlock', text: n.text, wrap: true }, { type: 'FactSet', facts }] } }] };
}

const pagerDutySeverities = ['critical', 'error', 'warning', 'info'];

function pagerDuty(n: Notification, c: MessageContext): object {
  // One key for an alert's trigger, repeats and resolution; another incident of the same workload starts later.
  const source = c.namespace === undefined ? `cluster/${c.name}/${namespaceOf(n, c)}` : `${c.namespace}/${c.name}`;
  const dedupKey = clip(`keelson/${source}/${subjectOf(n)}/${n.since ?? ''}`, 255);
  const base = { routing_key: c.routingKey ?? '', dedup_key: dedupKey };
  if (n.event === 'resolved') return { ...base, event_action: 'resolve' };
  return { ...base, event_action: 'trigger', payload: { summary: clip(n.text, 1024),
    source: `${namespaceOf(n, c)}/${subjectOf(n)}`, severity: pagerDutySeverities.includes(c.severity) ? c.severity : 'warning',
    ...(n.since ? { timestamp: n.since } : {}), component: subjectOf(n), group: namespaceOf(n, c), class: n.reason ?? 'Unhealthy',
    custom_details: { [c.kind === 'PodAlert' ? 'podAlert' : 'clusterPodAlert']: c.name, ...(n.pods !== undefined ? { pods: n.pods } : {}), ...(n.pod ? { pod: n.pod } : {}) } } };
}

export const render: Record<Format, (n: Notification, c: MessageContext) => object> = { generic, slack, teams,
  pagerduty: pagerDuty };
