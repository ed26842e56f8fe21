// Counts per clock hour drawn with uPlot (a small canvas chart library): one line per series,
// sized to its container and redrawn when that changes. The numbers also stand in text beside
// each chart (a canvas says nothing to a screen reader).
import uPlot from 'uplot';
import { pageLocale, t } from '../shared/i18n.js';

const HOUR_SECONDS = 3600;

/** Distinct on white and for the common colour-vision deficiencies (Okabe and Ito's palette). */
const COLOURS = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#000000', '#f0e442'];

export interface HourlySeries {
  label: string;
  /** Count by the hour's start (ISO 8601); a missing hour counts 0. */
  counts: Map<string, number>;
  colour?: string;
}

/** The hours from `since` to the current one, as seconds since the epoch. */
function hoursFrom(since: string): number[] {
  const start = Date.parse(since) / 1000;
  const now = Date.now() / 1000;
  const hours: number[] = [];
  for (let hour = start; hour <= now; hour += HOUR_SECONDS) hours.push(hour);
  return hours;
}

/**
 * uPlot's date formats for its axes and legend ("{M}/{D}", "{h}{aa}", a line each) written as the
 * page's language writes those parts (27.11., 14:00) rather than in uPlot's American English.
 */
function localDates(template: string): (date: Date) => string {
  const lines = template.split('\n').map((line) => {
    const options: Intl.DateTimeFormatOptions = {};
    if (/\{YY(YY)?\}/.test(line)) options.year = 'numeric';
    if (/\{MMMM?\}/.test(line)) options.month = 'short';
    else if (/\{MM?\}/.test(line)) options.month = 'numeric';
    if (/\{DD?\}/.test(line)) options.day = 'numeric';
    if (/\{WWWW?\}/.test(line)) options.weekday = 'short';
    // An hour alone is written with its minutes (12:00, not a bare 12, which some languages give).
    if (/\{[hH]{1,2}\}/.test(line)) Object.assign(options, { hour: 'numeric', minute: '2-digit' });
    if (/\{ss\}/.test(line)) options.second = '2-digit';
    if (Object.keys(options).length === 0) return () => line;
    const format = new Intl.DateTimeFormat(pageLocale(), options);
    return (date: Date) => format.format(date);
  });
  return (date) => lines.map((line) => line(date)).join('\n');
}

/** Draws the series into `container` (replacing what was there); answers a function that removes it. */
export function drawHourly(container: HTMLElement, since: string, series: HourlySeries[], unit: string): () => void {
  const hours = hoursFrom(since);
  const data: uPlot.AlignedData = [
    hours,
    ...series.map((one) => hours.map((hour) => one.counts.get(new Date(hour * 1000).toISOString()) ?? 0)),
  ];
  const widthOf = () => Math.max(280, container.clientWidth);
  const plot = new uPlot(
    {
      width: widthOf(),
      height: 260,
      scales: { x: { time: true }, y: { range: (_plot, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] } },
      fmtDate: localDates,
      axes: [{}, { label: unit, size: 56 }],
      series: [
        { label: t('console.chart.hour') },
        ...series.map((one, index) => ({
          label: one.label,
          stroke: one.colour ?? COLOURS[index % COLOURS.length],
          width: 2,
          points: { show: false },
        })),
      ],
      cursor: { drag: { x: false, y: false } },
    },
    data,
    container.appendChild(document.createElement('div')),
  );
  const resize = new ResizeObserver(() => plot.setSize({ width: widthOf(), height: 260 }));
  resize.observe(container);
  return () => {
    resize.disconnect();
    plot.destroy();
    container.replaceChildren();
  };
}
