// SMS (CONTRACT §15, §21): enrolment SMS per country per hour over the last 7 days as a chart,
// each country's budget this hour, and the paused countries with Resume.
import { byId, el, whileBusy } from '../shared/dom.js';
import { t } from '../shared/i18n.js';
import { say, warn } from '../shared/notices.js';
import type { ConsoleApi } from './api.js';
import { drawHourly } from './charts.js';
import { clockTime, count } from './formats.js';

interface CountryRow {
  country: string;
  sent_this_hour: number;
  hourly_limit: number;
  pause_threshold: number;
  paused_until: string | null;
  resumed_at: string | null;
}

export function createSmsView(
  api: ConsoleApi,
  hooks: { refused(error: unknown): boolean; describe(error: unknown): string },
) {
  const chart = byId('sms-chart');
  const table = byId('sms-countries');
  let removeChart = () => {};

  async function show(): Promise<void> {
    const [stats, { countries }] = await Promise.all([
      api.call<{ since: string; rows: { hour: string; country: string; sends: number }[] }>('GET', 'stats/sms'),
      api.call<{ countries: CountryRow[] }>('GET', 'sms/countries'),
    ]);
    const byCountry = new Map<string, Map<string, number>>();
    for (const row of stats.rows) {
      const counts = byCountry.get(row.country) ?? new Map<string, number>();
      counts.set(row.hour, row.sends);
      byCountry.set(row.country, counts);
    }
    const totals = [...byCountry].map(([country, counts]) => ({
      country,
      counts,
      total: [...counts.values()].reduce((sum, sends) => sum + sends, 0),
    }));
    totals.sort((a, b) => b.total - a.total);
    removeChart();
    removeChart = drawHourly(
      chart,
      stats.since,
      totals.map((one) => ({ label: one.country, counts: one.counts })),
      t('console.sms.unit'),
    );
    const total = totals.reduce((sum, one) => sum + one.total, 0);
    byId('sms-summary').textContent =
      totals.length === 0
        ? t('console.sms.noSends')
        : t('console.sms.summary', {
            count: total,
            total: count(total),
            countries: totals.map((one) => `${one.country} ${count(one.total)}`).join(', '),
          });
    renderCountries(countries);
  }

  function renderCountries(countries: CountryRow[]): void {
    table.replaceChildren(
      ...countries.map((row) => {
        const state = el('td', {});
        if (row.paused_until) {
          const resume = el(
            'button',
            { type: 'button', class: 'secondary' },
            t('console.sms.resume'),
            el('span', { class: 'visually-hidden' }, ` ${row.country}`),
          );
          resume.addEventListener('click', () => void whileBusy(table, () => resumeCountry(row.country)));
          state.append(`${t('console.sms.pausedUntil', { time: clockTime(new Date(row.paused_until)) })} `, resume);
        } else {
          state.append(
            row.resumed_at
              ? t('console.sms.resumedAt', { time: clockTime(new Date(row.resumed_at)) })
              : t('console.sms.sending'),
          );
        }
        return el(
          'tr',
          {},
          el('th', { scope: 'row' }, row.country),
          el('td', { class: 'number' }, `${count(row.sent_this_hour)} / ${count(row.hourly_limit)}`),
          el('td', { class: 'number' }, count(row.pause_threshold)),
          state,
        );
      }),
    );
    byId('sms-none').hidden = countries.length > 0;
  }

  async function resumeCountry(country: string): Promise<void> {
    try {
      await api.call('POST', `sms/countries/${country}/resume`);
    } catch (error) {
      if (!hooks.refused(error)) warn(hooks.describe(error), table);
      return;
    }
    await show();
    say(t('console.sms.resumed', { country }), table);
    byId('sms-title').focus();
  }

  return { show };
}
