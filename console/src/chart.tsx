/**
 * Runs per minute by status, drawn with uPlot (loaded when a chart is first shown, so the first
 * page load does not carry it). The same figures are in a table for screen readers.
 */
import { useEffect, useRef } from 'preact/hooks';
import type uPlot from 'uplot';

export interface Series {
  label: string;
  /** A CSS class whose `color` the series takes (styles.css). */
  colorClass: string;
  values: number[];
}

export function RunsChart({ minutes, series, title }: { minutes: number[]; series: Series[]; title: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    let plot: uPlot | undefined;
    let gone = false;
    void Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([{ default: UPlot }]) => {
      const el = box.current;
      if (gone || !el) return;
      const colorOf = (cls: string) => {
        const probe = document.createElement('span');
        probe.className = cls;
        el.appendChild(probe);
        const c = getComputedStyle(probe).color;
        probe.remove();
        return c;
      };
      plot = new UPlot(
        {
          width: Math.max(300, el.clientWidth),
          height: 220,
          series: [
            {},
            ...series.map((s) => ({
              label: s.label,
              stroke: colorOf(s.colorClass),
              width: 2,
              points: { show: false },
            })),
          ],
          axes: [{}, { label: 'runs / min' }],
          scales: { x: { time: true } },
        },
        [minutes, ...series.map((s) => s.values)],
        el,
      );
    });
    return () => {
      gone = true;
      plot?.destroy();
    };
  }, [minutes[0], JSON.stringify(series.map((s) => s.values))]);
  return (
    <figure class="chart">
      <div ref={box} aria-hidden="true" />
      <figcaption class="visually-hidden">{title}</figcaption>
      <table class="visually-hidden">
        <caption>{title}</caption>
        <thead>
          <tr>
            <th scope="col">Status</th>
            <th scope="col">Runs</th>
          </tr>
        </thead>
        <tbody>
          {series.map((s) => (
            <tr key={s.label}>
              <th scope="row">{s.label}</th>
              <td>{s.values.reduce((a, b) => a + b, 0)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
