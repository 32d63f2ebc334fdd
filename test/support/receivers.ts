// What each receiver documents it takes, as checks a test's local receiver applies to what it is sent: Slack's
// incoming webhooks (text, Block Kit blocks), Microsoft Teams' Workflows webhooks (a message with an Adaptive Card
// attachment) and PagerDuty's Events API v2. Each returns the violations found, none when the payload is valid.

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

/** https://api.slack.com/messaging/webhooks, https://api.slack.com/reference/block-kit/blocks */
export function slackViolations(body: any): string[] {
  const found: string[] = [];
  if (!isString(body?.text)) found.push('text: a non-empty string is required (the notification\'s fallback)');
  if (!Array.isArray(body?.blocks) || body.blocks.length > 50) found.push('blocks: an array of at most 50');
  for (const [i, block] of (body?.blocks ?? []).entries()) {
    if (block.type === 'section') {
      if (!['mrkdwn', 'plain_text'].includes(block.text?.type) || !isString(block.text?.text) || block.text.text.length > 3000) {
        found.push(`blocks[${i}].text: mrkdwn or plain_text of 1-3000 characters`);
      }
    } else if (block.type === 'context') {
      if (!Array.isArray(block.elements) || !block.elements.length || block.elements.length > 10) {
        found.push(`blocks[${i}].elements: 1-10 elements`);
      }
    } else {
      found.push(`blocks[${i}].type: ${block.type} is not a block checked here`);
    }
  }
  return found;
}

/** https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using, adaptivecards.io */
export function teamsViolations(body: any): string[] {
  const found: string[] = [];
  if (body?.type !== 'message') found.push('type: must be message');
  const attachment = body?.attachments?.[0];
  if (!Array.isArray(body?.attachments) || body.attachments.length !== 1) found.push('attachments: exactly one card');
  if (attachment?.contentType !== 'application/vnd.microsoft.card.adaptive') {
    found.push('attachments[0].contentType: application/vnd.microsoft.card.adaptive');
  }
  const card = attachment?.content;
  if (card?.type !== 'AdaptiveCard') found.push('content.type: AdaptiveCard');
  if (!/^1\.[0-5]$/.test(card?.version ?? '')) found.push('content.version: 1.0 to 1.5, as Teams renders');
  if (!Array.isArray(card?.body) || !card.body.length) found.push('content.body: at least one element');
  for (const [i, element] of (card?.body ?? []).entries()) {
    if (element.type === 'TextBlock' && !isString(element.text)) found.push(`body[${i}].text: required`);
    else if (element.type === 'FactSet' && !(element.facts ?? []).every((f: any) => isString(f.title) && isString(f.value))) {
      found.push(`body[${i}].facts: each a title and a value`);
    } else if (!['TextBlock', 'FactSet'].includes(element.type)) found.push(`body[${i}].type: ${element.type}`);
  }
  return found;
}

/** https://developer.pagerduty.com/docs/events-api-v2/trigger-events, .../resolve-events */
export function pagerDutyViolations(body: any): string[] {
  const found: string[] = [];
  if (!isString(body?.routing_key)) found.push('routing_key: required');
  if (!['trigger', 'acknowledge', 'resolve'].includes(body?.event_action)) found.push('event_action: trigger, acknowledge or resolve');
  if (!isString(body?.dedup_key) || body.dedup_key.length > 255) found.push('dedup_key: 1-255 characters');
  if (body?.event_action === 'trigger') {
    const payload = body.payload;
    if (!isString(payload?.summary) || payload.summary.length > 1024) found.push('payload.summary: 1-1024 characters');
    if (!isString(payload?.source)) found.push('payload.source: required');
    if (!['critical', 'error', 'warning', 'info'].includes(payload?.severity)) found.push('payload.severity: critical, error, warning or info');
    if (payload?.timestamp !== undefined && Number.isNaN(Date.parse(payload.timestamp))) found.push('payload.timestamp: ISO 8601');
  }
  return found;
}
