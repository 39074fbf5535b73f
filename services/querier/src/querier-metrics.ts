import type { LocalFileCacheStats } from '@floe/storage';
import type { SelfTelemetry } from '@floe/telemetry';

/**
 * The querier's caches as an operator sizes them, read at each collection: the local copies of
 * table files (storage.cache_dir, bounded by storage.cache_max_bytes) and how often a query found
 * its file there rather than downloading it, and the metric point lists kept in memory
 * (querier.series_cache_mb) with the files they answered for.
 */
export function observeQuerierCaches(
  telemetry: SelfTelemetry,
  files: { stats(): LocalFileCacheStats; maxBytes: number },
  lists: () => Record<string, number> | undefined,
): void {
  const m = telemetry.meter;
  const cacheBytes = m.createObservableGauge('file_cache_bytes', { description: 'Bytes of table files this querier keeps in its local cache', unit: 'By' });
  const cacheMax = m.createObservableGauge('file_cache_max_bytes', { description: 'storage.cache_max_bytes: most bytes the local file cache keeps', unit: 'By' });
  const cacheFiles = m.createObservableGauge('file_cache_files', { description: 'Table files in the local cache' });
  const hits = m.createObservableCounter('file_cache_hits', { description: 'Reads of a table file served from the local cache' });
  const downloads = m.createObservableCounter('file_cache_downloads', { description: 'Table files downloaded from the object store into the local cache' });
  const evictions = m.createObservableCounter('file_cache_evictions', { description: 'Table files evicted from the local cache to stay under its limit' });
  const listsBytes = m.createObservableGauge('series_lists_bytes', { description: 'Bytes of metric point lists kept in memory (querier.series_cache_mb)', unit: 'By' });
  const listsMax = m.createObservableGauge('series_lists_max_bytes', { description: 'querier.series_cache_mb in bytes', unit: 'By' });
  const listFiles = m.createObservableCounter('series_lists_files', { description: 'Table files a PromQL read needed, by source: lists (answered from the kept point lists) or read (scanned)' });
  m.addBatchObservableCallback(
    (r) => {
      const s = files.stats();
      r.observe(cacheBytes, s.bytes);
      r.observe(cacheMax, files.maxBytes);
      r.observe(cacheFiles, s.files);
      r.observe(hits, s.hits);
      r.observe(downloads, s.downloads);
      r.observe(evictions, s.evictions);
      const l = lists();
      if (!l) return;
      r.observe(listsBytes, l.kept_bytes ?? 0);
      r.observe(listsMax, l.max_bytes ?? 0);
      r.observe(listFiles, l.files_from_lists ?? 0, { source: 'lists' });
      r.observe(listFiles, l.files_read ?? 0, { source: 'read' });
    },
    [cacheBytes, cacheMax, cacheFiles, hits, downloads, evictions, listsBytes, listsMax, listFiles],
  );
}

/**
 * Queries refused because a data file of their table could not be read (missing from the store,
 * cut short, damaged): each is logged at error level, and a count above zero means a table waits
 * for `floe ops check-tables` and its repair.
 */
export function observeUnreadableFiles(telemetry: SelfTelemetry, refused: () => number): void {
  const counter = telemetry.meter.createObservableCounter('unreadable_data_file_queries', { description: 'Queries refused (503) because a data file of their table is missing or damaged in the store' });
  counter.addCallback((r) => r.observe(refused()));
}
