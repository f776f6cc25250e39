/**
 * The sidebar's one-second ticker: while a group runs, it redraws what
 * depends on the clock (elapsed times, timelines) in place. Display only: the
 * data comes from the comm's pushes, and a full render each second would
 * disturb the buttons under the pointer.
 */

/** Redraws one part of the sidebar for the time `now` (epoch seconds). */
export type Refresh = (now: number) => void;

export class ElapsedTicker {
  /** Forgets the parts of the previous render (their nodes are gone). */
  clear(): void {
    this._refreshes = [];
  }

  /** Redraws `refresh` at each tick until the next `clear`. */
  add(refresh: Refresh): void {
    this._refreshes.push(refresh);
  }

  /** Ticks each second while `active`; stops otherwise. */
  run(active: boolean): void {
    if (!active) {
      this.stop();
    } else if (this._timer === null) {
      this._timer = window.setInterval(() => this._tick(), 1000);
    }
  }

  stop(): void {
    if (this._timer !== null) {
      window.clearInterval(this._timer);
      this._timer = null;
    }
  }

  private _tick(): void {
    const now = Date.now() / 1000;
    for (const refresh of this._refreshes) {
      refresh(now);
    }
  }

  private _refreshes: Refresh[] = [];
  private _timer: number | null = null;
}
