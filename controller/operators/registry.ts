// The code of every operator in the catalog, under the same names.
import type { Operator } from '../runtime/manager.ts';
import { podAlertOperator } from './podalert/reconcile.ts';
import { podBuggerToolOperator } from './podbuggertool/reconcile.ts';
import { postgresClusterOperator } from './postgrescluster/reconcile.ts';
import { prometheusJmxExporterOperator } from './prometheusjmxexporter/reconcile.ts';
import { tdsetOperator } from './tdset/reconcile.ts';

export const operators: readonly Operator[] = [tdsetOperator, podBuggerToolOperator, podAlertOperator, postgresClusterOperator,
  prometheusJmxExporterOperator];
