// Kept for callers of @floe/writer; the definitions live in @floe/iceberg (shared by every service).
export {
  FLOE_CATALOG_NAME as CATALOG_NAME,
  FLOE_WAREHOUSE_PREFIX as WAREHOUSE_PREFIX,
  ensureFloeTable as ensureTable,
  floeNamespace as namespaceOf,
} from '@floe/iceberg';
