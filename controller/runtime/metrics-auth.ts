// Who may read /metrics, as controller-runtime's secure metrics decide it: the bearer token is checked with a
// TokenReview, and its user with a SubjectAccessReview for `get` on the non-resource URL, so a ClusterRole granting
// `nonResourceURLs: [/metrics]` (the install's metrics-reader) is what a scraper needs. Answers are remembered for a
// few seconds per token, so a scrape every 15 s costs the apiserver two small requests at most; checks of one token
// at once are made once, and a flood of made-up tokens gets 429 rather than the controller's share of the apiserver.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Permission } from '../api/permissions.ts';
import type { Client } from './client.ts';
import type { KubeObject, ResourceType } from './resources.ts';

/** What checking scrapers asks of the apiserver. */
export const metricsAuthPermissions: Permission[] = [
  { group: 'authentication.k8s.io', resource: 'tokenreviews', verbs: ['create'],
    reason: 'authenticate whoever scrapes /metrics' },
  { group: 'authorization.k8s.io', resource: 'subjectaccessreviews', verbs: ['create'],
    reason: 'authorize whoever scrapes /metrics' },
];

const tokenReviews: ResourceType = { group: 'authentication.k8s.io', version: 'v1', resource: 'tokenreviews',
  kind: 'TokenReview', namespaced: false };
const accessReviews: ResourceType = { group: 'authorization.k8s.io', version: 'v1', resource: 'subjectaccessreviews',
  kind: 'SubjectAccessReview', namespaced: false };

interface UserInfo { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }
type Review<Spec, Status> = KubeObject & { spec: Spec; status?: Status };

export interface Verdict {
  status: 200 | 401 | 403 | 429 | 500;
  /** Why not, for the response body: never the token. */
  reason?: string;
}

const rememberMs = 10_000;
const maxReviewsAtOnce = 8;

export class MetricsAuthorizer {
  private readonly remembered = new Map<string, { verdict: Promise<Verdict>; until: number }>();
  private reviewing = 0;

  constructor(private readonly client: Client, private readonly log: Logger, private readonly path = '/metrics') {}

  check(authorization: string | undefined): Promise<Verdict> {
    const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
    if (!token) return Promise.resolve({ status: 401, reason: 'a bearer token is required' });
    const key = createHash('sha256').update(token).digest('hex');
    const known = this.remembered.get(key);
    if (known && known.until > Date.now()) return known.verdict;
    if (this.reviewing >= maxReviewsAtOnce) return Promise.resolve({ status: 429, reason: 'too many tokens to check at once' });
    for (const [k, entry] of this.remembered) if (entry.until <= Date.now()) this.remembered.delete(k);
    this.reviewing++;
    const verdict = this.review(token).catch((error: Error): Verdict => {
      // The apiserver's words stay in the log: the caller is not known to be anyone yet.
      this.log.warn({ err: error.message }, 'could not check a /metrics token');
      this.remembered.delete(key);
      return { status: 500, reason: 'the token could not be checked' };
    }).finally(() => this.reviewing--);
    this.remembered.set(key, { verdict, until: Date.now() + rememberMs });
    return verdict;
  }

  private async review(token: string): Promise<Verdict> {
    const review = await this.client.create<Review<{ token: string }, { authenticated?: boolean; user?: UserInfo }>>(
      tokenReviews, { metadata: {} as KubeObject['metadata'], spec: { token } });
    const user = review.status?.user;
    if (!review.status?.authenticated || !user) return { status: 401, reason: 'the token was not accepted' };
    const access = await this.client.create<Review<object, { allowed?: boolean }>>(accessReviews, {
      metadata: {} as KubeObject['metadata'],
      spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra,
        nonResourceAttributes: { path: this.path, verb: 'get' } } });
    return access.status?.allowed ? { status: 200 }
      : { status: 403, reason: `${user.username} may not get ${this.path}` };
  }
}
