// Structured JSON logs (pino): one object per line with level, time and message; controllers add controller, kind,
// namespace, name and reconcileId. Secrets never go in: callers log names, not values.
import { pino, type Logger } from 'pino';
import type { LogLevel } from '../api/flags.ts';

export function createLogger(level: LogLevel, destination: NodeJS.WritableStream = process.stdout): Logger {
  return pino({
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  }, destination as pino.DestinationStream);
}
