// keelson/charts: the constructs that synthesize Keelson's install, and the generic ones beneath them that install
// an operator of your own built on keelson/runtime.
export { CustomResourceDefinitions, KeelsonCrds, type KeelsonCrdsProps } from './crds.ts';
export { controllerName, controllersOf, defaultControllers, enabledOperators, KeelsonInstall, metricsReaderName,
  podControllerName, type KeelsonInstallProps } from './install.ts';
export { defaultResources, healthPort, imageReference, metricsPort, OperatorInstall, ruleSections, secureMetricsPort,
  type ControllerSettings, type InstalledOperator, type OperatorInstallProps, type ResourceSettings } from './operator-install.ts';
export { KeelsonMonitoring, type KeelsonMonitoringProps } from './monitoring.ts';
export { policyRules, type PolicyRule } from './rbac.ts';
