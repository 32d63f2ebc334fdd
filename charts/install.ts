// Keelson's install: OperatorInstall with the catalog's operators, Keelson's names and its operators' own flags.
import type { Construct } from 'constructs';
import { controllerArgs, keelsonFlags } from '../controller/api/flags.ts';
import { catalog, type CatalogEntry } from '../controller/operators/catalog.ts';
import { imageReference, OperatorInstall, type ControllerSettings } from './operator-install.ts';

export interface KeelsonInstallProps extends ControllerSettings {
  /** Namespace the controller runs in. @default keelson-system */
  namespace?: string;
  /** Operators to run, by catalog name. @default all of them */
  operators?: string[];
  /**
   * PodAlert webhooks go only to these hosts, CIDRs and, with `public`, public addresses.
   * @default public: loopback, private, link-local, NAT64 and in-cluster names are refused
   */
  webhookAllowedDestinations?: string[];
  /** CIDRs PodAlert webhooks never go to either: the cluster's Service and pod ranges when they are public addresses. */
  webhookRefusedDestinations?: string[];
  /** The debug profiles any PodBuggerTool may use. @default general, baseline and restricted */
  podBuggerToolAllowedProfiles?: string[];
  /** PodBuggerTool images must start with one of these prefixes. @default any image */
  podBuggerToolAllowedImages?: string[];
  /** Copy failing containers' log tails into PodAlerts' status and alerts. @default true */
  podAlertLogTails?: boolean;
}

export const controllerName = 'keelson-controller';

export function enabledOperators(operators?: string[]): CatalogEntry[] {
  if (!operators) return [...catalog];
  const unknown = operators.filter((name) => !catalog.some((entry) => entry.name === name));
  if (unknown.length) {
    throw new Error(`unknown operators: ${unknown.join(', ')} (known: ${catalog.map((e) => e.name).join(', ')})`);
  }
  return catalog.filter((entry) => operators.includes(entry.name));
}

export class KeelsonInstall extends OperatorInstall {
  declare readonly operators: CatalogEntry[];

  constructor(scope: Construct, id: string, props: KeelsonInstallProps) {
    const { operators, webhookAllowedDestinations, webhookRefusedDestinations, podBuggerToolAllowedProfiles, podBuggerToolAllowedImages,
      podAlertLogTails, ...settings } = props;
    super(scope, id, { ...settings, name: controllerName, app: 'keelson', namespace: props.namespace ?? 'keelson-system',
      operators: enabledOperators(operators),
      extraArgs: controllerArgs({ webhookAllowedDestinations: webhookAllowedDestinations?.join(','),
        webhookRefusedDestinations, podBuggerToolAllowedProfiles, podBuggerToolAllowedImages,
        podAlertLogTails: podAlertLogTails === false ? 'false' : undefined,
        // PostgreSQL members run their agent from the operator's own image.
        postgresAgentImage: imageReference(props.image, props.imageDigest) }, keelsonFlags) });
  }
}
