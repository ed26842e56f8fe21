// Sign-ins (CONTRACT §21): password and code-flow sign-ins per hour over the last 7 days, as a chart
// of those that succeeded, were refused and were throttled.
import { byId } from '../shared/dom.js';
import type { ConsoleApi } from './api.js';
import { count, drawHourly } from './charts.js';

type Outcome = 'succeeded' | 'refused' | 'throttled';

const SERIES: { outcome: Outcome; label: string; colour: string }[] = [
  { outcome: 'succeeded', label: 'Succeeded', colour: '#009e73' },
  { outcome: 'refused', label: 'Refused', colour: '#d55e00' },
  { outcome: 'throttled', label: 'Throttled', colour: '#0072b2' },
];

export function createSignInsView(api: ConsoleApi) {
  let removeChart = () => {};

  async function show(): Promise<void> {
    const stats = await api.call<{ since: string; rows: ({ hour: string } & Record<Outcome, number>)[] }>(
      'GET',
      'stats/sign-ins',
    );
    removeChart();
    removeChart = drawHourly(
      byId('sign-ins-chart'),
      stats.since,
      SERIES.map(({ outcome, label, colour }) => ({
        label,
        colour,
        counts: new Map(stats.rows.map((row) => [row.hour, row[outcome]])),
      })),
      'sign-ins',
    );
    const total = (outcome: Outcome) => count(stats.rows.reduce((sum, row) => sum + row[outcome], 0));
    byId('sign-ins-summary').textContent =
      `In the last 7 days: ${total('succeeded')} succeeded, ${total('refused')} refused, ${total('throttled')} throttled.`;
  }

  return { show };
}
