// Sign-ins (CONTRACT §21): password and code-flow sign-ins per hour over the last 7 days, as a chart
// of those that succeeded, were refused and were throttled.
import { byId } from '../shared/dom.js';
import { t } from '../shared/i18n.js';
import type { ConsoleApi } from './api.js';
import { drawHourly } from './charts.js';
import { count } from './formats.js';

type Outcome = 'succeeded' | 'refused' | 'throttled';

/** Each outcome's line: its name in the legend, its colour, and its count in the summary ("3 refused"). */
const SERIES: { outcome: Outcome; label: () => string; total: (count: number) => string; colour: string }[] = [
  {
    outcome: 'succeeded',
    label: () => t('console.signIns.series.succeeded'),
    total: (total) => t('console.signIns.succeeded', { count: total, total: count(total) }),
    colour: '#009e73',
  },
  {
    outcome: 'refused',
    label: () => t('console.signIns.series.refused'),
    total: (total) => t('console.signIns.refused', { count: total, total: count(total) }),
    colour: '#d55e00',
  },
  {
    outcome: 'throttled',
    label: () => t('console.signIns.series.throttled'),
    total: (total) => t('console.signIns.throttled', { count: total, total: count(total) }),
    colour: '#0072b2',
  },
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
        label: label(),
        colour,
        counts: new Map(stats.rows.map((row) => [row.hour, row[outcome]])),
      })),
      t('console.signIns.unit'),
    );
    const [succeeded, refused, throttled] = SERIES.map(({ outcome, total }) =>
      total(stats.rows.reduce((sum, row) => sum + row[outcome], 0)),
    );
    byId('sign-ins-summary').textContent = t('console.signIns.summary', {
      succeeded: succeeded ?? '',
      refused: refused ?? '',
      throttled: throttled ?? '',
    });
  }

  return { show };
}
