// A small LRU map bounded by total weight (entry count by default), for caches of immutable objects.

export class Lru<K, V> {
  readonly #map = new Map<K, { value: V; weight: number }>();
  readonly #maxWeight: number;
  readonly #weigh: (value: V) => number;
  #weight = 0;

  constructor(maxWeight: number, weigh: (value: V) => number = () => 1) {
    this.#maxWeight = maxWeight;
    this.#weigh = weigh;
  }

  get size(): number {
    return this.#map.size;
  }

  get(key: K): V | undefined {
    const hit = this.#map.get(key);
    if (!hit) return undefined;
    this.#map.delete(key);
    this.#map.set(key, hit);
    return hit.value;
  }

  set(key: K, value: V): void {
    const old = this.#map.get(key);
    if (old) {
      this.#weight -= old.weight;
      this.#map.delete(key);
    }
    const weight = this.#weigh(value);
    if (weight > this.#maxWeight) return; // never cache something bigger than the whole cache
    this.#map.set(key, { value, weight });
    this.#weight += weight;
    for (const [k, v] of this.#map) {
      if (this.#weight <= this.#maxWeight) break;
      this.#map.delete(k);
      this.#weight -= v.weight;
    }
  }

  clear(): void {
    this.#map.clear();
    this.#weight = 0;
  }
}
