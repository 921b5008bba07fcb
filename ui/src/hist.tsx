/**
 * A histogram tool's view: the log2 histogram (all intervals so far, or the last one) as a bar chart, and the
 * latency heat map beside it (one column per interval, one row per log2 bucket, colour = count), both ECharts.
 */
import { BarChart, HeatmapChart } from 'echarts/charts';
import { GridComponent, TooltipComponent, VisualMapComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { SessionData } from './store';

echarts.use([BarChart, HeatmapChart, GridComponent, TooltipComponent, VisualMapComponent, CanvasRenderer]);

interface Bucket {
  low: number;
  high: number;
  count: number;
}
interface Interval {
  time: string;
  unit: string;
  histograms: { disk?: string; buckets: Bucket[] }[];
}

/** Counts by bucket low bound, summed over the interval's histograms (every disk). */
function counts(i: Interval): Map<number, Bucket> {
  const m = new Map<number, Bucket>();
  for (const h of i.histograms)
    for (const b of h.buckets) {
      const low = Number(b.low);
      const old = m.get(low);
      if (old) old.count += Number(b.count);
      else m.set(low, { low, high: Number(b.high), count: Number(b.count) });
    }
  return m;
}

function useChart(): [preact.RefObject<HTMLDivElement | null>, () => echarts.ECharts | null] {
  const ref = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  useEffect(() => {
    if (ref.current) chart.current = echarts.init(ref.current, undefined, { renderer: 'canvas' });
    return () => chart.current?.dispose();
  }, []);
  return [ref, () => chart.current];
}

export function HistView({ data }: { data: SessionData }) {
  const [lastOnly, setLastOnly] = useState(false);
  const [histRef, hist] = useChart();
  const [heatRef, heat] = useChart();
  const intervals = data.intervals as Interval[];
  const per = intervals.map(counts);
  const buckets = new Map<number, Bucket>();
  for (const m of per) for (const b of m.values()) if (!buckets.has(b.low)) buckets.set(b.low, { ...b, count: 0 });
  const ordered = [...buckets.values()].sort((a, b) => a.low - b.low);
  const shown = lastOnly ? per.slice(-1) : per;
  const sums = ordered.map((b) => shown.reduce((a, m) => a + (m.get(b.low)?.count ?? 0), 0));
  const total = sums.reduce((a, b) => a + b, 0);
  const heatTotal = per.reduce((a, m) => a + [...m.values()].reduce((x, b) => x + b.count, 0), 0);
  const unit = intervals[0]?.unit ?? 'usecs';
  const labels = ordered.map((b) => `${b.low}-${b.high}`);
  useEffect(() => {
    hist()?.setOption(
      {
        animation: false,
        tooltip: {},
        grid: { left: 90, right: 20, top: 20, bottom: 40 },
        xAxis: { type: 'value', name: 'count', nameLocation: 'middle', nameGap: 25 },
        yAxis: { type: 'category', data: labels, name: unit },
        series: [{ type: 'bar', data: sums, itemStyle: { color: '#3a6ea5' } }],
      },
      true,
    );
    const cells: [number, number, number][] = [];
    let max = 1;
    per.forEach((m, x) =>
      ordered.forEach((b, y) => {
        const c = m.get(b.low)?.count ?? 0;
        max = Math.max(max, c);
        if (c > 0) cells.push([x, y, c]);
      }),
    );
    heat()?.setOption(
      {
        animation: false,
        tooltip: {},
        grid: { left: 90, right: 20, top: 20, bottom: 80 },
        xAxis: {
          type: 'category',
          data: intervals.map((i) => i.time),
          name: 'time',
          nameLocation: 'middle',
          nameGap: 28,
        },
        yAxis: { type: 'category', data: labels, name: unit },
        visualMap: {
          min: 0,
          max,
          calculable: false,
          orient: 'horizontal',
          left: 'center',
          bottom: 0,
          itemHeight: 80,
          inRange: { color: ['#ffffff', '#ffd27f', '#e34a33', '#7f0000'] },
        },
        series: [{ type: 'heatmap', data: cells }],
      },
      true,
    );
  });
  return (
    <div class="hist-view">
      <p class="status">
        <span id="hist-total" data-total={total}>
          {total} {lastOnly ? 'in the last interval' : `in ${intervals.length} intervals`}
        </span>{' '}
        <label>
          <input
            type="checkbox"
            checked={lastOnly}
            onChange={(e) => setLastOnly((e.target as HTMLInputElement).checked)}
          />{' '}
          last interval only
        </label>
      </p>
      <div class="charts">
        <div class="chart" id="histogram" ref={histRef} />
        <div class="chart" id="heatmap" data-total={heatTotal} data-columns={intervals.length} ref={heatRef} />
      </div>
    </div>
  );
}
