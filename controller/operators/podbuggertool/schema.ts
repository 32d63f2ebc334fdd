import { dns1123Label, labelSelector, statusOf } from '../../api/common.ts';
import { defineKind, type ResourceOf } from '../../api/kind.ts';
import { array, enumeration, integer, object, string, type Infer } from '../../api/schema.ts';

/** "key=value", as the original PodBuggerTool took it. */
export const labelPattern = '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?' +
  '[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?=(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$';

export const debugProfiles = ['general', 'baseline', 'restricted', 'netadmin', 'sysadmin'] as const;
/** Profiles that give the debug container power over the node or its network: an admin grants them by name. */
export const privilegedProfiles = ['netadmin', 'sysadmin'] as const;

const stringList = (description: string) =>
  array(string({ description: 'One argument.', maxLength: 4096 }), { description, maxItems: 64 });

export const podBuggerToolSpec = object({
  label: string({ description: 'Pods carrying this label get the debug container, as "key=value". Exactly one of ' +
    'label and selector.', maxLength: 380, pattern: labelPattern }),
  selector: labelSelector('Pods matching this selector get the debug container. Exactly one of label and selector.'),
  image: string({ description: 'The debug container image, e.g. busybox:1.36.', required: true, minLength: 1,
    maxLength: 1024 }),
  targetContainerName: string({ description: 'The container whose process namespace the debug container shares; ' +
    'default the pod\'s first container.', maxLength: 63, pattern: dns1123Label }),
  command: stringList('The debug container\'s command; default the image\'s entrypoint (or sh when it has none).'),
  args: stringList('Arguments to the command.'),
  profile: enumeration(debugProfiles, { description: 'The security profile, as kubectl debug --profile: general, baseline, ' +
    'restricted, netadmin or sysadmin.', default: 'general' }),
}, {
  description: 'Which pods get a debug container, and what it runs.',
  required: true,
  rules: [{ rule: 'has(self.label) != has(self.selector)', message: 'exactly one of spec.label and spec.selector ' +
    'must be set' }],
});

export const podBuggerToolStatus = statusOf({
  selector: string({ description: 'The pod selector in force, in kubectl\'s label-selector syntax.' }),
  matchedPods: integer({ description: 'Pods that match the selector now.', minimum: 0 }),
  injectedPods: integer({ description: 'Matching pods that carry this PodBuggerTool\'s debug container.', minimum: 0 }),
  recentInjections: array(object({
    pod: string({ description: 'The pod\'s name.', required: true }),
    container: string({ description: 'The debug container\'s name.', required: true }),
    time: string({ description: 'When it was added.', format: 'date-time', required: true }),
  }, { description: 'One debug container added.' }), { description: 'The latest injections, newest first.', maxItems: 20 }),
});

export const PodBuggerTool = defineKind({
  kind: 'PodBuggerTool',
  shortNames: ['pbt'],
  description: 'PodBuggerTool adds a debug ephemeral container, sharing the target container\'s process ' +
    'namespace, to every running pod in its namespace that matches its label or selector.',
  spec: podBuggerToolSpec,
  status: podBuggerToolStatus,
  printerColumns: [
    { name: 'Selector', type: 'string', jsonPath: '.status.selector', description: 'The pods it applies to.' },
    { name: 'Image', type: 'string', jsonPath: '.spec.image', description: 'The debug image.' },
    { name: 'Matched', type: 'integer', jsonPath: '.status.matchedPods', description: 'Pods matching now.' },
    { name: 'Injected', type: 'integer', jsonPath: '.status.injectedPods', description: 'Pods with the container.' },
  ],
  requesterRights: [
    { group: '', resource: 'pods', subresource: 'ephemeralcontainers', verb: ['update', 'patch'],
      because: 'the controller adds debug containers to its pods for you' },
    { group: 'keelson.dev', resource: 'debugprofiles', verb: 'use', name: 'object.spec.profile',
      when: `has(object.spec.profile) && object.spec.profile in [${privilegedProfiles.map((p) => `'${p}'`).join(', ')}]`,
      because: 'a privileged debug profile is granted by an admin, by name' },
  ],
});

export type PodBuggerToolSpec = Infer<typeof podBuggerToolSpec>;
export type PodBuggerToolStatus = Infer<typeof podBuggerToolStatus>;
export type PodBuggerToolResource = ResourceOf<typeof PodBuggerTool>;
