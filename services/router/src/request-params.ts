// Query API parameters, shared by the Loki- and Prometheus-compatible APIs.

/** Parameters from the query string and, for POST, a form body (later values do not override). */
export class RequestParams {
  readonly #all: URLSearchParams;

  constructor(url: string, body?: unknown) {
    const q = url.indexOf('?');
    this.#all = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
    if (body instanceof URLSearchParams) for (const [k, v] of body) this.#all.append(k, v);
  }

  get(name: string): string | undefined {
    const v = this.#all.get(name);
    return v === null || v === '' ? undefined : v;
  }

  getAll(name: string): string[] {
    return this.#all.getAll(name).filter((v) => v !== '');
  }
}
